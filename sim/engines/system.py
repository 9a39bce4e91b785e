"""Collective time on a wafer fabric: the public API of the system model.

    from fredfab.model.system import load_fabric, CollectiveRequest, Strategy
    from fredfab.sim.engines.system import simulate, phase_bandwidth

    fab = load_fabric("fred-b")
    res = simulate(fab, [CollectiveRequest("all-reduce", range(20), 64 * 2**20)])
    res.time, res.requests[0].algbw, res.requests[0].busbw

Each request runs the fastest of its candidate algorithms, each simulated alone with the same
options (fredfab.sim.engines.algorithm_choice; memoised), unless ``algorithm=`` names one.
Concurrent requests then share the fabric's links (flow-level, fredfab.sim.engines.netsim).
On fabrics with in-switch collectives, every circuit configuration (the FRED flows each switch
must carry at once) is checked with the switch router (fredfab.model.switch.router). When it cannot
be routed:

* a request's in-switch candidate whose own flows conflict is skipped (the fastest other
  candidate runs: an endpoint algorithm of the ring family);
* requests that conflict with each other run in successive batches (first fit, in request
  order), each batch starting when the previous one has finished;

and every fallback is listed in ``SimResult.fallbacks``. ``on_conflict="error"`` raises
CollectiveConflict instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from fredfab.model.errors import InputError
from fredfab.model.system.algorithms import CollectiveRequest, Plan, bus_factor
from fredfab.model.system.fabric import Fabric
from fredfab.model.system.placement import Strategy
from fredfab.model.system.registry import lookup
from fredfab.model.system.units import GB
from fredfab.model.toml_fields import check_int
from fredfab.sim.engines.algorithm_choice import Candidate, choose
from fredfab.sim.engines.netsim import SHARING
from fredfab.sim.engines.plan_run import ENGINES, RunOptions, run_plans
from fredfab.sim.engines.switch_check import CollectiveConflict, SwitchChecker

__all__ = [
    "DEFAULT_CHUNKS",
    "ENGINES",
    "CollectiveConflict",
    "PhaseResult",
    "RequestResult",
    "SimResult",
    "phase_bandwidth",
    "simulate",
]

#: Default chunks per collective: the paper's mesh algorithm runs two chunks in opposite
#: directions (paper §7.2), so two; every algorithm pipelines them.
#: More chunks overlap hierarchical phases better and cost proportionally more events.
DEFAULT_CHUNKS = 2


@dataclass(frozen=True)
class RequestResult:
    request: CollectiveRequest
    algorithm: str
    start: float  # seconds
    end: float
    batch: int
    #: The algorithms considered for it, with their times alone (algorithm_choice).
    candidates: tuple[Candidate, ...] = ()

    @property
    def time(self) -> float:
        return self.end - self.start

    @property
    def algbw(self) -> float | None:
        """Algorithm bandwidth: bytes of the request / time (bytes/s); None when the
        request takes no time (one member, or nothing to move): no rate to report."""
        return self.request.size_bytes / self.time if self.time > 0 else None

    @property
    def busbw(self) -> float | None:
        """Bus bandwidth (NCCL's definition): bus_factor * size / time, the per-NPU link
        bandwidth an endpoint (ring) algorithm would need for this time; None like algbw."""
        f = bus_factor(self.request.op, len(self.request.group))
        return f * self.request.size_bytes / self.time if self.time > 0 else None

    @property
    def bound(self) -> float | None:
        """Lower bound of the algorithm that ran, seconds (None when it states none)."""
        return next((c.bound for c in self.candidates if c.name == self.algorithm), None)

    def to_dict(self) -> dict:
        r = self.request
        alg, bus = self.algbw, self.busbw
        return {
            "op": r.op,
            "label": r.label,
            "group_size": len(r.group),
            "size_bytes": r.size_bytes,
            "algorithm": self.algorithm,
            "start_s": self.start,
            "end_s": self.end,
            "time_s": self.time,
            "bound_s": self.bound,
            "algbw_GBps": None if alg is None else alg / GB,
            "busbw_GBps": None if bus is None else bus / GB,
            "bus_factor": bus_factor(r.op, len(r.group)),
            "batch": self.batch,
            "candidates": [c.to_dict() for c in self.candidates],
        }


@dataclass(frozen=True)
class SimResult:
    fabric: str
    time: float  # seconds until every request finished
    requests: tuple[RequestResult, ...]
    fallbacks: tuple[str, ...]
    notes: tuple[str, ...]
    batches: int
    transfers: int
    events: int

    def to_dict(self) -> dict:
        return {
            "fabric": self.fabric,
            "time_s": self.time,
            "batches": self.batches,
            "fallbacks": list(self.fallbacks),
            "notes": list(self.notes),
            "transfers": self.transfers,
            "events": self.events,
            "requests": [r.to_dict() for r in self.requests],
        }


def simulate(
    fabric: Fabric,
    requests: Iterable[CollectiveRequest],
    *,
    chunks: int = DEFAULT_CHUNKS,
    sharing: str = "maxmin",
    on_conflict: str = "fallback",
    engine: str = "flow",
    packet_bytes: float = 4096,
    resolution: float = 0.0,
    algorithm: str | None = None,
) -> SimResult:
    """Run ``requests`` concurrently on ``fabric``; see the module docstring.

    ``engine="packet"`` uses the brute-force packet-level model (small fabrics only;
    ``packet_bytes`` per packet, the paper's 4 KB data packet by default). ``resolution``
    (seconds) is the flow engine's event time grid (0 = exact; see netsim.run_schedule).
    ``algorithm`` forces that registered algorithm on every request of an op it runs (a
    ValueError if it does not apply to one, or runs none of the requests' ops); by default
    each request runs its fastest candidate (fredfab.sim.engines.algorithm_choice).
    """
    requests = list(requests)
    if not requests:
        raise InputError("simulate needs at least one collective request")
    if on_conflict not in ("fallback", "error"):
        raise InputError(f"on_conflict {on_conflict!r}: use 'fallback' or 'error'")
    if engine not in ENGINES:
        raise InputError(f"engine {engine!r}: use one of {ENGINES}")
    if sharing not in SHARING:
        raise InputError(f"sharing {sharing!r}: use one of {SHARING}")
    check_int(chunks, "chunks", lo=1)
    if algorithm is not None:
        ops = lookup(algorithm).ops
        if not any(r.op in ops for r in requests):
            asked = ", ".join(sorted({str(r.op) for r in requests}))
            raise InputError(f"algorithm {algorithm!r} runs {', '.join(sorted(ops))}, not {asked}")
    opts = RunOptions(chunks, sharing, engine, float(packet_bytes), float(resolution))
    choices = [
        choose(fabric, r, i, opts, algorithm=algorithm, on_conflict=on_conflict)
        for i, r in enumerate(requests)
    ]
    plans = [c.plan for c in choices]
    fallbacks = [m for c in choices for m in c.fallbacks]
    notes: list[str] = []
    if any(p.steps for p in plans):
        batches = _batches(plans, SwitchChecker(fabric), on_conflict, fallbacks)
    else:
        batches = [plans]
    results: dict[int, RequestResult] = {}
    t0 = 0.0
    transfers = events = 0
    for b, batch in enumerate(batches):
        run = run_plans(fabric, batch, opts)
        transfers += run.transfers
        events += run.events
        for p in batch:
            cands = choices[p.index].candidates
            if len(batch) == 1:
                # Alone in its batch: its time is its time alone, for candidates not timed.
                cands = tuple(
                    dataclasses.replace(c, time=run.ends[p.index])
                    if c.name == p.algorithm and c.time is None
                    else c
                    for c in cands
                )
            # A request is issued when its batch starts; its time runs from there.
            results[p.index] = RequestResult(
                p.request, p.algorithm, t0, t0 + run.ends[p.index], b, cands
            )
        t0 = max([t0, *(t0 + e for e in run.ends.values())])
    return SimResult(
        fabric.name,
        t0,
        tuple(results[i] for i in range(len(requests))),
        tuple(fallbacks),
        tuple(notes),
        len(batches),
        transfers,
        events,
    )


def _batches(
    plans: list[Plan], checker: SwitchChecker, on_conflict: str, fallbacks: list[str]
) -> list[list[Plan]]:
    """First-fit partition of the plans into batches whose configurations route together."""
    batches: list[list[Plan]] = []
    for p in plans:
        if not p.steps or p.multiplexed:  # nothing to configure jointly: first batch
            if batches:
                batches[0].append(p)
            else:
                batches.append([p])
            continue
        why = None
        for b in batches:
            why = checker.conflict_merged(b + [p])
            if why is None:
                b.append(p)
                break
        else:
            if batches:
                msg = (
                    f"request {p.index} ({p.request.op} over {len(p.request.group)} NPUs) "
                    f"conflicts with concurrent requests: {why}"
                )
                if on_conflict == "error":
                    raise CollectiveConflict(msg)
                fallbacks.append(f"{msg}; serialised into batch {len(batches)}")
            batches.append([p])
    return batches


# ---------------------------------------------------------------------- 3D-parallel phases
@dataclass(frozen=True)
class PhaseResult:
    phase: str  # "MP", "DP" or "PP"
    op: str
    groups: int
    group_size: int
    size_bytes: float
    time: float
    #: Bus bandwidth of the slowest group, bytes/s (None when the phase takes no time).
    busbw: float | None
    algorithms: tuple[str, ...]
    fallbacks: tuple[str, ...]
    batches: int
    #: The candidates considered for the slowest group's request (algorithm_choice).
    candidates: tuple[Candidate, ...] = ()

    def to_dict(self) -> dict:
        return {
            "phase": self.phase,
            "op": self.op,
            "groups": self.groups,
            "group_size": self.group_size,
            "size_bytes": self.size_bytes,
            "time_s": self.time,
            "busbw_GBps": None if self.busbw is None else self.busbw / GB,
            "algorithms": list(self.algorithms),
            "fallbacks": list(self.fallbacks),
            "batches": self.batches,
            "candidates": [c.to_dict() for c in self.candidates],
        }


def phase_bandwidth(
    fabric: Fabric,
    strategy: Strategy | str,
    size_bytes: float | None = None,
    *,
    mp_bytes: float | None = None,
    dp_bytes: float | None = None,
    pp_bytes: float | None = None,
    algorithm: str | None = None,
    **kw,
) -> dict[str, PhaseResult]:
    """Effective per-NPU bandwidth of each 3D-parallel phase, all groups of a phase at once.

    MP and DP are All-Reduces in every group, PP the point-to-point sends between consecutive
    stages; per-NPU bandwidth is bus_factor * size / time of the phase (its slowest group).
    ``size_bytes`` sets every phase; ``mp_bytes`` etc. override. ``algorithm`` is forced on
    the phases whose op it runs (a ValueError if none). ``kw`` goes to simulate().
    """
    st = Strategy.parse(strategy) if isinstance(strategy, str) else strategy
    if st.workers > fabric.num_npus:
        raise InputError(
            f"strategy {st} needs {st.workers} NPUs; fabric {fabric.name} has {fabric.num_npus}"
        )
    sizes = {}
    for ph, v in (("MP", mp_bytes), ("DP", dp_bytes), ("PP", pp_bytes)):
        v = size_bytes if v is None else v
        if v is None:
            raise InputError(f"no size for the {ph} phase: give size_bytes or {ph.lower()}_bytes")
        sizes[ph] = v
    phases = st.phase_requests(sizes["MP"], sizes["DP"], sizes["PP"])
    ops = lookup(algorithm).ops if algorithm is not None else frozenset()
    if algorithm is not None and not any(reqs[0].op in ops for reqs in phases.values()):
        raise InputError(
            f"algorithm {algorithm!r} runs {', '.join(sorted(ops))}, none of the phases of {st}"
        )
    out: dict[str, PhaseResult] = {}
    for ph, reqs in phases.items():
        forced = algorithm if reqs[0].op in ops else None
        res = simulate(fabric, reqs, algorithm=forced, **kw)
        slowest = max(res.requests, key=lambda r: r.end)
        out[ph] = PhaseResult(
            ph,
            reqs[0].op,
            len(reqs),
            len(reqs[0].group),
            sizes[ph],
            res.time,
            bus_factor(reqs[0].op, len(reqs[0].group)) * sizes[ph] / res.time
            if res.time > 0
            else None,
            tuple(sorted({r.algorithm for r in res.requests})),
            res.fallbacks,
            res.batches,
            slowest.candidates,
        )
    return out
