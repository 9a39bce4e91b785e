"""The validation suite: every measured point of fredfab.model.validation's data estimated by
the same models the wafer study uses, and the errors.

    from fredfab.sim.engines.validation import validate
    res = validate()                 # the shipped datasets, the frozen calibration
    res.summary(calibration=False)   # the points that were not fitted
    res.to_dict()

Training points run ``estimate`` (fredfab.sim.engines.training) on the dataset's cluster
(its fabric file with the point's node count) and NPU; collective points run the network
simulator and the fabric's collective library (Fabric.library). Both with a Calibration:
by default the frozen one, the values the shipped files hold.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fredfab.model.system import CollectiveRequest, Fabric
from fredfab.model.system.loader import fabric_from_dict
from fredfab.model.toml_fields import read_toml
from fredfab.model.training.config import NPU
from fredfab.model.training.npu_files import load_npu
from fredfab.model.training.workload import Workload, workload_from_dict
from fredfab.model.validation.calibration import CLUSTER_FILE, Calibration, frozen
from fredfab.model.validation.metrics import GOAL_MIN_BYTES, Summary, error, summarise
from fredfab.model.validation.suite import Dataset, Point, ValidationDataError, load_suite
from fredfab.sim.engines.system import simulate
from fredfab.sim.engines.training import estimate


@dataclass(frozen=True)
class PointResult:
    point: Point
    estimate: float  # seconds
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def error(self) -> float:
        return error(self.estimate, self.point.measured)

    @property
    def in_goal(self) -> bool:
        """Whether the goal covers this point: not calibration, and for collectives at
        least GOAL_MIN_BYTES."""
        p = self.point
        return not p.calibration and (p.kind != "collective" or p.run["size"] >= GOAL_MIN_BYTES)

    def to_dict(self) -> dict:
        p = self.point
        return {
            "dataset": p.dataset,
            "name": p.name,
            "kind": p.kind,
            "estimate": self.estimate,
            "measured": p.measured,
            "error": self.error,
            "precision": p.precision,
            "calibration": p.calibration,
            "fits": list(p.fits),
            "in_goal": self.in_goal,
            "source": p.source,
            "published": p.run["value"],
            "detail": dict(self.detail),
        }


@dataclass(frozen=True)
class ValidationResult:
    datasets: tuple[Dataset, ...]
    points: tuple[PointResult, ...]
    calibration: Calibration

    def select(
        self, dataset: str | None = None, calibration: bool | None = None, goal: bool = False
    ) -> list[PointResult]:
        return [
            r
            for r in self.points
            if (dataset is None or r.point.dataset == dataset)
            and (calibration is None or r.point.calibration == calibration)
            and (not goal or r.in_goal)
        ]

    def summary(self, **kw: Any) -> Summary:
        rs = self.select(**kw)
        return summarise([r.error for r in rs], [r.point.precision for r in rs])

    def goal(self) -> dict[str, Summary]:
        """The goal's two sets: iteration times, and the collective curve (>= 1 MiB)."""
        return {
            kind: summarise(
                [r.error for r in rs],
                [r.point.precision for r in rs],
            )
            for kind in ("training", "collective")
            for rs in [[r for r in self.select(goal=True) if r.point.kind == kind]]
        }

    def to_dict(self) -> dict:
        return {
            "calibration": self.calibration.to_dict(),
            "datasets": [
                {
                    "name": d.name,
                    "kind": d.kind,
                    "description": d.description,
                    "source": d.source,
                    "file": str(d.file),
                    "calibration": self.summary(dataset=d.name, calibration=True).to_dict(),
                    "checked": self.summary(dataset=d.name, calibration=False).to_dict(),
                }
                for d in self.datasets
            ],
            "goal": {k: s.to_dict() for k, s in self.goal().items()},
            "points": [r.to_dict() for r in self.points],
        }


def validate(
    paths: list[str | Path] | None = None,
    calibration: Calibration | None = None,
    datasets: list[Dataset] | None = None,
) -> ValidationResult:
    """Every point of the datasets (default: the shipped ones) with ``calibration``
    (default: the frozen values)."""
    ds = datasets if datasets is not None else load_suite(paths)
    cal = calibration or frozen()
    out = [evaluate(d, p, cal) for d in ds for p in d.points]
    return ValidationResult(tuple(ds), tuple(out), cal)


