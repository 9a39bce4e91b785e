"""The calibrated parameters: what no datasheet gives, fitted on the calibration subset of the
validation data and frozen in the shipped files (fredfab.sim.engines.calibration fits them;
tests/sim/engines/test_calibration.py checks that the frozen values are that fit).

* ``kernel_efficiency``: the share of peak a full tile of an A100 GEMM sustains (each GEMM
  timed by its shape: fredfab.model.training.gemm); frozen in
  model/training/data/npus/a100.toml; fitted on SC'21 Table 1, row 1.7B.
* ``nvlink_fraction``, ``infiniband_fraction``: the share of NVLink's 300 GB/s and of an HDR
  rail's 25 GB/s a long transfer sustains; frozen in data/fabrics/dgx-a100.toml ([dims]
  achievable_fraction); fitted on the NCCL curve's 8 GiB point, one node and two nodes.
* ``fixed_cost``, ``ll_fraction``: NCCL's per-collective launch and synchronisation cost and
  the bandwidth share of its LL protocol with all its channels running (LL's
  ``bandwidth_fraction``; a message smaller than the channels' thresholds runs on fewer of
  them, each carrying 1/channels of it: fredfab.model.system.channel_rule); frozen in the
  same file ([collectives]); fitted on the NCCL curve's sizes from 8 B to 512 KiB.
* ``software_2022_factor``: the 2022 software's (Korthikanti et al.: newer Megatron-LM,
  PyTorch, cuBLAS) GEMM efficiency over the 2021 software's (``kernel_efficiency``); frozen
  in data/megatron-korthikanti-2022.toml ([system] kernel_efficiency_factor) and applied to
  that dataset only; fitted on its 22B row.

Everything else is a datasheet number, a publication's, or NCCL's own cost model.
"""

from __future__ import annotations

import copy
import tomllib
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from fredfab.model.system.units import US
from fredfab.model.training.config import CALIBRATED_NPU, NPU
from fredfab.model.validation.suite import DATA_DIR

#: The cluster file whose link and library parameters are calibrated.
CLUSTER_FILE = DATA_DIR / "fabrics" / "dgx-a100.toml"
#: The dataset whose software factor is calibrated (its [system] kernel_efficiency_factor).
SOFTWARE_FILE = DATA_DIR / "megatron-korthikanti-2022.toml"
#: The protocol whose bandwidth share (with all its channels) is calibrated.
CALIBRATED_PROTOCOL = "LL"
#: Significant digits the frozen values keep.
DIGITS = 4


@dataclass(frozen=True)
class Calibration:
    kernel_efficiency: float
    nvlink_fraction: float
    infiniband_fraction: float
    fixed_cost: float  # seconds
    ll_fraction: float
    software_2022_factor: float

    def to_dict(self) -> dict[str, float]:
        d = asdict(self)
        d["fixed_cost_us"] = d.pop("fixed_cost") / US
        return d

    def rounded(self) -> Calibration:
        """The values as the files keep them (DIGITS significant digits)."""
        return Calibration(**{k: _sig(v) for k, v in asdict(self).items()})

    def npu(self, base: NPU, software_factor: bool = False) -> NPU:
        """``base`` with the calibrated kernel efficiency (times the 2022 software's factor
        for a dataset that carries one)."""
        eff = self.kernel_efficiency * (self.software_2022_factor if software_factor else 1.0)
        if not 0 < eff <= 1:
            raise ValueError(f"kernel efficiency {eff:.4g} is outside (0, 1]")
        return replace(base, efficiency=eff)

    def cluster(self, data: dict[str, Any]) -> dict[str, Any]:
        """A parsed cluster file (CLUSTER_FILE's form) with these link and library values."""
        out = copy.deepcopy(data)
        out["dims"]["achievable_fraction"] = [self.nvlink_fraction, self.infiniband_fraction]
        out["collectives"]["fixed_cost_us"] = self.fixed_cost / US
        for p in out["collectives"]["protocols"]:
            if p["name"] == CALIBRATED_PROTOCOL:
                p["bandwidth_fraction"] = self.ll_fraction
        return out


#: The parameters and what they are (the table of the module docstring, for the output).
PARAMETERS = {
    "kernel_efficiency": "share of peak a full tile of an A100 GEMM sustains (2021 software)",
    "nvlink_fraction": "share of NVLink's rate a long transfer sustains",
    "infiniband_fraction": "share of an HDR InfiniBand rail's rate a long transfer sustains",
    "fixed_cost": "per-collective launch and synchronisation cost of NCCL",
    "ll_fraction": "bandwidth share of NCCL's LL protocol on all its channels",
    "software_2022_factor": "GEMM efficiency of the 2022 Megatron-LM software over the 2021 one",
}


def frozen() -> Calibration:
    """The values the shipped files hold."""
    cluster = tomllib.loads(CLUSTER_FILE.read_text())
    npu = tomllib.loads(Path(CALIBRATED_NPU).read_text())
    ll = next(p for p in cluster["collectives"]["protocols"] if p["name"] == CALIBRATED_PROTOCOL)
    nvl, ib = cluster["dims"]["achievable_fraction"]
    software = tomllib.loads(SOFTWARE_FILE.read_text())["system"]["kernel_efficiency_factor"]
    return Calibration(
        kernel_efficiency=float(npu["kernel_efficiency"]),
        nvlink_fraction=float(nvl),
        infiniband_fraction=float(ib),
        fixed_cost=float(cluster["collectives"]["fixed_cost_us"]) * US,
        ll_fraction=float(ll["bandwidth_fraction"]),
        software_2022_factor=float(software),
    )


def _sig(v: float) -> float:
    return float(f"{v:.{DIGITS}g}")
