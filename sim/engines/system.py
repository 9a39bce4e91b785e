"""Collective time on a wafer fabric: the public API of the system model.

    from fredfab.model.system import load_fabric, CollectiveRequest, Strategy
    from fredfab.sim.engines.system import simulate, phase_bandwidth

    fab = load_fabric("fred-b")
    res = simulate(fab, [CollectiveRequest("all-reduce", range(20), 64 * 2**20)])
    res.time, res.requests[0].algbw, res.requests[0].busbw

Concurrent requests share the fabric's links (flow-level, fredfab.sim.engines.netsim). On fabrics
with in-switch collectives, every circuit configuration (the FRED flows each switch must carry
at once) is checked with the switch router (fredfab.model.router). When it cannot be routed:

* a request whose own flows conflict falls back to the endpoint algorithm (ring family);
* requests that conflict with each other run in successive batches (first fit, in request
  order), each batch starting when the previous one has finished;

and every fallback is listed in ``SimResult.fallbacks``. ``on_conflict="error"`` raises
CollectiveConflict instead.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from fredfab.model.flow import Flow, FlowError, validate_flows
from fredfab.model.router import routable
from fredfab.model.system.algorithms import CollectiveRequest, Plan, build, bus_factor, plan_request
from fredfab.model.system.fabric import Fabric
from fredfab.model.system.placement import Strategy
from fredfab.model.system.schedule import LaneConflict, Schedule, switch_flows
from fredfab.model.system.units import GB
from fredfab.model.toml_fields import check_int
from fredfab.sim.engines.netsim import SHARING, run_schedule

ENGINES = ("flow", "packet")
#: Default chunks per collective: the paper's mesh algorithm runs two chunks in opposite
#: directions (fred-reference.md section 3), so two; every algorithm pipelines them.
#: More chunks overlap hierarchical phases better and cost proportionally more events.
DEFAULT_CHUNKS = 2


class CollectiveConflict(ValueError):
    """Flows that cannot share a circuit configuration, with on_conflict="error"."""


@dataclass(frozen=True)
class RequestResult:
    request: CollectiveRequest
    algorithm: str
    start: float  # seconds
    end: float
    batch: int

    @property
    def time(self) -> float:
        return self.end - self.start

    @property
    def algbw(self) -> float:
        """Algorithm bandwidth: bytes of the request / time (bytes/s)."""
        return self.request.size_bytes / self.time if self.time > 0 else float("inf")

    @property
    def busbw(self) -> float:
        """Per-NPU effective bandwidth: the per-NPU link bandwidth an endpoint (ring)
        algorithm would need for this time (bus_factor * size / time)."""
        f = bus_factor(self.request.op, len(self.request.group))
        return f * self.request.size_bytes / self.time if self.time > 0 else float("inf")

    def to_dict(self) -> dict:
        r = self.request
        return {
            "op": r.op,
            "label": r.label,
            "group_size": len(r.group),
            "size_bytes": r.size_bytes,
            "algorithm": self.algorithm,
            "start_s": self.start,
            "end_s": self.end,
            "time_s": self.time,
            "algbw_GBps": self.algbw / GB,
            "busbw_GBps": self.busbw / GB,
            "batch": self.batch,
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
) -> SimResult:
    """Run ``requests`` concurrently on ``fabric``; see the module docstring.

    ``engine="packet"`` uses the brute-force packet-level model (small fabrics only;
    ``packet_bytes`` per packet, the paper's 4 KB data packet by default). ``resolution``
    (seconds) is the flow engine's event time grid (0 = exact; see netsim.run_schedule).
    """
    requests = list(requests)
    if not requests:
        raise ValueError("simulate needs at least one collective request")
    if on_conflict not in ("fallback", "error"):
        raise ValueError(f"on_conflict {on_conflict!r}: use 'fallback' or 'error'")
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}: use one of {ENGINES}")
    if sharing not in SHARING:
        raise ValueError(f"sharing {sharing!r}: use one of {SHARING}")
    check_int(chunks, "chunks", lo=1)
    plans = [plan_request(fabric, r, i) for i, r in enumerate(requests)]
    fallbacks: list[str] = []
    notes: list[str] = []
    if any(p.steps for p in plans):
        checker = _Checker(fabric)
        for i, p in enumerate(plans):
            bad = next((c for s in p.steps if (c := checker.conflict([s])) is not None), None)
            if bad is not None:
                msg = f"request {i} ({p.request.op} over {len(p.request.group)} NPUs): {bad}"
                if on_conflict == "error":
                    raise CollectiveConflict(msg)
                plans[i] = plan_request(fabric, p.request, i, endpoint=True)
                fallbacks.append(f"{msg}; ran the endpoint algorithm {plans[i].algorithm}")
        batches = _batches(plans, checker, on_conflict, fallbacks)
    else:
        batches = [plans]
    results: dict[int, RequestResult] = {}
    t0 = 0.0
    transfers = events = 0
    for b, batch in enumerate(batches):
        sched = Schedule(fabric)
        for p in batch:
            build(sched, p, chunks)
        if sched.n == 0:
            ends = {p.index: t0 for p in batch}
        else:
            if engine == "flow":
                res = run_schedule(sched, sharing=sharing, resolution=resolution)
                done = res.delivered
                events += res.events
            else:
                from fredfab.sim.engines.packetsim import run_packets

                done = run_packets(sched, packet_bytes=packet_bytes)
            req = sched.finalize()["request"]
            transfers += sched.n
            ends = {p.index: t0 for p in batch}
            if len(req):
                e = np.full(len(requests), -np.inf)
                np.maximum.at(e, req, done)
                for p in batch:
                    if np.isfinite(e[p.index]):
                        ends[p.index] = t0 + e[p.index]
        # A request is issued when its batch starts; its time runs from there.
        starts = {p.index: t0 for p in batch}
        for p in batch:
            results[p.index] = RequestResult(
                p.request, p.algorithm, starts[p.index], ends[p.index], b
            )
        t0 = max([t0, *ends.values()])
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


def _batches(plans: list[Plan], checker: _Checker, on_conflict: str, fallbacks: list[str]):
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


class _Checker:
    """Routability of circuit configurations on every switch, memoised."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric

    def conflict(self, step_trees: Sequence[Sequence]) -> str | None:
        trees = [t for s in step_trees for t in s]
        try:
            per_switch = switch_flows(self.fabric, trees)
        except (LaneConflict, FlowError) as exc:
            return str(exc)
        for x, flows in sorted(per_switch.items()):
            why = _route_check(tuple(sorted(flows)), self.fabric.num_ports(x), self.fabric.switch_m)
            if why is not None:
                return f"switch {self.fabric.nodes[x].name}: {why}"
        return None

    def conflict_merged(self, plans: Sequence[Plan]) -> str | None:
        serial = [p for p in plans if p.steps and not p.multiplexed]
        depth = max((len(p.steps) for p in serial), default=0)
        for k in range(depth):
            why = self.conflict([p.steps[k] for p in serial if k < len(p.steps)])
            if why is not None:
                return why
        return None


@functools.lru_cache(maxsize=4096)
def _route_check(flows: tuple[Flow, ...], ports: int, m: int) -> str | None:
    try:
        validate_flows(flows, ports)
    except FlowError as exc:
        return str(exc)
    if not routable(flows, ports, m):
        return f"flows {', '.join(map(str, flows))} cannot run concurrently on Fred_{m}({ports})"
    return None


# ---------------------------------------------------------------------- 3D-parallel phases
@dataclass(frozen=True)
class PhaseResult:
    phase: str  # "MP", "DP" or "PP"
    op: str
    groups: int
    group_size: int
    size_bytes: float
    time: float
    busbw: float  # per-NPU effective bandwidth, bytes/s (slowest group)
    algorithms: tuple[str, ...]
    fallbacks: tuple[str, ...]
    batches: int

    def to_dict(self) -> dict:
        return {
            "phase": self.phase,
            "op": self.op,
            "groups": self.groups,
            "group_size": self.group_size,
            "size_bytes": self.size_bytes,
            "time_s": self.time,
            "busbw_GBps": self.busbw / GB,
            "algorithms": list(self.algorithms),
            "fallbacks": list(self.fallbacks),
            "batches": self.batches,
        }


def phase_bandwidth(
    fabric: Fabric,
    strategy: Strategy | str,
    size_bytes: float | None = None,
    *,
    mp_bytes: float | None = None,
    dp_bytes: float | None = None,
    pp_bytes: float | None = None,
    **kw,
) -> dict[str, PhaseResult]:
    """Effective per-NPU bandwidth of each 3D-parallel phase, all groups of a phase at once.

    MP and DP are All-Reduces in every group, PP the point-to-point sends between consecutive
    stages; per-NPU bandwidth is bus_factor * size / time of the phase (its slowest group).
    ``size_bytes`` sets every phase; ``mp_bytes`` etc. override. ``kw`` goes to simulate().
    """
    st = Strategy.parse(strategy) if isinstance(strategy, str) else strategy
    if st.workers > fabric.num_npus:
        raise ValueError(
            f"strategy {st} needs {st.workers} NPUs; fabric {fabric.name} has {fabric.num_npus}"
        )
    sizes = {}
    for ph, v in (("MP", mp_bytes), ("DP", dp_bytes), ("PP", pp_bytes)):
        v = size_bytes if v is None else v
        if v is None:
            raise ValueError(f"no size for the {ph} phase: give size_bytes or {ph.lower()}_bytes")
        sizes[ph] = v
    out: dict[str, PhaseResult] = {}
    for ph, reqs in st.phase_requests(sizes["MP"], sizes["DP"], sizes["PP"]).items():
        res = simulate(fabric, reqs, **kw)
        out[ph] = PhaseResult(
            ph,
            reqs[0].op,
            len(reqs),
            len(reqs[0].group),
            sizes[ph],
            res.time,
            bus_factor(reqs[0].op, len(reqs[0].group)) * sizes[ph] / res.time
            if res.time > 0
            else float("inf"),
            tuple(sorted({r.algorithm for r in res.requests})),
            res.fallbacks,
            res.batches,
        )
    return out