def evaluate(
    dataset: Dataset, point: Point, cal: Calibration, npu: NPU | None = None
) -> PointResult:
    """One point's estimate; ``npu`` replaces the dataset's NPU (its efficiency still the
    calibration's), for variants of the compute model (fredfab.sim.engines.ablation)."""
    if point.kind == "collective":
        return _collective(dataset, point, cal)
    return _training(dataset, point, cal, npu)


# ---------------------------------------------------------------------- systems
def cluster(dataset: Dataset, nodes: int, cal: Calibration) -> Fabric:
    """The dataset's fabric file with ``nodes`` nodes (the last dimension; one node drops
    it), and the calibrated values where the file is the calibrated cluster."""
    # The fabric depends on neither.
    links = replace(cal, kernel_efficiency=1.0, software_2022_factor=1.0)
    return _cluster(str(dataset.fabric.resolve()), nodes, links)


@functools.lru_cache(maxsize=64)
def _cluster(path: str, nodes: int, cal: Calibration) -> Fabric:
    data = read_toml(Path(path), ValidationDataError, "the fabric")
    if Path(path) == CLUSTER_FILE.resolve():
        data = cal.cluster(data)
    dims = data["dims"]
    if nodes == 1:
        for k, v in list(dims.items()):
            dims[k] = v[:-1]
    else:
        dims["npus_count"] = [*dims["npus_count"][:-1], nodes]
    return fabric_from_dict(data, source=path)


def workload(point: Point) -> Workload:
    r = point.run
    return workload_from_dict(
        {
            "schema": "fred-workload/1",
            "name": f"{point.dataset}-{point.name}",
            "transformer": {
                k: r[k] for k in ("layers", "hidden", "heads", "seq", "vocab", "flash_attention")
            },
        },
        source=point.key,
    )


def _training(
    dataset: Dataset, point: Point, cal: Calibration, npu: NPU | None = None
) -> PointResult:
    r = point.run
    t, p = r["tensor"], r["pipeline"]
    dp = r["gpus"] // (t * p)
    per_replica = r["batch"] // dp
    nodes = max(1, r["gpus"] // dataset.gpus_per_node)
    e = estimate(
        workload(point),
        cluster(dataset, nodes, cal),
        f"MP{t}-DP{dp}-PP{p}",
        npu=cal.npu(npu or load_npu(dataset.npu), dataset.kernel_efficiency_factor is not None),
        ignore_memory=True,
        execution="weight-stationary",
        samples_per_replica=per_replica,
        microbatches=per_replica // r["microbatch"],
        recompute=r["recompute"],
        placement=r["placement"],
        zero_stage=r["zero_stage"],
        virtual_stages=r.get("virtual_stages", 1),
        sequence_parallel=r["sequence_parallel"],
        dp_overlap=r["dp_overlap"],
    )
    detail = {
        "strategy": e.strategy,
        "breakdown_s": dict(e.breakdown),
        "fits_memory": e.fits,
        "memory_GB": e.memory.total / 1e9 if e.memory else None,
    }
    return PointResult(point, float(e.time), detail)


def _collective(dataset: Dataset, point: Point, cal: Calibration) -> PointResult:
    r = point.run
    fab = cluster(dataset, r["nodes"], cal)
    size = float(r["size"])
    net = network_time(fab, dataset.op, r["ranks"], size)
    lib = fab.library
    detail = {
        "network_s": net,
        "protocol": lib.best(dataset.op, r["ranks"], net, size).name,
        "library": lib.name,
    }
    return PointResult(point, lib.time(dataset.op, r["ranks"], net, size), detail)


def network_time(fab: Fabric, op: str, ranks: int, size: float) -> float:
    """The network simulator's time of one ``op`` over NPUs 0 .. ranks-1 (default choice of
    algorithm, default chunks), before the collective library's costs."""
    return simulate(fab, [CollectiveRequest(op, tuple(range(ranks)), size)]).time
