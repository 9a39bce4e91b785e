"""The calibration protocol: fit the parameters no datasheet gives on the calibration subset of
the validation data, and nothing else.

``fit(datasets)`` reads only the points marked ``calibration = true``, each naming what it
``fits`` (fredfab.model.validation.calibration lists the parameters), and solves:

1. NCCL on one node (the cluster's collective library and its NVLink links), alternating
   until the values settle (each step below moves the others only slightly):
   * ``nvlink_fraction``: the NVLink share at which the largest size's estimate equals its
     measurement (bisection; that size's time is almost all bandwidth);
   * ``fixed_cost`` and ``ll_fraction``: the LL share (with all its channels; each size runs
     on the channels the library's rule gives it) minimising the squared relative errors of
     the small sizes (a grid of 0.0025 refined by golden section), each share with the fixed
     cost that is the median of (measured - estimate without it) over those sizes.
2. ``infiniband_fraction``: on two nodes NCCL's rings run one channel per rail, so their bus
   bandwidth is bound by the node's rails: the fraction = measured bus bandwidth
   (2(N-1)/N x size / time, N ranks) / (rails x a rail's rate).
3. ``kernel_efficiency``: the efficiency at which the calibration run's estimated iteration
   time equals its measurement (bisection), with the links and library of steps 1-2.
4. ``software_2022_factor``: likewise, the factor on that efficiency at which the 2022
   software's calibration run matches its measurement.

The network time of a collective on the zero-latency cluster scales exactly as 1 / the link
share (tests/sim/engines/test_calibration.py checks it), so step 1 simulates each size once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.errors import InputError
from fredfab.model.training.config import NPU
from fredfab.model.validation.calibration import PARAMETERS, Calibration
from fredfab.model.validation.suite import Dataset, Point
from fredfab.sim.engines.validation import cluster, evaluate, network_time

#: Where the fit starts; neutral values, so that the result does not depend on the frozen ones.
START = Calibration(
    kernel_efficiency=0.5,
    nvlink_fraction=1.0,
    infiniband_fraction=1.0,
    fixed_cost=0.0,
    ll_fraction=0.5,
    software_2022_factor=1.0,
)
ROUNDS = 8


class CalibrationError(InputError):
    """The calibration subset does not determine every parameter."""


def calibration_points(datasets: list[Dataset]) -> dict[str, list[tuple[Dataset, Point]]]:
    """Per parameter, the calibration points that fit it."""
    out: dict[str, list[tuple[Dataset, Point]]] = {k: [] for k in PARAMETERS}
    for d in datasets:
        for p in d.points:
            if not p.calibration:
                continue
            for k in p.fits:
                if k not in out:
                    raise CalibrationError(
                        f"{p.key}: fits {k!r}, not a parameter; the parameters are "
                        f"{', '.join(PARAMETERS)}"
                    )
                out[k].append((d, p))
    missing = [k for k, v in out.items() if not v]
    if missing:
        raise CalibrationError(f"no calibration point fits {', '.join(missing)}")
    return out


def fit(datasets: list[Dataset]) -> Calibration:
    """The calibrated parameters, from the calibration points of ``datasets`` only."""
    pts = calibration_points(datasets)
    for d, p in pts["software_2022_factor"]:
        if d.kernel_efficiency_factor is None:
            raise CalibrationError(
                f"{p.key}: fits software_2022_factor, but its dataset has no [system] "
                "kernel_efficiency_factor (the factor applies to that dataset's rows only)"
            )
    cal = START
    ((nvl_ds, nvl_pt),) = pts["nvlink_fraction"][:1]
    small = pts["fixed_cost"]
    if {p.key for _, p in small} != {p.key for _, p in pts["ll_fraction"]}:
        raise CalibrationError("fixed_cost and ll_fraction are fitted on the same points")
    # Network times at full link rate, once per point (they scale as 1 / the share).
    full = replace(cal, nvlink_fraction=1.0)
    net = {p.key: _network(d, p, full) for d, p in [*small, (nvl_ds, nvl_pt)]}
    for _ in range(ROUNDS):
        cal = replace(cal, nvlink_fraction=_nvlink(nvl_ds, nvl_pt, cal, net[nvl_pt.key]))
        fixed, ll = _small_sizes(small, cal, net)
        cal = replace(cal, fixed_cost=fixed, ll_fraction=ll)
    cal = replace(cal, infiniband_fraction=_infiniband(*pts["infiniband_fraction"][0]))
    return fit_compute(datasets, cal)


def fit_compute(datasets: list[Dataset], cal: Calibration, npu: NPU | None = None) -> Calibration:
    """Steps 3 and 4: ``cal`` with the kernel efficiency and the software factor fitted on
    their calibration points (the links and library as ``cal`` has them); ``npu`` replaces
    the datasets' NPU (fredfab.sim.engines.ablation's variants)."""
    pts = calibration_points(datasets)
    ds, p = pts["kernel_efficiency"][0]
    cal = replace(cal, kernel_efficiency=_efficiency(ds, p, cal, npu))
    ds, p = pts["software_2022_factor"][0]
    return replace(cal, software_2022_factor=_software_factor(ds, p, cal, npu))


def _network(d: Dataset, p: Point, cal: Calibration) -> float:
    return network_time(cluster(d, p.run["nodes"], cal), d.op, p.run["ranks"], p.run["size"])


def _library_time(d: Dataset, p: Point, cal: Calibration, net_full: float) -> float:
    lib = cluster(d, p.run["nodes"], cal).library
    return lib.time(d.op, p.run["ranks"], net_full / cal.nvlink_fraction, p.run["size"])


def _nvlink(d: Dataset, p: Point, cal: Calibration, net_full: float) -> float:
    def excess(f: float) -> float:
        return _library_time(d, p, replace(cal, nvlink_fraction=f), net_full) - p.measured

    return _bisect(excess, 0.01, 1.0, decreasing=True)


def _small_sizes(
    small: list[tuple[Dataset, Point]], cal: Calibration, net: dict[str, float]
) -> tuple[float, float]:
    def cost(ll: float) -> tuple[float, float]:
        c = replace(cal, fixed_cost=0.0, ll_fraction=ll)
        resid = sorted(p.measured - _library_time(d, p, c, net[p.key]) for d, p in small)
        n = len(resid)
        fixed = max(0.0, (resid[n // 2] + resid[(n - 1) // 2]) / 2)
        c = replace(c, fixed_cost=fixed)
        sse = sum((_library_time(d, p, c, net[p.key]) / p.measured - 1) ** 2 for d, p in small)
        return sse, fixed

    grid = [0.01 + 0.0025 * i for i in range(397)]
    best = min(grid, key=lambda x: cost(x)[0])
    lo, hi = max(0.01, best - 0.0025), min(1.0, best + 0.0025)
    g = (math.sqrt(5) - 1) / 2
    for _ in range(40):  # golden section on the bracket around the grid's best
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        if cost(a)[0] <= cost(b)[0]:
            hi = b
        else:
            lo = a
    ll = (lo + hi) / 2
    return cost(ll)[1], ll


def _infiniband(d: Dataset, p: Point) -> float:
    r = p.run
    if CollectiveKind(d.op) != CollectiveKind.ALL_REDUCE or r["nodes"] < 2:
        raise CalibrationError(f"{p.key}: the rail fraction is fitted on a multi-node All-Reduce")
    n = r["ranks"]
    busbw = 2 * (n - 1) / n * r["size"] / p.measured
    fab = cluster(d, r["nodes"], replace(START, infiniband_fraction=1.0))
    rail = fab.dims.dims[-1].bandwidth  # a rail between nodes, at its datasheet rate
    return busbw / (d.gpus_per_node * rail)


def _efficiency(d: Dataset, p: Point, cal: Calibration, npu: NPU | None = None) -> float:
    def excess(eta: float) -> float:
        return evaluate(d, p, replace(cal, kernel_efficiency=eta), npu).estimate - p.measured

    return _bisect(excess, 0.05, 1.0, decreasing=True)


def _software_factor(d: Dataset, p: Point, cal: Calibration, npu: NPU | None = None) -> float:
    def excess(f: float) -> float:
        return evaluate(d, p, replace(cal, software_2022_factor=f), npu).estimate - p.measured

    return _bisect(excess, 0.5, 0.999999 / cal.kernel_efficiency, decreasing=True)


def _bisect(f: Callable[[float], float], lo: float, hi: float, decreasing: bool) -> float:
    """The root of the monotone ``f`` in [lo, hi] (to 1e-7 relative)."""
    flo, fhi = f(lo), f(hi)
    if (flo < 0) == (fhi < 0):
        raise CalibrationError(
            f"no value in [{lo}, {hi}] matches the measurement (errors {flo:.3g}, {fhi:.3g})"
        )
    for _ in range(60):
        mid = (lo + hi) / 2
        if (f(mid) > 0) == decreasing:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-7 * hi:
            break
    return (lo + hi) / 2
