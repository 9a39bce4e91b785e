"""A training estimate's iteration written as a Chakra job, one trace per NPU.

    from fredfab.sim.engines.chakra_export import export_chakra
    job = export_chakra("resnet-152", "mesh-5x4")
    write_trace("build/chakra/resnet", job.ranks, job.comm_groups)

The iteration is the training model's task graph (fredfab.model.training.iteration, before
packet headers and FRED's phase rule, which the simulator of traces applies or not on its
own). Rank r is NPU r. Each task becomes nodes on the ranks it concerns:

* a stage's compute: a COMP node with the task's compute time on every rank of the stage,
  then, under model parallelism, the MP collectives of the layers it covers (one COMM_COLL
  per layer and collective, over each rank's MP group), one after the other;
* a collective of a DP or MP channel: a COMM_COLL per group, on its members;
* a pipeline transfer: a COMM_SEND on each sending rank and the matching COMM_RECV; where
  it goes across as one piece per MP rank and is gathered again (TrainingConfig
  pp_scatter_gather without sequence_parallel), then the receiving MP groups' All-Gather,
  a COMM_COLL after each COMM_RECV;
* input loads and, under weight streaming, weight loads and gradient stores: MEM_LOAD /
  MEM_STORE of the bytes moved from or to off-wafer memory (ASTRA-sim's remote memory),
  with the group that shares one transfer as ``pg_name``.

A task waits for the tasks it depends on and for the previous task of its resource (a
stage's compute stream, a channel): on each rank, its first nodes depend on the last nodes
those tasks have on that rank (or on what they wait for, where they have none there). The
nodes of one communication task do not depend on each other, so they start together, as
the training model costs them (one concurrent set); only a split pipeline transfer's
All-Gather waits for its receive. A task is matched to the collective calls the model
timed it by from its time, its groups and the kind of transfer its name says it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fredfab.model.chakra.trace import COMM_TYPE_OF, TraceNode
from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.errors import InputError
from fredfab.model.system.fabric import Fabric
from fredfab.model.training.config import NPU
from fredfab.model.training.iteration import layer_costs
from fredfab.model.training.workload import Workload
from fredfab.sim.engines.training import Prepared, iteration_timeline, prepare

_COMM_CATEGORIES = ("dp", "mp", "pp", "input", "weights")
_STAGE_TASK = re.compile(r"^(F|B)(\d+)\.(\d+)(?:\.b(\d+))?$")
_STREAM_TASK = re.compile(r"^(fwd|bwd)(\d+)\.(\d+)\.(\d+)$")
#: The collective that starts each communication task of the training model's iteration
#: (fredfab.model.training.iteration), by the task's name. A task is matched to its
#: recorded calls by their time and groups; two calls can tie on both (a weight load and a
#: gradient store of the same layer group, a ZeRO All-Gather and its Reduce-Scatter), so the
#: kind decides too.
_COMM_TASKS = (
    (re.compile(r"^in\d+(\.\d+)?$"), {CollectiveKind.IO_BROADCAST}),  # microbatch inputs
    (re.compile(r"^(A|G)\d+\.\d+$|^PP\d+\."), {CollectiveKind.P2P}),  # pipeline sends
    (re.compile(r"^DP\d+(\.b\d+)?$"), {CollectiveKind.ALL_REDUCE, CollectiveKind.REDUCE_SCATTER}),
    (re.compile(r"^AG\d+$"), {CollectiveKind.ALL_GATHER}),  # ZeRO's weight All-Gather
    (re.compile(r"^W\d+\."), {CollectiveKind.IO_BROADCAST}),  # weight loads
    (re.compile(r"^R\d+\."), {CollectiveKind.IO_REDUCE}),  # gradient stores
)


@dataclass(frozen=True)
class ChakraJob:
    ranks: list[list[TraceNode]]  # per rank (= NPU), its nodes
    comm_groups: dict[str, list[int]]
    workload: str
    strategy: str
    execution: str
    notes: tuple[str, ...] = ()


#: A recorded collective call: its kind, groups, bytes per group, and the time it took.
Call = tuple[str, list[tuple[int, ...]], list[float], float]


class _Recorder:
    """The prepared collective costs, recording every call with its answer."""

    def __init__(self, comm: Any) -> None:
        self.comm = comm
        self.calls: list[Call] = []

    def time(self, op: str, groups: Sequence[tuple[int, ...]], sizes: Sequence[float]) -> float:
        t = self.comm.time(op, groups, sizes)
        self.calls.append((op, [tuple(int(u) for u in g) for g in groups], list(sizes), t))
        return t


@dataclass
class _Builder:
    prep: Prepared
    npu: NPU
    ranks: list[list[TraceNode]]
    groups: dict[tuple[int, ...], str] = field(default_factory=dict)
    costs: Any = None  # the layer costs, once a gradient bucket needs them
    used: dict[str, int] = field(default_factory=dict)  # per stage, layers bucketed so far

    def group(self, g: tuple[int, ...]) -> str:
        name = self.groups.get(g)
        if name is None:
            name = self.groups[g] = str(len(self.groups))
        return name

    def add(self, r: int, deps: Sequence[int], **kw: Any) -> int:
        nodes = self.ranks[r]
        nid = len(nodes)
        deps = tuple(dict.fromkeys(deps))
        nodes.append(TraceNode(nid, deps=deps, data_count=len(deps), **kw))
        return nid


def export_chakra(
    workload: str | Path | Workload,
    fabric: str | Path | Fabric,
    strategy: str | None = None,
    *,
    npu: NPU | None = None,
    timing_card: str | Path | None = None,
    ignore_memory: bool = False,
    **overrides: Any,
) -> ChakraJob:
    """The iteration ``estimate`` would time, as a Chakra job (see the module docstring).
    A strategy that does not fit in HBM is refused unless ``ignore_memory`` (as
    ``estimate``: written anyway, with a note)."""
    npu = npu or NPU()
    prep = prepare(workload, fabric, strategy, npu=npu, timing_card=timing_card, **overrides)
    notes = list(prep.notes)
    if not prep.memory.fits:
        if not ignore_memory:
            raise InputError(f"{prep.base['strategy']} does not fit: {prep.memory.describe()}")
        notes.append(f"does not fit, written anyway (ignore memory): {prep.memory.describe()}")
    rec = _Recorder(prep.comm)
    tl = iteration_timeline(prep, npu, comm=rec)
    by_time = _calls_by_time(rec.calls)
    n = prep.fabric.num_npus
    b = _Builder(prep, npu, [[] for _ in range(n)])
    prev = [-1] * len(tl.tasks)
    for q in tl.queue.values():
        for a, c in zip(q, q[1:], strict=False):
            prev[c] = a
    last: list[dict[int, tuple[int, ...]]] = [{} for _ in tl.tasks]  # task -> rank -> nodes

    def waits_of(t: int) -> list[int]:
        return list(tl.deps[t]) + ([prev[t]] if prev[t] >= 0 else [])

    # What a rank waits for after task t: t's last nodes there, or, where t has none, what
    # t waits for, recursively. Each (task, rank) is worked out once: walked afresh, a deep
    # pipeline's paths multiply (PP 5 used to take minutes).
    reach: dict[tuple[int, int], tuple[int, ...]] = {}

    def last_on(t: int, r: int) -> tuple[int, ...]:
        stack = [t]
        while stack:
            u = stack[-1]
            if (u, r) in reach:
                stack.pop()
                continue
            got = last[u].get(r)
            if got is not None:
                reach[u, r] = got
                stack.pop()
                continue
            waits = waits_of(u)
            todo = [d for d in waits if (d, r) not in reach]
            if todo:
                stack.extend(todo)
                continue
            reach[u, r] = tuple(dict.fromkeys(x for d in waits for x in reach[d, r]))
            stack.pop()
        return reach[t, r]

    for t in _topological(tl, prev):
        task = tl.tasks[t]
        waits = waits_of(t)

        def before(r: int, waits=waits) -> tuple[int, ...]:
            return tuple(x for d in waits for x in last_on(d, r))

        cats = {c for c, d in task.parts if d > 0}
        if "compute" in cats or task.resource.startswith("stage"):
            _stage_task(b, task, before, last[t])
        elif cats & set(_COMM_CATEGORIES):
            d = task.duration
            kinds = _kinds_of(task.name)
            calls = next(
                (
                    cs
                    for cs in by_time.get(d, [])
                    if CollectiveKind(cs[0][0]) in kinds
                    and (not task.where or cs[0][1] == list(task.where))
                ),
                None,
            )
            if calls is None:
                raise ValueError(f"task {task.name}: no recorded collective takes {d} s")
            _comm_steps(b, task.name, calls, before, last[t])
    return ChakraJob(
        b.ranks,
        {name: list(g) for g, name in b.groups.items()},
        prep.workload.name,
        prep.base["strategy"],
        prep.cfg.execution,
        tuple(notes),
    )


def _kinds_of(name: str) -> set[CollectiveKind]:
    """The collective a communication task named ``name`` starts with (_COMM_TASKS)."""
    for pattern, kinds in _COMM_TASKS:
        if pattern.match(name):
            return kinds
    raise ValueError(f"task {name}: not a communication task the exporter knows")


def _calls_by_time(calls: list[Call]) -> dict[float, list[list[Call]]]:
    """What a communication task may be, by its duration: one recorded call, or a pipeline
    send split across the MP ranks, which is a P2P and then the receiving MP groups'
    All-Gather (iteration.pp_transfer_time), recorded one after the other and timed as
    their sum."""
    out: dict[float, list[list[Call]]] = {}
    for i, call in enumerate(calls):
        out.setdefault(call[3], []).append([call])
        after = calls[i + 1] if i + 1 < len(calls) else None
        if (
            after is not None
            and CollectiveKind(call[0]) == CollectiveKind.P2P
            and CollectiveKind(after[0]) == CollectiveKind.ALL_GATHER
        ):
            out.setdefault(call[3] + after[3], []).append([call, after])
    return out


def _comm_steps(b: _Builder, name: str, calls: list[Call], before, last: dict) -> None:
    """A communication task's calls, each after the previous one on every rank it shares
    with it (the All-Gather of a split pipeline send after each receiver's COMM_RECV)."""
    ends: dict[int, tuple[int, ...]] = {}
    for k, call in enumerate(calls):

        def after(r: int) -> tuple[int, ...]:
            return ends[r] if r in ends else before(r)

        step: dict[int, tuple[int, ...]] = {}
        _comm_task(b, name if k == 0 else f"{name}.{k}", call, after, step)
        ends.update(step)
    last.update(ends)


def _topological(tl, prev: list[int]) -> list[int]:
    """Task ids in an order where every task comes after what it waits for (a task may
    depend on one added after it, e.g. a backward on the gradient from the next stage)."""
    n = len(tl.tasks)
    succ: list[list[int]] = [[] for _ in range(n)]
    need = [0] * n
    for t in range(n):
        for d in list(tl.deps[t]) + ([prev[t]] if prev[t] >= 0 else []):
            succ[d].append(t)
            need[t] += 1
    order = [t for t in range(n) if need[t] == 0]
    for t in order:  # grows while it is walked
        for u in succ[t]:
            need[u] -= 1
            if need[u] == 0:
                order.append(u)
    return order


def _stage_ranks(prep: Prepared, s: int) -> list[int]:
    return sorted(u for g in prep.layout.mp_groups(s) for u in g)


def _stage_task(b: _Builder, task, before, last: dict) -> None:
    prep = b.prep
    s = int(task.resource.removeprefix("stage"))
    compute = sum(d for c, d in task.parts if c == "compute")
    mp = sum(d for c, d in task.parts if c == "mp")
    colls = _mp_collectives(b, task, s) if mp > 0 else []
    for r in _stage_ranks(prep, s):
        node = b.add(r, before(r), name=task.name, kind="COMP", duration=compute)
        group = next(g for g in prep.layout.mp_groups(s) if r in g)
        for k, (op, size) in enumerate(colls):
            node = b.add(
                r,
                (node,),
                name=f"{task.name}.mp{k}",
                kind="COMM_COLL",
                comm_type=COMM_TYPE_OF[op],
                size=size,
                pg_name=b.group(prep.comm.order(group)),
            )
        last[r] = (node,)


def _mp_collectives(b: _Builder, task, s: int) -> list[tuple[str, int]]:
    """The MP collectives (op, bytes) of the layers a stage task covers, in order."""
    prep = b.prep
    wl, cfg = prep.workload, prep.cfg
    m = cfg.microbatches
    if cfg.execution == "weight-stationary":
        match = _STAGE_TASK.match(task.name)
        if not match:
            raise ValueError(f"task {task.name}: not a stage task the exporter knows")
        kind, bucket = match.group(1), match.group(4)
        a, e = prep.ranges[s]
        layers = list(range(a, e)) if kind == "F" else list(range(e - 1, a - 1, -1))
        if bucket is not None:
            layers = _bucket_layers(b, task, layers)
        backward = kind == "B"
        mb = cfg.microbatch_size
    else:
        match = _STREAM_TASK.match(task.name)
        if not match:
            raise ValueError(f"task {task.name}: not a streaming task the exporter knows")
        layers, backward = [int(match.group(3))], match.group(1) == "bwd"
        mb = cfg.samples_per_replica // (prep.memory.accumulation * m)
    out = []
    for i in layers:
        lyr = wl.layers[i]
        if lyr.mp != "split":
            continue
        passes = ("bwd", "fwd") if backward and prep.memory.recompute == "full" else None
        want = passes or (("bwd",) if backward else ("fwd",))
        out += [(c.op, round(c.bytes * mb)) for c in lyr.mp_comm if c.pass_ in want]
    return out


def _bucket_layers(b: _Builder, task, layers: list[int]) -> list[int]:
    """The layers of a gradient bucket: the run of the stage's layers (backward order)
    whose compute adds up to the task's, found from the same layer costs."""
    prep = b.prep
    if b.costs is None:
        stage_of = np.concatenate([np.full(e - a, k) for k, (a, e) in enumerate(prep.ranges)])
        b.costs = layer_costs(
            prep.workload,
            prep.cfg,
            b.npu,
            prep.layout,
            prep.comm,
            stage_of,
            prep.cfg.microbatch_size,
            prep.memory.recompute,
        )
    compute = sum(d for cat, d in task.parts if cat == "compute")
    start = b.used.get(task.resource, 0)
    for end in range(start + 1, len(layers) + 1):
        if float(b.costs.bwd[np.array(layers[start:end])].sum()) == compute:
            b.used[task.resource] = end
            return layers[start:end]
    raise ValueError(f"task {task.name}: its layers cannot be told from its compute time")


def _comm_task(b: _Builder, name: str, call, before, last: dict) -> None:
    op, groups, sizes, _ = call
    op = CollectiveKind(op)
    ends: dict[int, list[int]] = {}
    for g, size in zip(groups, sizes, strict=True):
        size = round(size)
        if op == CollectiveKind.P2P:
            src, dst = g
            s = b.add(src, before(src), name=name, kind="COMM_SEND", size=size, src=src, dst=dst)
            d = b.add(dst, before(dst), name=name, kind="COMM_RECV", size=size, src=src, dst=dst)
            ends.setdefault(src, []).append(s)
            ends.setdefault(dst, []).append(d)
            continue
        if op.uses_io:
            kind = "MEM_LOAD" if op == CollectiveKind.IO_BROADCAST else "MEM_STORE"
            pg = b.group(b.prep.comm.order(g)) if len(g) > 1 else None
            for r in g:
                x = b.add(r, before(r), name=name, kind=kind, size=size, pg_name=pg)
                ends.setdefault(r, []).append(x)
            continue
        pg = b.group(b.prep.comm.order(g))
        for r in g:
            x = b.add(
                r,
                before(r),
                name=name,
                kind="COMM_COLL",
                comm_type=COMM_TYPE_OF[op],
                size=size,
                pg_name=pg,
            )
            ends.setdefault(r, []).append(x)
    for r, xs in ends.items():
        last[r] = tuple(xs)
