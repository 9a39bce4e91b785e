"""NPUs as data: the shipped NPU files (model/training/data/npus/*.toml) and a user's own.

Schema ``fred-npu/1``; datasheet numbers stay datasheet numbers, the one number no datasheet
gives (the kernel efficiency) is calibrated on measured training runs and says on which::

    schema = "fred-npu/1"
    name = "a100"
    description = "NVIDIA A100 SXM4 80GB"
    peak_TFLOPS = 312            # dense FP16/BF16 tensor rate, TFLOP/s (10^12)
    hbm_GBps = 2039              # HBM bandwidth, GB/s (10^9)
    hbm_GB = 80                  # HBM capacity, GB (10^9)
    kernel_efficiency = 0.71     # share of peak a GEMM sustains (config.NPU)
    [sources]                    # where each number comes from (free text, required)
    peak_TFLOPS = "NVIDIA A100 datasheet ..."
    ...

A field ``kernel_efficiency = "a100"`` takes the calibrated value of another shipped NPU and
says so (an NPU that was never measured, such as the paper's wafer NPU).
"""

from __future__ import annotations

import functools
from pathlib import Path

from fredfab.model.errors import InputError
from fredfab.model.system.units import GB
from fredfab.model.toml_fields import Table, read_toml
from fredfab.model.training.config import NPU

SCHEMA = "fred-npu/1"
NPU_DIR = Path(__file__).with_name("data") / "npus"
_FIELDS = ("peak_TFLOPS", "hbm_GBps", "hbm_GB", "kernel_efficiency")
_TOP = {"schema", "name", "description", "sources", *_FIELDS}


class NPUError(InputError):
    """An NPU file that is malformed."""


def shipped_npus() -> list[str]:
    return sorted(p.stem for p in NPU_DIR.glob("*.toml"))


def load_npu(spec: str | Path) -> NPU:
    """A shipped NPU by name (``a100``, ``h100``, ``wafer``) or an NPU TOML file."""
    return _load(str(spec))


@functools.lru_cache(maxsize=64)
def _load(spec: str) -> NPU:
    shipped = NPU_DIR / f"{spec.lower()}.toml"
    path = shipped if shipped.is_file() else Path(spec)
    if not path.is_file():
        raise NPUError(
            f"NPU {spec!r} is neither a shipped NPU ({', '.join(shipped_npus())}) nor a TOML file"
        )
    return npu_from_dict(read_toml(path, NPUError, "the NPU"), str(path))


def npu_from_dict(data: dict, source: str = "<dict>") -> NPU:
    t = Table.read(data, source, _TOP, NPUError)
    if data.get("schema") != SCHEMA:
        raise NPUError(f"{source}: 'schema' must be {SCHEMA!r}, got {data.get('schema')!r}")
    sources = t.table("sources", _FIELDS)
    for k in _FIELDS:
        sources.string(k, nonempty=True)
    eff = data.get("kernel_efficiency")
    if isinstance(eff, str):
        if eff.lower() == Path(source).stem.lower():
            raise NPUError(f"{source}: 'kernel_efficiency' names the file itself")
        efficiency = load_npu(eff).efficiency
    else:
        efficiency = t.number("kernel_efficiency", lo=0, hi=1, lo_open=True)
    return NPU(
        peak_flops=t.number("peak_TFLOPS", lo=0, lo_open=True) * 1e12,
        efficiency=efficiency,
        hbm_bandwidth=t.number("hbm_GBps", lo=0, lo_open=True) * GB,
        hbm_bytes=t.number("hbm_GB", lo=0, lo_open=True) * GB,
        name=t.string("name", nonempty=True),
    )
