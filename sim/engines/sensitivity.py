"""How FRED's advantage over the mesh moves with one setting: compute throughput, efficiency,
sequence length, samples per replica or link bandwidth.

    from fredfab.sim.engines.sensitivity import sensitivity
    res = sensitivity("gpt3-175b", "tflops")              # default values of VARIABLES
    res.speedup(res.points[0], "fred-d"), res.comm_bound_from("mesh-5x4")

For each value the workload is compared on every fabric (fredfab.sim.engines.training.compare,
same strategy and settings throughout) and each fabric's speedup over the first fabric (the
mesh by default) and its reduction of exposed communication against it are recorded. A fabric
is *communication-bound* at a value when its exposed communication (bubble apart, see
Estimate.exposed) is at least its compute time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fredfab.model.errors import InputError
from fredfab.model.system import Fabric, load_fabric
from fredfab.model.system.dims import Dims
from fredfab.model.system.fabric import DIMS
from fredfab.model.system.topologies import dims_fabric
from fredfab.model.training.config import NPU
from fredfab.model.training.workload import SCHEMA, Workload, workload_from_dict
from fredfab.model.training.workload_files import load_workload
from fredfab.sim.engines.training import DEFAULT_FABRICS, CompareResult, Estimate, compare


@dataclass(frozen=True)
class Variable:
    """A setting ``fred sensitivity --vary`` can sweep."""

    name: str
    label: str  # axis label
    help: str
    #: Default values, each an assumption whose source is given in ``help``.
    defaults: tuple[float, ...]
    bounds: tuple[float, float]  # inclusive; checked where the values enter
    integer: bool = False
    log: bool = True  # plotted on a log axis


VARIABLES: dict[str, Variable] = {
    v.name: v
    for v in (
        Variable(
            "tflops",
            "NPU peak compute (dense FP16 TFLOP/s)",
            "peak dense FP16 TFLOP/s of the NPU. Defaults: NVIDIA V100 125, A100 312, H100 989 "
            "(the model's default), B200 2250 (its datasheet's 4.5 PFLOP/s with sparsity, "
            "halved), then 4500, 9000 and 18000 as what-if doublings",
            (125.0, 312.0, 989.0, 2250.0, 4500.0, 9000.0, 18000.0),
            (1.0, 1e6),
        ),
        Variable(
            "efficiency",
            "NPU compute efficiency (fraction of peak)",
            "fraction of peak the kernels sustain; defaults 0.2 to 0.8 in steps of 0.1 around "
            "the model's 0.63 (calibrated on Megatron-LM's A100 runs, docs/validation.md)",
            (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8),
            (0.01, 1.0),
            log=False,
        ),
        Variable(
            "seq",
            "sequence length (tokens)",
            "sequence length of a transformer workload; defaults the powers of two 512 to 8192 "
            "around the shipped 1024 (Turing-NLG) and 2048 (GPT-3, Megatron 1T)",
            (512.0, 1024.0, 2048.0, 4096.0, 8192.0),
            (1.0, 65536.0),
            integer=True,
        ),
        Variable(
            "samples",
            "samples per DP replica",
            "samples per DP replica per iteration (minibatch = DP x this); defaults 8 to 128 "
            "by doublings, spanning the paper's 16 (per-fabric comparisons) and 40 (sweeps)",
            (8.0, 16.0, 32.0, 64.0, 128.0),
            (1.0, 2.0**20),
            integer=True,
        ),
        Variable(
            "link-bw",
            "fabric link bandwidth (x the shipped fabric's)",
            "multiplier of every fabric link's bandwidth (NPU-NPU, NPU-switch, switch-switch; "
            "the I/O controllers' 128 GB/s links stay, they are set by off-wafer memory); "
            "defaults 0.25 to 4 by doublings",
            (0.25, 0.5, 1.0, 2.0, 4.0),
            (0.01, 100.0),
        ),
    )
}
#: At most this many values per run (each is one compare over every fabric); the CLI's
#: bound (fredfab.sim.cli.arguments.MAX_SENSITIVITY_VALUES) is the same.
MAX_VALUES = 32


def check_values(name: str, values: Iterable[float]) -> tuple[float, ...]:
    """``values`` for variable ``name``: within its bounds, whole where it counts, sorted and
    without repeats. Raises ValueError saying what was wrong and what is allowed."""
    if name not in VARIABLES:
        raise InputError(f"cannot vary {name!r}; choose one of {', '.join(VARIABLES)}")
    var = VARIABLES[name]
    vals = sorted(set(float(v) for v in values))
    if not vals:
        raise InputError(f"--vary {name}: give at least one value")
    if len(vals) > MAX_VALUES:
        raise InputError(f"--vary {name}: {len(vals)} values; at most {MAX_VALUES}")
    lo, hi = var.bounds
    for v in vals:
        if not lo <= v <= hi:
            raise InputError(f"--vary {name}: value {v:.15g} is out of range {lo:.15g}..{hi:.15g}")
        if var.integer and v != int(v):
            raise InputError(f"--vary {name}: value {v:.15g} must be a whole number")
    return tuple(vals)


def scaled_fabric(fab: Fabric, factor: float) -> Fabric:
    """``fab`` with every link's bandwidth times ``factor``, except links to I/O controllers
    (an ASTRA-sim topology: every dimension's bandwidth, which its links must match)."""
    if fab.routing == DIMS:
        dims = Dims(tuple(replace(d, bandwidth=d.bandwidth * factor) for d in fab.dims.dims))
        return dims_fabric(dims, name=fab.name, description=fab.description)
    io = set(fab.ios)
    links = [
        lk if lk.src in io or lk.dst in io else replace(lk, bandwidth=lk.bandwidth * factor)
        for lk in fab.links
    ]
    return Fabric(
        fab.name,
        fab.nodes,
        links,
        fab.routing,
        in_switch=fab.in_switch,
        switch_m=fab.switch_m,
        timing=fab.timing,
        description=fab.description,
    )


def with_seq(wl: Workload, seq: int) -> Workload:
    """A transformer workload rebuilt from its shape with another sequence length (the
    published parameter count is dropped: it describes the shipped shape)."""
    if "seq" not in wl.shape or "hidden" not in wl.shape:
        raise InputError(f"--vary seq applies to transformer workloads; {wl.name} is not one")
    return workload_from_dict(
        {
            "schema": SCHEMA,
            "name": wl.name,
            "description": wl.description,
            "transformer": {**wl.shape, "seq": int(seq)},
            "training": dict(wl.training),
            "sweep": dict(wl.sweep),
        },
        source=f"{wl.source} (seq {int(seq)})",
    )


@dataclass(frozen=True)
class SensitivityPoint:
    value: float
    result: CompareResult


@dataclass(frozen=True)
class SensitivityResult:
    workload: str
    strategy: str
    variable: str
    points: tuple[SensitivityPoint, ...]

    @property
    def baseline(self) -> str:
        return self.points[0].result.baseline if self.points else ""

    @property
    def fabrics(self) -> list[str]:
        return list(dict.fromkeys(e.fabric for p in self.points for e in p.result.estimates))

    @staticmethod
    def estimate(point: SensitivityPoint, fabric: str) -> Estimate | None:
        return next((e for e in point.result.estimates if e.fabric == fabric), None)

    def speedup(self, point: SensitivityPoint, fabric: str) -> float | None:
        e = self.estimate(point, fabric)
        return point.result.speedup(e) if e is not None else None

    def reduction(self, point: SensitivityPoint, fabric: str) -> float | None:
        """1 - exposed communication / the baseline's (None if either was not estimated or
        the baseline exposes none)."""
        e, b = self.estimate(point, fabric), self.estimate(point, self.baseline)
        if e is None or b is None or not (e.ok and b.ok) or not b.exposed_comm:
            return None
        return 1.0 - e.exposed_comm / b.exposed_comm

    def comm_bound(self, point: SensitivityPoint, fabric: str) -> bool | None:
        """Exposed communication >= compute (None if not estimated)."""
        e = self.estimate(point, fabric)
        if e is None or not e.ok:
            return None
        return e.exposed_comm >= e.breakdown["compute"]

    def comm_bound_from(self, fabric: str) -> float | None:
        """The first value (ascending) at which ``fabric`` is communication-bound."""
        return next((p.value for p in self.points if self.comm_bound(p, fabric)), None)

    def to_dict(self) -> dict[str, Any]:
        fabs = self.fabrics
        return {
            "workload": self.workload,
            "strategy": self.strategy,
            "variable": self.variable,
            "label": VARIABLES[self.variable].label,
            "baseline": self.baseline,
            "comm_bound_from": {f: self.comm_bound_from(f) for f in fabs},
            "points": [
                {
                    "value": p.value,
                    "fabrics": [
                        dict(
                            e.to_dict(),
                            speedup=p.result.speedup(e),
                            exposed_reduction=self.reduction(p, e.fabric),
                            comm_bound=self.comm_bound(p, e.fabric),
                        )
                        for e in p.result.estimates
                    ],
                }
                for p in self.points
            ],
        }


def sensitivity(
    workload: str | Path | Workload,
    variable: str = "tflops",
    values: Sequence[float] | None = None,
    *,
    fabrics: Iterable[str | Path] = DEFAULT_FABRICS,
    strategy: str | None = None,
    npu: NPU | None = None,
    timing_card: str | Path | None = None,
    ignore_memory: bool = False,
    progress: Callable[[int, int], None] | None = None,
    **overrides: Any,
) -> SensitivityResult:
    """Compare ``workload`` on ``fabrics`` at every value of ``variable`` (VARIABLES; default
    values if ``values`` is None), everything else as ``npu``, ``strategy`` and
    ``overrides`` set it (as for compare)."""
    vals = check_values(variable, VARIABLES[variable].defaults if values is None else values)
    wl = workload if isinstance(workload, Workload) else load_workload(workload)
    if variable == "seq":
        with_seq(wl, int(vals[0]))  # a non-transformer fails here, before any work
    base_npu = npu or NPU()
    fabs: list[str | Path | Fabric] = list(fabrics)
    if variable == "link-bw":
        loaded = [load_fabric(f, timing_card=timing_card) for f in fabs]
    points = []
    for k, v in enumerate(vals):
        w, n, fs, over = wl, base_npu, fabs, dict(overrides)
        if variable == "tflops":
            n = replace(base_npu, peak_flops=v * 1e12)
        elif variable == "efficiency":
            n = replace(base_npu, efficiency=v)
        elif variable == "seq":
            w = with_seq(wl, int(v))
        elif variable == "samples":
            over["samples_per_replica"] = int(v)
        else:
            fs = [scaled_fabric(f, v) for f in loaded]
        res = compare(
            w,
            timing_card,
            fabrics=fs,
            strategy=strategy,
            npu=n,
            ignore_memory=ignore_memory,
            **over,
        )
        points.append(SensitivityPoint(v, res))
        if progress:
            progress(k + 1, len(vals))
    st = points[0].result.strategy
    return SensitivityResult(wl.name, st, variable, tuple(points))
