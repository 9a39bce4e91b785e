"""Simulate a Chakra job on a fabric: every rank walks its DAG, communication on the network.

    from fredfab.model.chakra import read_trace
    from fredfab.sim.engines.dag import simulate_trace
    res = simulate_trace(read_trace("build/chakra/job"), load_fabric("fred-d"))
    res.time, res.breakdown, res.exposed

* A node starts when all its data and control dependencies have finished.
* Compute (COMP) is serialised per NPU: among the compute nodes that are ready, the lowest
  id runs first, as ASTRA-sim's workload layer issues them (Workload::issue_dep_free_nodes
  walks the ready ids in order; HardwareResource admits one compute node at a time). Its
  time is ``duration_micros``, or ``num_ops`` FLOPs at the NPU's sustained rate and
  ``tensor_size`` bytes at its HBM bandwidth, whichever is longer (the training model's
  roofline, fredfab.model.training.config.NPU).
* Communication runs concurrently with compute and with other communication (ASTRA-sim
  admits one communication node per NPU at a time; we do not serialise them). A
  collective starts when all its members have reached it, a send and its receive when both
  have (rendezvous); all its nodes finish when its last byte has arrived. Its time comes
  from the network simulator with the algorithm ``fred collective`` would choose, sharing
  links with whatever else is in flight (fredfab.sim.engines.dag_network).
* MEM_LOAD / MEM_STORE are ASTRA-sim's remote memory: on a fabric with I/O controllers,
  ``tensor_size`` bytes from or to off-wafer memory through them (the I/O patterns of
  weight streaming, io-broadcast and io-reduce; a ``pg_name`` makes one transfer shared by
  the group), concurrent with compute. On a fabric without, their ``duration_micros``, or
  ``tensor_size`` at the NPU's HBM bandwidth. METADATA and INVALID nodes take no time.

Rank r runs on NPU ``placement[r]`` (default r). Ranks sharing a program are simulated once
(model/chakra/job.py says when that is exact).

The report follows the busiest computing rank, as the training estimates do: its compute,
exposed communication by kind (the time it computes nothing while communication of that
kind runs; when several kinds run at once the time is shared equally) and its idle time
(neither), which add up to the iteration time.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from fredfab.model.chakra.job import Job, match
from fredfab.model.chakra.trace import ChakraError, ChakraTrace
from fredfab.model.system.algorithms import CollectiveRequest
from fredfab.model.system.fabric import Fabric
from fredfab.model.training.config import NPU
from fredfab.sim.engines.dag_network import Network
from fredfab.sim.engines.plan_run import RunOptions
from fredfab.sim.engines.system import DEFAULT_CHUNKS

#: The report's categories besides the exposed communication kinds.
COMPUTE, IDLE, MEMORY = "compute", "idle", "memory"


@dataclass(frozen=True)
class DagResult:
    fabric: str
    trace: str
    time: float  # seconds: the last node's end
    reference: int  # the rank the breakdown follows
    breakdown: dict[str, float]  # compute, idle and exposed seconds per kind on the reference
    start: tuple[np.ndarray, ...]  # per program, per node: seconds
    end: tuple[np.ndarray, ...]
    job: Job
    placement: tuple[int, ...]
    link_bytes: np.ndarray  # per directed link of the fabric
    reduced: dict[int, float]  # per switch node id: bytes reduced in the network
    compute_busy: float  # the reference rank's compute seconds
    payload_fraction: float
    events: tuple[tuple[float, float, tuple[int, ...]], ...]  # per sync event: start, end, links
    algorithms: dict[str, int] = field(default_factory=dict)  # algorithm -> requests run
    notes: tuple[str, ...] = ()

    @property
    def exposed(self) -> dict[str, float]:
        return {k: v for k, v in self.breakdown.items() if k not in (COMPUTE, IDLE)}

    @property
    def exposed_comm(self) -> float:
        return sum(self.exposed.values())

    def utilisation(self, fabric: Fabric) -> np.ndarray:
        """Per link: bytes / (bandwidth x iteration time)."""
        if self.time <= 0:
            return np.zeros(len(self.link_bytes))
        return self.link_bytes / (fabric.bandwidth * self.time)

    def to_dict(self, fabric: Fabric) -> dict:
        util = self.utilisation(fabric)
        busy = np.flatnonzero(self.link_bytes > 0)
        name = [n.name for n in fabric.nodes]
        return {
            "trace": self.trace,
            "fabric": self.fabric,
            "ranks": self.job.trace.num_ranks,
            "nodes": self.job.trace.num_nodes,
            "time_s": self.time,
            "reference_rank": self.reference,
            "breakdown_s": dict(self.breakdown),
            "exposed_s": self.exposed,
            "exposed_comm_s": self.exposed_comm,
            "compute_busy_s": self.compute_busy,
            "payload_fraction": self.payload_fraction,
            "algorithms": dict(self.algorithms),
            "links": [
                {
                    "link": int(lk),
                    "src": name[fabric.link_src[lk]],
                    "dst": name[fabric.link_dst[lk]],
                    "bytes": float(self.link_bytes[lk]),
                    "utilisation": float(util[lk]),
                }
                for lk in busy
            ],
            "switch_reduction_bytes": {name[v]: b for v, b in sorted(self.reduced.items())},
            "notes": list(self.notes),
        }


def simulate_trace(
    trace: ChakraTrace,
    fabric: Fabric,
    *,
    placement: Sequence[int] | None = None,
    npu: NPU | None = None,
    chunks: int = DEFAULT_CHUNKS,
    payload_fraction: float | None = None,
    engine: str = "flow",
    algorithm: Callable[[CollectiveRequest], str | None] | None = None,
) -> DagResult:
    """Simulate ``trace`` on ``fabric`` (see the module docstring). ``payload_fraction``:
    the share of link rate carrying payload (default: the fabric's timing card's, as the
    training estimates); ``engine``: what runs the network (fredfab.sim.engines.plan_run
    .ENGINES: the flow-level simulator, or ASTRA-sim's analytical backends);
    ``algorithm(request)``: the algorithm a request runs (None: the fastest alone)."""
    npu = npu or NPU()
    n = trace.num_ranks
    place = tuple(range(n)) if placement is None else tuple(int(u) for u in placement)
    if len(place) != n:
        raise ChakraError(f"{trace.prefix}: the placement names {len(place)} NPUs for {n} ranks")
    if n > fabric.num_npus:
        raise ChakraError(
            f"{trace.prefix}: {n} ranks ({trace.files[-1]} is rank {n - 1}); the fabric "
            f"{fabric.name} has {fabric.num_npus} NPUs"
        )
    bad = [u for u in place if not 0 <= u < fabric.num_npus]
    if bad or len(set(place)) != n:
        raise ChakraError(
            f"placement: NPU {bad[0] if bad else 'given twice'}; each rank needs its own NPU "
            f"0..{fabric.num_npus - 1}"
        )
    remote = bool(fabric.ios)
    job = match(
        trace,
        _dims_group(fabric, place) if getattr(fabric, "dims", None) else None,
        remote_memory=remote,
    )
    f = (
        fabric.timing.card.packet_costs.link_fraction
        if payload_fraction is None
        else float(payload_fraction)
    )
    net = Network(fabric, RunOptions(chunks=chunks, engine=engine), f, algorithm)
    return _Walk(job, fabric, place, npu, net).run()


def _dims_group(fabric: Fabric, place: tuple[int, ...]):
    """The ranks an ``involved_dim`` collective of rank r spans: those whose NPUs agree with
    r's in every dimension not involved (dimension 0 first, ASTRA-sim's order; missing
    entries are not involved)."""
    dims = fabric.dims
    coords = np.asarray(dims.coords(np.asarray(place, dtype=np.int64)))
    k = coords.shape[1]

    def group(rank: int, involved: tuple[bool, ...]) -> tuple[int, ...]:
        fixed = ~np.array((list(involved) + [False] * k)[:k], dtype=bool)
        same = (coords[:, fixed] == coords[rank, fixed]).all(axis=1)
        return tuple(int(r) for r in np.flatnonzero(same))

    return group


class _Walk:
    def __init__(self, job: Job, fabric: Fabric, place, npu: NPU, net: Network) -> None:
        self.job, self.fabric, self.place, self.npu, self.net = job, fabric, place, npu, net
        progs = job.trace.programs
        self.succ: list[list[list[int]]] = []
        self.need: list[list[int]] = []
        self.dur: list[list[float]] = []
        rate = npu.peak_flops * npu.efficiency
        for prog in progs:
            succ: list[list[int]] = [[] for _ in prog.nodes]
            need = []
            dur = []
            for i, nd in enumerate(prog.nodes):
                for d in nd.deps:
                    succ[prog.index[d]].append(i)
                need.append(len(nd.deps))
                if nd.duration is not None:
                    t = nd.duration
                elif nd.kind == "COMP":
                    t = max(nd.num_ops / rate, nd.size / npu.hbm_bandwidth)
                elif nd.kind in ("MEM_LOAD", "MEM_STORE"):
                    t = nd.size / npu.hbm_bandwidth
                else:
                    t = 0.0
                dur.append(t)
            self.succ.append(succ)
            self.need.append(need)
            self.dur.append(dur)
        self.start = [np.full(len(p.nodes), np.nan) for p in progs]
        self.end = [np.full(len(p.nodes), np.nan) for p in progs]
        self.heap: list = []
        self.seq = 0
        self.ready_comp: list[list[int]] = [[] for _ in progs]
        self.busy = [False] * len(progs)
        self.arrived = [0] * len(job.events)
        self.version = [0] * len(job.events)
        self.ev_time = [[np.nan, np.nan] for _ in job.events]
        self._pending_compute: set[int] = set()  # programs with compute ready to run

    def _push(self, t: float, what: int, a: int, b: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, what, a, b))

    # what: 0 node (a=program, b=node) finished; 1 event a finished (b = version)
    def run(self) -> DagResult:
        for p, need in enumerate(self.need):
            for i, k in enumerate(need):
                if k == 0:
                    self._ready(p, i, 0.0)
        self._drain_compute(0.0)
        while self.heap:
            t, _, what, a, b = heapq.heappop(self.heap)
            if what == 0:
                self._finish(a, b, t)
            elif b == self.version[a]:
                self.net.finished(a, t)
                self.ev_time[a][1] = t
                for p, i in self.job.events[a].nodes:
                    self._finish(p, i, t)
            self._drain_compute(t)
        for p, e in enumerate(self.end):
            if np.isnan(e).any():
                prog = self.job.trace.programs[p]
                i = int(np.flatnonzero(np.isnan(e))[0])
                raise ChakraError(
                    f"{prog.where(prog.nodes[i], 'deps')}: never ran (it waits for a "
                    "collective or transfer that waits for it in turn)"
                )
        return self._result()

    def _ready(self, p: int, i: int, t: float) -> None:
        nd = self.job.trace.programs[p].nodes[i]
        if nd.kind == "COMP":
            heapq.heappush(self.ready_comp[p], i)
            self._pending_compute.add(p)
            return
        self.start[p][i] = t
        ev = self.job.event_of.get((p, i))
        if ev is None:
            self._push(t + self.dur[p][i], 0, p, i)
            return
        self.arrived[ev] += 1
        event = self.job.events[ev]
        if self.arrived[ev] < len(event.nodes):
            return
        self.ev_time[ev][0] = t
        reqs = [
            CollectiveRequest(inst.op, [self.place[r] for r in inst.ranks], inst.size)
            for inst in event.instances
            if _moves(inst)
        ]
        if not reqs:
            self._push(t, 1, ev, self.version[ev])
            return
        for k, e in self.net.launch(ev, reqs, t).items():
            self.version[k] += 1
            self._push(e, 1, k, self.version[k])

    def _drain_compute(self, t: float) -> None:
        for p in list(self._pending_compute):
            if not self.busy[p] and self.ready_comp[p]:
                i = heapq.heappop(self.ready_comp[p])
                self.busy[p] = True
                self.start[p][i] = t
                self._push(t + self.dur[p][i], 0, p, i)
            if not self.ready_comp[p]:
                self._pending_compute.discard(p)

    def _finish(self, p: int, i: int, t: float) -> None:
        self.end[p][i] = t
        nd = self.job.trace.programs[p].nodes[i]
        if nd.kind == "COMP":
            self.busy[p] = False
            if self.ready_comp[p]:
                self._pending_compute.add(p)
        need = self.need[p]
        for j in self.succ[p][i]:
            need[j] -= 1
            if need[j] == 0:
                self._ready(p, j, t)

    def _result(self) -> DagResult:
        job, progs = self.job, self.job.trace.programs
        T = max((float(e.max(initial=0.0)) for e in self.end), default=0.0)
        busy = []
        for p, prog in enumerate(progs):
            comp = [i for i, nd in enumerate(prog.nodes) if nd.kind == "COMP"]
            busy.append(float(np.sum(self.end[p][comp] - self.start[p][comp])) if comp else 0.0)
        ref_p = max(range(len(progs)), key=lambda p: (busy[p], -min(job.class_ranks[p])))
        breakdown = self._breakdown(ref_p, T)
        lb = np.zeros(len(self.fabric.links))
        reduced: dict[int, float] = defaultdict(float)
        algos: dict[str, int] = defaultdict(int)
        events = []
        for ev, event in enumerate(job.events):
            links: set[int] = set()
            for inst in event.instances:
                if not _moves(inst):
                    continue
                req = CollectiveRequest(inst.op, [self.place[r] for r in inst.ranks], inst.size)
                use = self.net.use(req)
                lb += use.link_bytes
                links.update(np.flatnonzero(use.link_bytes).tolist())
                for v, b in use.reduced.items():
                    reduced[v] += b
                algos[self.net.algorithms.get(req, "?")] += 1
            s, e = self.ev_time[ev]
            events.append((s, e, tuple(sorted(links))))
        return DagResult(
            fabric=self.fabric.name,
            trace=job.trace.prefix,
            time=T,
            reference=min(job.class_ranks[ref_p]),
            breakdown=breakdown,
            start=tuple(self.start),
            end=tuple(self.end),
            job=job,
            placement=self.place,
            link_bytes=lb,
            reduced=dict(reduced),
            compute_busy=busy[ref_p],
            payload_fraction=self.net.payload,
            events=tuple(events),
            algorithms=dict(algos),
            notes=tuple(sorted(self.net.notes | self.net.fallbacks)),
        )

    def _breakdown(self, p: int, T: float) -> dict[str, float]:
        """Compute, exposed communication per kind and idle time of program ``p``."""
        prog = self.job.trace.programs[p]
        marks: list[tuple[float, int, str]] = []  # (time, +1/-1, kind)
        for i, nd in enumerate(prog.nodes):
            s, e = float(self.start[p][i]), float(self.end[p][i])
            if e <= s:
                continue
            if nd.kind == "COMP":
                kind = COMPUTE
            elif nd.kind in ("MEM_LOAD", "MEM_STORE") and (p, i) not in self.job.event_of:
                kind = MEMORY
            else:
                ev = self.job.event_of.get((p, i))
                if ev is None:
                    continue
                kind = self.job.events[ev].kind
            marks.append((s, 1, kind))
            marks.append((e, -1, kind))
        marks.sort(key=lambda m: (m[0], m[1]))
        out: dict[str, float] = defaultdict(float)
        active: dict[str, int] = defaultdict(int)
        t_prev = 0.0
        for t, d, kind in [*marks, (T, 0, "")]:
            span = t - t_prev
            if span > 0:
                if active[COMPUTE]:
                    out[COMPUTE] += span
                else:
                    kinds = [k for k, c in active.items() if c > 0]
                    if kinds:
                        for k in kinds:
                            out[k] += span / len(kinds)
                    else:
                        out[IDLE] += span
            if kind:
                active[kind] += d
            t_prev = t
        out.setdefault(COMPUTE, 0.0)
        out.setdefault(IDLE, 0.0)
        return dict(out)


def _moves(inst) -> bool:
    """The instance moves bytes over the network (a collective of one member moves none,
    except a transfer from or to off-wafer memory)."""
    return inst.op is not None and inst.size > 0 and (len(inst.ranks) > 1 or inst.op.uses_io)
