"""Collectives as schedules of FRED flows, and their expected results from the definition.

A FRED switch runs one flow per reduction/distribution (paper §5.1-5.2): simple
collectives are one flow, compound ones are a series of steps whose flows run concurrently
(disjoint IPs, disjoint OPs). This module states each collective twice, independently:

* ``definition()``: what every receiving port must end up holding, as sums of input chunks
  (``Term``). ``expected()`` evaluates it with the golden ``add`` (``golden.reduce_tree``);
  it never looks at the schedule or at a network model.
* ``steps()``: the flow schedule a switch executes (``Step`` of ``Transfer``). ``run_schedule``
  executes it with a pluggable executor (a network model, or a reference one in the tests).

Comparing ``run_schedule`` against ``expected`` therefore checks both the schedule and the
network. For floats the reduction order matters; a network that reports the tree each flow used
lets ``expected(order=order_from_trees(trees))`` be compared bit for bit.

Buffer conventions: every port p has an input buffer ``inputs[p]`` of shape
``(in_chunks, chunk_len)`` and, if it receives anything, an output buffer of shape
``(out_chunks, chunk_len)``; chunk i is row i. A transfer moves whole chunks, one per port.
Ports are switch ports; a port can be an input and an output of the same flow (input and
output port numbers are separate namespaces, as in ``flow.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.dtypes import ElementType
from fredfab.model.errors import InputError
from fredfab.model.golden import Tree, left_fold_tree, reduce_tree, validate_tree
from fredfab.model.switch.flow import Flow, validate_flows

Order = Callable[[Flow], Tree]
"""Reduction order: the tree a given flow reduces with."""

ExecuteStep = Callable[
    [tuple[Flow, ...], dict[int, np.ndarray]], tuple[dict[int, np.ndarray], dict[Flow, Tree]]
]
"""Executor: (concurrent flows, {ip: chunk sent}) -> ({op: chunk received}, {flow: tree})."""


class ScheduleError(InputError):
    """A schedule or its execution is inconsistent (missing outputs, double writes, bad tree)."""


def _nonneg_int(v: object, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int | np.integer):
        raise InputError(f"{what} must be an integer, got {v!r}")
    if v < 0:
        raise InputError(f"{what} must be >= 0, got {v}")
    return int(v)


@dataclass(frozen=True)
class Transfer:
    """One flow of a step: every IP sends chunk ``src_chunk`` of its input buffer; every OP
    stores the flow's result into chunk ``dst_chunk`` of its output buffer."""

    flow: Flow
    src_chunk: int
    dst_chunk: int

    def __post_init__(self) -> None:
        if not isinstance(self.flow, Flow):
            raise ValueError(f"Transfer.flow must be a Flow, got {type(self.flow).__name__}")
        object.__setattr__(self, "src_chunk", _nonneg_int(self.src_chunk, "src_chunk"))
        object.__setattr__(self, "dst_chunk", _nonneg_int(self.dst_chunk, "dst_chunk"))


@dataclass(frozen=True)
class Step:
    """Transfers whose flows run concurrently: validated to have disjoint IPs and OPs."""

    transfers: tuple[Transfer, ...]

    def __post_init__(self) -> None:
        transfers = tuple(self.transfers)
        if not transfers:
            raise ScheduleError("a step needs at least one transfer")
        object.__setattr__(self, "transfers", transfers)
        ports = max(max(t.flow.ips | t.flow.ops) for t in transfers) + 1
        validate_flows(self.flows, max(ports, 2))

    @property
    def flows(self) -> tuple[Flow, ...]:
        return tuple(t.flow for t in self.transfers)


@dataclass(frozen=True)
class Term:
    """One output of a collective's definition: the sum of ``sources`` (port, input chunk),
    stored at every ``dests`` (port, output chunk). Its ``flow`` names the reduction (IPs = the
    source ports, OPs = the destination ports), which is what a reduction order is keyed by."""

    sources: tuple[tuple[int, int], ...]
    dests: tuple[tuple[int, int], ...]

    @property
    def flow(self) -> Flow:
        return Flow((p for p, _ in self.sources), (p for p, _ in self.dests))


