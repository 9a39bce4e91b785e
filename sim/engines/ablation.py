"""Each fix of the compute model undone alone: what it does to the checked iteration times.

A variant changes the NPU of the training datasets (its GEMM tiling, its HBM share) or drops
the 2022 software's factor; the calibration's compute parameters (kernel efficiency, software
factor) are then fitted again on their calibration points, as the protocol fits them
(fredfab.sim.engines.calibration.fit_compute), the links and library kept frozen; and the
checked training points are estimated with the result. ``fred validate --ablations`` prints
the table (docs/validation.md, "The model fixes and their effect").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from fredfab.model.training.config import NPU
from fredfab.model.training.npu_files import load_npu
from fredfab.model.validation.calibration import Calibration, frozen
from fredfab.model.validation.metrics import Summary, summarise
from fredfab.model.validation.suite import Dataset
from fredfab.sim.engines.calibration import CalibrationError, fit_compute
from fredfab.sim.engines.validation import evaluate


@dataclass(frozen=True)
class Variant:
    name: str
    npu: Callable[[NPU], NPU]
    #: False: the 2022 rows run at the 2021 efficiency (factor 1, not fitted).
    software_factor: bool = True


def _no_l2(n: NPU) -> NPU:
    return replace(n, gemm=replace(n.gemm, l2_bandwidth=0.0)) if n.gemm else n


VARIANTS: tuple[Variant, ...] = (
    Variant("as shipped", lambda n: n),
    Variant("no GEMM shapes (every GEMM at the efficiency)", lambda n: replace(n, gemm=None)),
    Variant("HBM at the datasheet rate", lambda n: replace(n, hbm_efficiency=1.0)),
    Variant("no software factor (2022 rows at the 2021 efficiency)", lambda n: n, False),
    Variant("no L2 bound on the tiles", _no_l2),
    Variant(
        "none of the four (the model before them)",
        lambda n: replace(n, gemm=None, hbm_efficiency=1.0),
        False,
    ),
)


@dataclass(frozen=True)
class AblationRow:
    variant: str
    calibration: Calibration
    #: Per training dataset, and "all" (the goal's iteration set): the checked points.
    checked: dict[str, Summary]

    def to_dict(self) -> dict:
        return {
            "variant": self.variant,
            "kernel_efficiency": self.calibration.kernel_efficiency,
            "software_2022_factor": self.calibration.software_2022_factor,
            "checked": {k: s.to_dict() for k, s in self.checked.items()},
        }


def ablate(datasets: list[Dataset], variants: Sequence[Variant] = VARIANTS) -> list[AblationRow]:
    """One row per variant over the training datasets of ``datasets`` (which share one NPU)."""
    training = [d for d in datasets if d.kind == "training"]
    npus = {d.npu for d in training}
    if len(npus) != 1:
        raise CalibrationError(
            f"the variants modify one NPU; the training datasets name {sorted(npus) or 'none'}"
        )
    base = load_npu(npus.pop())
    rows = []
    for v in variants:
        npu = v.npu(base)
        cal = fit_compute(datasets, frozen(), npu)
        if not v.software_factor:
            cal = replace(cal, software_2022_factor=1.0)
        per: dict[str, tuple[list[float], list[float]]] = {}
        for d in training:
            for p in d.points:
                if p.calibration:
                    continue
                e = evaluate(d, p, cal, npu).error
                for key in (d.name, "all"):
                    errs, precs = per.setdefault(key, ([], []))
                    errs.append(e)
                    precs.append(p.precision)
        order = [*(d.name for d in training if d.name in per), "all"]
        rows.append(AblationRow(v.name, cal, {k: summarise(*per[k]) for k in order if k in per}))
    return rows
