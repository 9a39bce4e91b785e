"""Run planned collectives together on a fabric: build their schedule and simulate it.

Shared by ``simulate`` (fredfab.sim.engines.system), which runs batches of concurrent plans,
and the algorithm choice (fredfab.sim.engines.algorithm_choice), which runs each candidate
plan alone, so both measure with the same engine, chunks and sharing.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fredfab.model.system.algorithms import Plan, build
from fredfab.model.system.fabric import Fabric
from fredfab.model.system.schedule import Schedule
from fredfab.sim.engines.netsim import run_schedule

#: What runs a schedule: the flow-level simulator (cut-through, max-min sharing), the
#: packet model, or ASTRA-sim's analytical backends (fredfab.sim.engines.analytical).
ENGINES = ("flow", "packet", "congestion-unaware", "congestion-aware")


@dataclass(frozen=True)
class RunOptions:
    """How schedules are built and simulated (hashable: part of the choice cache's key)."""

    chunks: int = 2
    sharing: str = "maxmin"
    engine: str = "flow"
    packet_bytes: float = 4096
    resolution: float = 0.0


@dataclass(frozen=True)
class BatchRun:
    """Per plan index, seconds from the batch's start until its last byte arrived (0 when
    it moves nothing); transfer and event counts of the run."""

    ends: dict[int, float]
    transfers: int
    events: int


def run_plans(fabric: Fabric, plans: Sequence[Plan], opts: RunOptions) -> BatchRun:
    """Build ``plans`` into one schedule and simulate it (every plan starts at time 0).

    A plan run alone is memoised: the algorithm choice times each candidate alone, and a
    request alone in its batch then runs the same schedule again (a 1,024-NPU collective
    would be simulated twice)."""
    if len(plans) == 1:
        p = plans[0]
        run = _run_alone(fabric, dataclasses.replace(p, index=0), opts)
        return BatchRun({p.index: run.ends[0]}, run.transfers, run.events)
    return _run(fabric, plans, opts)


@functools.lru_cache(maxsize=1024)
def _run_alone(fabric: Fabric, plan: Plan, opts: RunOptions) -> BatchRun:
    return _run(fabric, [plan], opts)


def run_alone_cache_clear() -> None:
    """Forget the memoised runs of single plans."""
    _run_alone.cache_clear()


def run_with(sched: Schedule, opts: RunOptions) -> tuple[np.ndarray, int]:
    """Simulate ``sched`` with the engine ``opts`` names: per transfer the time its last
    byte arrived, and the simulator's event count."""
    if opts.engine == "flow":
        res = run_schedule(sched, sharing=opts.sharing, resolution=opts.resolution)
        return res.delivered, res.events
    if opts.engine == "packet":
        from fredfab.sim.engines.packetsim import run_packets

        return run_packets(sched, packet_bytes=opts.packet_bytes), 0
    from fredfab.sim.engines.analytical import run_analytical

    res = run_analytical(sched, opts.engine)
    return res.delivered, res.events


def _run(fabric: Fabric, plans: Sequence[Plan], opts: RunOptions) -> BatchRun:
    sched = Schedule(fabric)
    for p in plans:
        build(sched, p, opts.chunks)
    ends = {p.index: 0.0 for p in plans}
    if sched.n == 0:
        return BatchRun(ends, 0, 0)
    done, events = run_with(sched, opts)
    req = sched.finalize()["request"]
    if len(req):
        e = np.full(max(ends) + 1, -np.inf)
        np.maximum.at(e, req, done)
        for i in ends:
            if np.isfinite(e[i]):
                ends[i] = float(e[i])
    return BatchRun(ends, sched.n, events)