def _check_group(group: Iterable[int], what: str = "group") -> tuple[int, ...]:
    try:
        ports = tuple(group)
    except TypeError:
        raise InputError(f"{what} must be a sequence of ports, got {group!r}") from None
    if not ports:
        raise InputError(f"{what} must not be empty")
    ports = tuple(_nonneg_int(p, f"{what} port") for p in ports)
    dup = sorted({p for p in ports if ports.count(p) > 1})
    if dup:
        raise InputError(f"{what} {ports} repeats port(s) {dup}")
    return ports


@dataclass(frozen=True)
class Collective:
    """A collective over switch ports ``group`` (order matters: it numbers the chunks).

    Subclasses set ``name``, ``in_chunks`` (chunks per input buffer) and ``out_chunks``
    (chunks per output buffer), and define ``definition()`` and ``steps()``.
    """

    group: tuple[int, ...]
    name: str = field(init=False)
    in_chunks: int = field(init=False)
    out_chunks: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "group", _check_group(self.group))

    def _shape(self, name: str, in_chunks: int, out_chunks: int) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "in_chunks", in_chunks)
        object.__setattr__(self, "out_chunks", out_chunks)

    @property
    def n(self) -> int:
        return len(self.group)

    def definition(self) -> tuple[Term, ...]:
        """What the collective computes, independent of any schedule."""
        raise NotImplementedError

    def steps(self) -> list[Step]:
        """The flow schedule, one Step after the other."""
        raise NotImplementedError

    def local_copies(self) -> tuple[tuple[int, int, int], ...]:
        """(port, input chunk, output chunk) copied inside the port, without the switch."""
        return ()

    def senders(self) -> tuple[int, ...]:
        """Ports whose input buffers the definition reads, sorted."""
        return tuple(sorted({p for t in self.definition() for p, _ in t.sources}))

    def receivers(self) -> tuple[int, ...]:
        """Ports that end with an output buffer, sorted."""
        return tuple(sorted({p for t in self.definition() for p, _ in t.dests}))

    def expected(
        self,
        inputs: Mapping[int, np.ndarray],
        et: ElementType,
        order: Order | None = None,
    ) -> dict[int, np.ndarray]:
        """Each receiving port's output buffer, computed from ``definition()``.

        ``inputs`` maps port -> array (in_chunks, chunk_len) of ``et.dtype``; only the senders
        are needed. Each sum of two or more chunks is reduced with ``order(term.flow)`` (a tree
        over the flow's IPs), by default the left fold over the sorted ports. Ports that receive
        nothing are omitted.
        """
        terms = self.definition()
        self._check_terms(terms)
        chunk_len = _check_inputs(inputs, self.senders(), self.in_chunks, et)
        out = {p: np.empty((self.out_chunks, chunk_len), et.dtype) for p in self.receivers()}
        for term in terms:
            data = {p: np.asarray(inputs[p])[c] for p, c in term.sources}
            if len(data) == 1:
                value = next(iter(data.values())).copy()
            else:
                flow = term.flow
                tree = order(flow) if order is not None else left_fold_tree(flow.ips)
                try:
                    validate_tree(tree, flow.ips)
                except ValueError as e:
                    raise ScheduleError(f"order for flow {flow}: {e}") from None
                value = reduce_tree(tree, data, et)
            for p, c in term.dests:
                out[p][c] = value
        return out

    def _check_terms(self, terms: Sequence[Term]) -> None:
        """Every output chunk of every receiver is defined exactly once; chunks are in range."""
        written: dict[tuple[int, int], int] = {}
        for i, term in enumerate(terms):
            ports = [p for p, _ in term.sources]
            if len(set(ports)) != len(ports):
                raise ScheduleError(f"{self.name}: term {i} reads a port twice: {term}")
            for p, c in term.sources:
                if not 0 <= c < self.in_chunks:
                    raise ScheduleError(f"{self.name}: term {i} reads chunk {c} of port {p}")
            for p, c in term.dests:
                if not 0 <= c < self.out_chunks:
                    raise ScheduleError(f"{self.name}: term {i} writes chunk {c} of port {p}")
                if (p, c) in written:
                    raise ScheduleError(
                        f"{self.name}: terms {written[(p, c)]} and {i} both write chunk {c} "
                        f"of port {p}"
                    )
                written[(p, c)] = i
        for p in {p for p, _ in written}:
            for c in range(self.out_chunks):
                if (p, c) not in written:
                    raise ScheduleError(f"{self.name}: chunk {c} of port {p} is never defined")


