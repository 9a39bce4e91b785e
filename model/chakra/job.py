"""Which nodes of which ranks meet: collective instances and matched sends and receives.

* A COMM_COLL node's group is its ``pg_name``'s communicator group, or the ranks that
  ``involved_dim`` spans (resolved by the caller, who knows the network's dimensions), or
  every rank. The k-th collective a rank issues on a group (in node-id order) meets the
  k-th of every other member: ASTRA-sim matches them by issue order in the same way (its
  streams carry no tag, workload/Workload.cc: "comm_tag? which is used to distinguish two
  different collective in same pg"). Members must agree on the type and the size.
* The k-th COMM_SEND from s to d with tag t meets the k-th COMM_RECV on d from s with tag
  t, and their sizes must agree.

Ranks that share a Program are one *class*: a node of a class stands for that node on all
its ranks. Nodes linked by an instance (or a send and its receive) form one *sync event*,
which starts when every one of its nodes is ready on its ranks and runs all its instances
at once. With identical ranks (the usual data-parallel trace) one event per collective node
covers every group, so a job of 1,024 identical ranks is matched and simulated per class.
This is exact when ranks of a class reach each node at the same time, which holds when
their partners are alike; a class whose ranks sit in groups of different speeds waits for
the slowest of them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from fredfab.model.chakra.trace import COMM_TYPES, ChakraError, ChakraTrace
from fredfab.model.collective_kind import CollectiveKind

#: A node of a class: (program index, node position in the program).
ClassNode = tuple[int, int]


@dataclass(frozen=True)
class Instance:
    """One collective among ``ranks`` (or one transfer ``ranks = (src, dst)``)."""

    op: CollectiveKind | None  # None for a Barrier (members wait; nothing moves)
    ranks: tuple[int, ...]
    size: int
    kind: str  # the report's communication kind (see SyncEvent.kind)


@dataclass(frozen=True)
class SyncEvent:
    nodes: tuple[ClassNode, ...]
    instances: tuple[Instance, ...]

    @property
    def kind(self) -> str:
        """The report's communication kind: the collective's Chakra name in lower case
        (all-reduce, ..., barrier), p2p, mem-load or mem-store."""
        return self.instances[0].kind


@dataclass(frozen=True)
class Job:
    trace: ChakraTrace
    events: tuple[SyncEvent, ...]
    event_of: dict[ClassNode, int]  # class node -> its sync event
    class_ranks: tuple[tuple[int, ...], ...]  # per program, its ranks


#: Remote-memory nodes as off-wafer transfers through the I/O controllers.
MEMORY_OPS = {"MEM_LOAD": CollectiveKind.IO_BROADCAST, "MEM_STORE": CollectiveKind.IO_REDUCE}


def match(
    trace: ChakraTrace,
    dims_group: Callable[[int, tuple[bool, ...]], tuple[int, ...]] | None = None,
    *,
    remote_memory: bool = False,
) -> Job:
    """The sync events of ``trace``; ``dims_group(rank, involved_dim)`` gives the group of
    a collective that names network dimensions (None: such nodes are refused).

    With ``remote_memory``, MEM_LOAD / MEM_STORE nodes are transfers from or to off-wafer
    memory (ASTRA-sim's remote memory; here through the fabric's I/O controllers): each
    rank's own, or, with a ``pg_name``, one shared by the group (a load multicast to its
    members, a store reducing theirs), matched like collectives. Without it they are no
    events (the simulator gives them a local time)."""
    n = trace.num_ranks
    class_ranks: list[list[int]] = [[] for _ in trace.programs]
    for r, p in enumerate(trace.rank_program):
        class_ranks[p].append(r)
    everyone = tuple(range(n))
    # (group, k) -> {program: node position}; per instance its op and size with a witness.
    coll: dict[tuple[tuple[int, ...], int], dict[int, int]] = defaultdict(dict)
    first: dict[tuple[tuple[int, ...], int], tuple[int, int, int]] = {}
    p2p_send: dict[tuple[int, int, int, int], tuple[int, int]] = {}
    p2p_recv: dict[tuple[int, int, int, int], tuple[int, int]] = {}
    for p, prog in enumerate(trace.programs):
        ranks = class_ranks[p]
        static: dict[tuple[int, ...], int] = defaultdict(int)  # group -> issued so far
        for i, node in enumerate(prog.nodes):
            memory = remote_memory and node.kind in MEMORY_OPS
            if node.kind == "COMM_COLL" or memory:
                if node.pg_name is not None:
                    group = trace.comm_groups.get(node.pg_name)
                    if group is None:
                        raise ChakraError(
                            f"{prog.where(node, 'pg_name')}: group {node.pg_name!r} is not "
                            "defined (give the communicator groups: --comm-groups FILE)"
                        )
                    outside = [r for r in ranks if r not in group]
                    if outside:
                        raise ChakraError(
                            f"{trace.files[outside[0]]}: {node.label()}: pg_name: rank "
                            f"{outside[0]} is not a member of group {node.pg_name!r} {list(group)}"
                        )
                    groups = [group]  # in the file's order: the ring order
                elif memory:
                    groups = [(r,) for r in ranks]
                elif node.involved_dim is not None and not all(node.involved_dim):
                    if dims_group is None:
                        raise ChakraError(
                            f"{prog.where(node, 'involved_dim')}: names network dimensions; "
                            "only a fabric of dimensions (ASTRA-sim's topologies) has them"
                        )
                    groups = sorted({dims_group(r, node.involved_dim) for r in ranks})
                else:
                    groups = [everyone]
                for g in groups:
                    k = static[g]
                    static[g] = k + 1
                    key = (g, k)
                    coll[key][p] = i
                    w = first.get(key)
                    if w is None:
                        first[key] = (p, i, node.size)
                    else:
                        _agree(trace, key, w, p, i)
            elif node.kind in ("COMM_SEND", "COMM_RECV"):
                for r in ranks:
                    if node.kind == "COMM_SEND":
                        src, dst, table = r if node.src is None else node.src, node.dst, p2p_send
                        if src != r or dst is None:
                            raise ChakraError(
                                f"{prog.where(node, 'comm_src' if src != r else 'comm_dst')}: "
                                f"a send of rank {r} needs comm_src = {r} and a comm_dst"
                            )
                    else:
                        src, dst, table = node.src, r if node.dst is None else node.dst, p2p_recv
                        if dst != r or src is None:
                            raise ChakraError(
                                f"{prog.where(node, 'comm_dst' if dst != r else 'comm_src')}: "
                                f"a receive of rank {r} needs comm_dst = {r} and a comm_src"
                            )
                    peer = dst if node.kind == "COMM_SEND" else src
                    if not 0 <= peer < n or peer == r:
                        field = "comm_dst" if node.kind == "COMM_SEND" else "comm_src"
                        raise ChakraError(
                            f"{prog.where(node, field)}: rank {peer} is not another rank of "
                            f"the job (ranks 0..{n - 1})"
                        )
                    k = 0
                    while (src, dst, node.tag, k) in table:
                        k += 1
                    table[src, dst, node.tag, k] = (p, i)
    parent: dict[ClassNode, ClassNode] = {}

    def find(x: ClassNode) -> ClassNode:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: ClassNode, b: ClassNode) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[rb] = ra

    instances: dict[ClassNode, list[Instance]] = defaultdict(list)
    inside: dict[tuple[tuple[int, ...], int], int] = {}  # (group, program) -> ranks in both

    def count(group: tuple[int, ...], p: int) -> int:
        c = inside.get((group, p))
        if c is None:
            members = set(group)
            c = inside[group, p] = sum(1 for r in class_ranks[p] if r in members)
        return c

    for key, members in coll.items():
        group, k = key
        got = sum(count(group, p) for p in members)
        if got != len(group):
            present = {r for p in members for r in class_ranks[p]}
            absent = next(r for r in group if r not in present)
            p, i, _ = first[key]
            prog = trace.programs[p]
            raise ChakraError(
                f"{prog.where(prog.nodes[i], 'comm_type')}: collective #{k} of group "
                f"{_short(group)} is never issued by rank {absent} ({trace.files[absent]})"
            )
        p, i, size = first[key]
        node = trace.programs[p].nodes[i]
        if node.kind in MEMORY_OPS:
            inst = Instance(MEMORY_OPS[node.kind], group, size, node.kind.lower().replace("_", "-"))
        else:
            kind = COMM_TYPES[node.comm_type][0].lower().replace("_", "-")
            inst = Instance(node.collective, group, size, kind)
        pairs = [(q, j) for q, j in members.items()]
        find(pairs[0])
        for a in pairs[1:]:
            union(pairs[0], a)
        instances[pairs[0]].append(inst)
    for key, (ps, i_s) in p2p_send.items():
        got = p2p_recv.pop(key, None)
        src, dst, tag, k = key
        s_node = trace.programs[ps].nodes[i_s]
        if got is None:
            raise ChakraError(
                f"{trace.programs[ps].where(s_node, 'comm_dst')}: send #{k} from rank {src} to "
                f"{dst} (tag {tag}) has no matching receive on rank {dst}"
            )
        pr, i_r = got
        r_node = trace.programs[pr].nodes[i_r]
        if r_node.size != s_node.size:
            raise ChakraError(
                f"{trace.programs[pr].where(r_node, 'comm_size')}: receives {r_node.size} bytes, "
                f"the matching send ({trace.programs[ps].source} node {s_node.id}) sends "
                f"{s_node.size}"
            )
        union((ps, i_s), (pr, i_r))
        instances[(ps, i_s)].append(Instance(CollectiveKind.P2P, (src, dst), s_node.size, "p2p"))
    if p2p_recv:
        (src, dst, tag, k), (pr, i_r) = next(iter(p2p_recv.items()))
        prog = trace.programs[pr]
        raise ChakraError(
            f"{prog.where(prog.nodes[i_r], 'comm_src')}: receive #{k} on rank {dst} from {src} "
            f"(tag {tag}) has no matching send"
        )
    by_root: dict[ClassNode, list[ClassNode]] = defaultdict(list)
    for x in list(parent):
        by_root[find(x)].append(x)
    events: list[SyncEvent] = []
    event_of: dict[ClassNode, int] = {}
    insts_of_root: dict[ClassNode, list[Instance]] = defaultdict(list)
    for x, lst in instances.items():
        insts_of_root[find(x)].extend(lst)
    for root in sorted(by_root):
        nodes = tuple(sorted(by_root[root]))
        for x in nodes:
            event_of[x] = len(events)
        events.append(SyncEvent(nodes, tuple(insts_of_root[root])))
    return Job(trace, tuple(events), event_of, tuple(tuple(c) for c in class_ranks))


def _agree(trace: ChakraTrace, key, witness: tuple[int, int, int], p: int, i: int) -> None:
    wp, wi, _ = witness
    a, b = trace.programs[wp].nodes[wi], trace.programs[p].nodes[i]
    group, k = key
    size_field = "tensor_size" if a.kind in MEMORY_OPS else "comm_size"
    for field, x, y in (("type", a.kind, b.kind), ("comm_type", a.comm_type, b.comm_type)) + (
        (size_field, a.size, b.size),
    ):
        if x != y:
            raise ChakraError(
                f"{trace.programs[p].where(b, field)}: {y} here, {x} on the other members of "
                f"collective #{k} of group {_short(group)} ({trace.programs[wp].source} "
                f"node {a.id})"
            )


def _short(group: tuple[int, ...]) -> str:
    if len(group) > 2 and group == tuple(range(group[0], group[-1] + 1)):
        return f"[{group[0]}..{group[-1]}]"
    return str(list(group)) if len(group) <= 8 else f"[{group[0]}, {group[1]}, ... {group[-1]}]"
