"""NPUs as data: the shipped NPU files (model/training/data/npus/*.toml) and a user's own.

Schema ``fred-npu/1``; datasheet numbers stay datasheet numbers, the one number no datasheet
gives (the kernel efficiency) is calibrated on measured training runs and says on which::

    schema = "fred-npu/1"
    name = "a100"
    description = "NVIDIA A100 SXM4 80GB"
    peak_TFLOPS = 312            # dense FP16/BF16 tensor rate, TFLOP/s (10^12)
    hbm_GBps = 2039              # HBM bandwidth, GB/s (10^9)
    hbm_GB = 80                  # HBM capacity, GB (10^9)
    kernel_efficiency = 0.71     # share of peak a GEMM (a full tile, with [gemm]) sustains
    hbm_efficiency = 0.88        # optional: share of hbm_GBps a streaming kernel sustains
                                 # (measured; absent = 1, the datasheet rate)
    [gemm]                       # optional: the GEMM library's tiling (fredfab.model.training.gemm)
    sms = 108                    # streaming multiprocessors
    tiles = ["256x128", "128x256", "128x128"]  # output tile shapes Tm x Tn it chooses among
    tile_k = 64                  # K block of a tile's main loop
    l2_GBps = 7219               # optional: L2 bandwidth the SMs share (GB/s; absent = no bound)
    [sources]                    # where each number comes from (free text, required)
    peak_TFLOPS = "NVIDIA A100 datasheet ..."
    ...
    gemm = "..."                 # required with [gemm]

A field ``kernel_efficiency = "a100"`` (or ``hbm_efficiency = "a100"``) takes the value of
another shipped NPU and says so (an NPU that was never measured, such as the paper's wafer
NPU). A [gemm] table (or its absence) is the NPU's own.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from fredfab.model.errors import InputError
from fredfab.model.system.units import GB
from fredfab.model.toml_fields import Table, read_toml
from fredfab.model.training.config import NPU
from fredfab.model.training.gemm import GemmModel

SCHEMA = "fred-npu/1"
NPU_DIR = Path(__file__).with_name("data") / "npus"
_FIELDS = ("peak_TFLOPS", "hbm_GBps", "hbm_GB", "kernel_efficiency")
_TOP = {"schema", "name", "description", "sources", "gemm", "hbm_efficiency", *_FIELDS}
_GEMM = {"sms", "tiles", "tile_k", "l2_GBps"}
#: Most SMs a [gemm] table may give (an H100 has 132; a typo fails at once).
MAX_SMS = 4096
#: Most TFLOP/s, GB/s or GB an NPU file may give: a thousand times an H100's, so a typo
#: (or 1e300, which would overflow to infinity in FLOP/s) fails at once, naming its key.
MAX_RATE = 1e6


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
    sources = t.table("sources", (*_FIELDS, "gemm", "hbm_efficiency"))
    for k in _FIELDS:
        sources.string(k, nonempty=True)
    gemm = None
    if "gemm" in data:
        gemm = _gemm(t.table("gemm", _GEMM))
        sources.string("gemm", nonempty=True)
    efficiency = _share(t, source, "kernel_efficiency", "efficiency")
    hbm_efficiency = 1.0
    if "hbm_efficiency" in data:
        hbm_efficiency = _share(t, source, "hbm_efficiency", "hbm_efficiency")
        sources.string("hbm_efficiency", nonempty=True)
    return NPU(
        peak_flops=t.number("peak_TFLOPS", lo=0, lo_open=True, hi=MAX_RATE) * 1e12,
        efficiency=efficiency,
        hbm_bandwidth=t.number("hbm_GBps", lo=0, lo_open=True, hi=MAX_RATE) * GB,
        hbm_bytes=t.number("hbm_GB", lo=0, lo_open=True, hi=MAX_RATE) * GB,
        name=t.string("name", nonempty=True),
        gemm=gemm,
        hbm_efficiency=hbm_efficiency,
    )


def _share(t: Table, source: str, key: str, attr: str) -> float:
    """A share of a rate in (0, 1], or the name of the shipped NPU it is carried from (only
    a shipped one: a file naming a file could name itself, or one that names it back)."""
    v = t.data.get(key)
    if isinstance(v, str):
        if v.lower() not in shipped_npus():
            raise NPUError(
                f"{source}: '{key}' must be a share in (0, 1] or the name of a shipped NPU "
                f"({', '.join(shipped_npus())}) to carry it from, got {v!r}"
            )
        return getattr(load_npu(v.lower()), attr)
    return t.number(key, lo=0, hi=1, lo_open=True)


def _gemm(g: Table) -> GemmModel:
    tiles = []
    for i, text in enumerate(g.data.get("tiles") or [None]):
        m = re.fullmatch(r"\s*(\d+)\s*x\s*(\d+)\s*", text) if isinstance(text, str) else None
        if m is None or min(int(m[1]), int(m[2])) < 1:
            raise NPUError(
                f'{g.where}: tiles[{i}] must be a tile shape such as "256x128" (Tm x Tn), '
                f"got {text!r}"
            )
        tiles.append((int(m[1]), int(m[2])))
    return GemmModel(
        sms=g.integer("sms", lo=1, hi=MAX_SMS),
        tiles=tuple(tiles),
        tile_k=g.integer("tile_k", lo=1),
        l2_bandwidth=g.number("l2_GBps", 0.0, lo=0) * GB,
    )