@dataclass(frozen=True)
class AllReduce(Collective):
    """Every member ends with the sum of all members' buffers: one flow (group, group).

    in_chunks = out_chunks = 1.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        self._shape(CollectiveKind.ALL_REDUCE, 1, 1)

    def definition(self) -> tuple[Term, ...]:
        return (Term(tuple((p, 0) for p in self.group), tuple((p, 0) for p in self.group)),)

    def steps(self) -> list[Step]:
        return [Step((Transfer(Flow(self.group, self.group), 0, 0),))]


@dataclass(frozen=True)
class Reduce(Collective):
    """``root`` ends with the sum of the group's buffers: one flow (group, {root}).

    ``root`` need not be a member (e.g. an uplink port that carries a partial sum onwards).
    in_chunks = out_chunks = 1.
    """

    root: int

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "root", _nonneg_int(self.root, "root"))
        self._shape(CollectiveKind.REDUCE, 1, 1)

    def definition(self) -> tuple[Term, ...]:
        return (Term(tuple((p, 0) for p in self.group), ((self.root, 0),)),)

    def steps(self) -> list[Step]:
        return [Step((Transfer(Flow(self.group, [self.root]), 0, 0),))]


@dataclass(frozen=True)
class Multicast(Collective):
    """``src``'s buffer is delivered to every port of ``dsts``: one flow ({src}, dsts).

    ``src`` may be one of ``dsts`` (it then receives its own data back through the switch).
    ``group`` is derived: src first, then the other destinations. in_chunks = out_chunks = 1.
    ``name`` defaults to "multicast" (``broadcast`` sets "broadcast").
    """

    group: tuple[int, ...] = field(init=False)
    src: int
    dsts: tuple[int, ...]
    name: str = field(default=CollectiveKind.MULTICAST, kw_only=True)

    def __post_init__(self) -> None:
        src = _nonneg_int(self.src, "src")
        dsts = _check_group(self.dsts, "dsts")
        object.__setattr__(self, "src", src)
        object.__setattr__(self, "dsts", dsts)
        object.__setattr__(self, "group", (src, *(d for d in dsts if d != src)))
        super().__post_init__()
        self._shape(self.name, 1, 1)

    def definition(self) -> tuple[Term, ...]:
        return (Term(((self.src, 0),), tuple((d, 0) for d in self.dsts)),)

    def steps(self) -> list[Step]:
        return [Step((Transfer(Flow([self.src], self.dsts), 0, 0),))]


def broadcast(group: Iterable[int], root: int) -> Multicast:
    """Broadcast = multicast from ``root`` to the whole group, root included."""
    group = _check_group(group)
    if root not in group:
        raise InputError(f"broadcast: root {root} is not in group {group}")
    return Multicast(root, group, name=CollectiveKind.BROADCAST)


@dataclass(frozen=True)
class Unicast(Collective):
    """``dst`` receives ``src``'s buffer: one flow ({src}, {dst}). in_chunks = out_chunks = 1."""

    group: tuple[int, ...] = field(init=False)
    src: int
    dst: int

    def __post_init__(self) -> None:
        src, dst = _nonneg_int(self.src, "src"), _nonneg_int(self.dst, "dst")
        object.__setattr__(self, "src", src)
        object.__setattr__(self, "dst", dst)
        object.__setattr__(self, "group", (src,) if src == dst else (src, dst))
        super().__post_init__()
        self._shape(CollectiveKind.UNICAST, 1, 1)

    def definition(self) -> tuple[Term, ...]:
        return (Term(((self.src, 0),), ((self.dst, 0),)),)

    def steps(self) -> list[Step]:
        return [Step((Transfer(Flow([self.src], [self.dst]), 0, 0),))]


@dataclass(frozen=True)
class ReduceScatter(Collective):
    """Input buffers are split into n = len(group) chunks; member group[j] ends with the sum
    over all members of chunk j (its output buffer is that one chunk: out_chunks = 1).

    Schedule: n serial steps; step j is the reduce flow (group, {group[j]}) on chunk j. (The
    steps share every IP, so they cannot run concurrently in one switch configuration.)
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        self._shape(CollectiveKind.REDUCE_SCATTER, self.n, 1)

    def definition(self) -> tuple[Term, ...]:
        return tuple(
            Term(tuple((p, j) for p in self.group), ((self.group[j], 0),)) for j in range(self.n)
        )

    def steps(self) -> list[Step]:
        return [Step((Transfer(Flow(self.group, [self.group[j]]), j, 0),)) for j in range(self.n)]


@dataclass(frozen=True)
class AllGather(Collective):
    """Each member contributes one chunk (in_chunks = 1); every member ends with all of them,
    chunk j holding group[j]'s data (out_chunks = n).

    Schedule: n serial steps; step j multicasts chunk 0 of group[j] into chunk j of every
    member, group[j] included (it gets its own chunk back through the switch).
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        self._shape(CollectiveKind.ALL_GATHER, 1, self.n)

    def definition(self) -> tuple[Term, ...]:
        return tuple(
            Term(((self.group[j], 0),), tuple((p, j) for p in self.group)) for j in range(self.n)
        )

    def steps(self) -> list[Step]:
        return [Step((Transfer(Flow([self.group[j]], self.group), 0, j),)) for j in range(self.n)]


@dataclass(frozen=True)
class Gather(Collective):
    """``root`` ends with every member's chunk (in_chunks = 1), chunk j from group[j]
    (out_chunks = n).

    Schedule: n serial unicasts group[j] -> root into chunk j. If the root is a member, its own
    chunk also travels through the switch (unlike All-to-All's local diagonal); the root need
    not be a member.
    """

    root: int

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "root", _nonneg_int(self.root, "root"))
        self._shape(CollectiveKind.GATHER, 1, self.n)

    def definition(self) -> tuple[Term, ...]:
        return tuple(Term(((self.group[j], 0),), ((self.root, j),)) for j in range(self.n))

    def steps(self) -> list[Step]:
        return [Step((Transfer(Flow([self.group[j]], [self.root]), 0, j),)) for j in range(self.n)]


@dataclass(frozen=True)
class AllToAll(Collective):
    """Member i's input chunk j is meant for member j; member j's output chunk i holds it:
    out[group[j]][i] = in[group[i]][j] (in_chunks = out_chunks = n).

    Schedule: n - 1 rounds; round k (k = 1..n-1) is the permutation of concurrent unicasts
    group[i] -> group[(i+k) % n], carrying chunk (i+k) % n of the sender into chunk i of the
    receiver. The diagonal out[group[i]][i] = in[group[i]][i] is the member's own data: it is
    copied locally (``local_copies``), never sent, but it is part of the definition.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        self._shape(CollectiveKind.ALL_TO_ALL, self.n, self.n)

    def definition(self) -> tuple[Term, ...]:
        g = self.group
        return tuple(Term(((g[i], j),), ((g[j], i),)) for i in range(self.n) for j in range(self.n))

    def steps(self) -> list[Step]:
        g, n = self.group, self.n
        return [
            Step(tuple(Transfer(Flow([g[i]], [g[(i + k) % n]]), (i + k) % n, i) for i in range(n)))
            for k in range(1, n)
        ]

    def local_copies(self) -> tuple[tuple[int, int, int], ...]:
        return tuple((p, i, i) for i, p in enumerate(self.group))


# --------------------------------------------------------------------------------------------
# executing a schedule


def run_schedule(
    collective: Collective,
    inputs: Mapping[int, np.ndarray],
    et: ElementType,
    execute_step: ExecuteStep,
) -> tuple[dict[int, np.ndarray], dict[tuple[int, Flow], Tree]]:
    """Execute ``collective.steps()`` with ``execute_step`` and assemble the output buffers.

    For each step, every IP's source chunk is handed to the executor, which returns what each
    OP received and the reduction tree each flow used. Results land in the OPs' destination
    chunks; then the collective's local copies are applied. Returns (outputs per port, trees
    per (step index, flow)). Raises ScheduleError if the executor misses or adds an output
    port, returns a wrongly shaped chunk or a tree that does not cover the flow's IPs, or if
    an output chunk is written twice or never.
    """
    steps = collective.steps()
    senders = sorted({p for s in steps for f in s.flows for p in f.ips})
    senders = sorted(set(senders) | {p for p, _, _ in collective.local_copies()})
    chunk_len = _check_inputs(inputs, senders, collective.in_chunks, et)
    outputs: dict[int, np.ndarray] = {}
    written: dict[tuple[int, int], str] = {}
    trees: dict[tuple[int, Flow], Tree] = {}

    def store(port: int, chunk: int, value: np.ndarray, who: str) -> None:
        if not 0 <= chunk < collective.out_chunks:
            raise ScheduleError(f"{who}: output chunk {chunk} out of range")
        if (port, chunk) in written:
            raise ScheduleError(
                f"{who}: chunk {chunk} of port {port} already written by {written[(port, chunk)]}"
            )
        written[(port, chunk)] = who
        buf = outputs.setdefault(port, np.zeros((collective.out_chunks, chunk_len), et.dtype))
        buf[chunk] = value

    for i, step in enumerate(steps):
        data = {
            ip: np.asarray(inputs[ip])[t.src_chunk].copy()
            for t in step.transfers
            for ip in sorted(t.flow.ips)
        }
        received, step_trees = execute_step(step.flows, data)
        ops = {op for f in step.flows for op in f.ops}
        if set(received) != ops:
            raise ScheduleError(
                f"step {i}: executor delivered to ports {sorted(received)}, "
                f"the flows' output ports are {sorted(ops)}"
            )
        for t in step.transfers:
            tree = step_trees.get(t.flow)
            if tree is None:
                raise ScheduleError(f"step {i}: executor reported no tree for flow {t.flow}")
            try:
                validate_tree(tree, t.flow.ips)
            except ValueError as e:
                raise ScheduleError(f"step {i}, flow {t.flow}: {e}") from None
            trees[(i, t.flow)] = tree
            for op in sorted(t.flow.ops):
                value = np.asarray(received[op])
                if value.dtype != et.dtype or value.shape != (chunk_len,):
                    raise ScheduleError(
                        f"step {i}: port {op} received {value.dtype}{value.shape}, "
                        f"expected {et.dtype}({chunk_len},)"
                    )
                store(op, t.dst_chunk, value, f"step {i} flow {t.flow}")
    for port, src, dst in collective.local_copies():
        store(port, dst, np.asarray(inputs[port])[src], f"local copy at port {port}")
    for port in sorted(outputs):
        for c in range(collective.out_chunks):
            if (port, c) not in written:
                raise ScheduleError(f"{collective.name}: chunk {c} of port {port} never written")
    return {p: outputs[p] for p in sorted(outputs)}, trees


def order_from_trees(trees: Mapping[tuple[int, Flow], Tree]) -> Order:
    """Turn run_schedule's trees into an ``order`` for ``Collective.expected``.

    Raises ScheduleError if one flow used different trees in different steps (an order keyed by
    flow could not follow it); asking for a flow that never ran raises KeyError.
    """
    by_flow: dict[Flow, Tree] = {}
    for (i, flow), tree in trees.items():
        if flow in by_flow and by_flow[flow] != tree:
            raise ScheduleError(
                f"flow {flow} used tree {by_flow[flow]!r} and, in step {i}, {tree!r}"
            )
        by_flow[flow] = tree

    def order(flow: Flow) -> Tree:
        return by_flow[flow]

    return order


def _check_inputs(
    inputs: Mapping[int, np.ndarray], ports: Iterable[int], in_chunks: int, et: ElementType
) -> int:
    """Check the senders' input buffers; return the common chunk length."""
    chunk_len: int | None = None
    for p in ports:
        if p not in inputs:
            raise ValueError(f"inputs has no buffer for port {p} (has {sorted(inputs)})")
        a = np.asarray(inputs[p])
        if a.dtype != et.dtype or a.ndim != 2 or a.shape[0] != in_chunks:
            raise ValueError(
                f"input buffer of port {p} is {a.dtype}{a.shape}, expected "
                f"{et.dtype}({in_chunks}, chunk_len)"
            )
        if chunk_len is None:
            chunk_len = a.shape[1]
        elif a.shape[1] != chunk_len:
            raise ValueError(
                f"input buffer of port {p} has chunk length {a.shape[1]}, others {chunk_len}"
            )
    if chunk_len is None:
        raise ValueError("collective reads no input buffer")
    return chunk_len
