"""Read a Chakra job: ``PREFIX.0.et`` ... ``PREFIX.(N-1).et`` (each optionally gzipped).

Records are framed by model/chakra/records.py and decoded by the protobuf runtime with the
schema of et_def.proto. Every check names the file, the node and the field:

* a truncated record, or bytes that are not a Node message;
* an unknown node type or collective type, an attribute of the wrong type;
* a dependency on a node the file does not have, a node id given twice, a cycle;
* ranks missing (a gap in the numbering) or extra (checked against the fabric by the
  simulator), communicator groups naming ranks the job does not have.

Files with the same bytes are parsed once and share a Program.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import deque
from pathlib import Path

from google.protobuf.message import DecodeError

from fredfab.model.chakra import et_def_pb2 as pb
from fredfab.model.chakra.records import RecordError, decompress, records
from fredfab.model.chakra.trace import (
    COMM_TYPES,
    DURATION_ATTR,
    NODE_KIND,
    ChakraError,
    ChakraTrace,
    Program,
    TraceNode,
)
from fredfab.model.input_files import read_text

#: Ranks a job may have (the fabrics' own limit, model/system: 4096 NPUs).
MAX_RANKS = 4096
#: The communicator-group file the writer puts beside a job, read when no other is given.
GROUPS_SUFFIX = ".comm_groups.json"

_INT_FIELDS = frozenset(
    f"{k}_val"
    for k in ("int32", "int64", "uint32", "uint64", "sint32", "sint64")
    + ("fixed32", "fixed64", "sfixed32", "sfixed64")
)
_NUMBER = re.compile(r"^(.*)\.(\d+)\.et(\.gz)?$")


def trace_files(prefix: str | Path) -> list[Path]:
    """The files of the job ``prefix`` in rank order; [] if there is no ``PREFIX.0.et``.

    A rank's file is ``PREFIX.R.et`` or ``PREFIX.R.et.gz``; ranks must be numbered 0..N-1
    without a gap (ChakraError names the first missing one)."""
    prefix = Path(prefix)
    folder = prefix.parent if str(prefix.parent) else Path(".")
    if not folder.is_dir():
        return []
    found: dict[int, Path] = {}
    for p in folder.iterdir():
        m = _NUMBER.match(p.name)
        if m and m.group(1) == prefix.name:
            r = int(m.group(2))
            if r in found:
                raise ChakraError(f"{p}: rank {r} has two files ({found[r].name}, {p.name})")
            found[r] = p
    if not found:
        return []
    n = max(found) + 1
    missing = [r for r in range(n) if r not in found]
    if missing:
        raise ChakraError(
            f"{prefix}.{missing[0]}.et: rank {missing[0]} is missing (found ranks "
            f"{_spans(sorted(found))}; a job's files are numbered 0..N-1)"
        )
    if n > MAX_RANKS:
        raise ChakraError(f"{prefix}: {n} ranks, at most {MAX_RANKS} are simulated")
    return [found[r] for r in range(n)]


def is_trace(spec: str | Path) -> bool:
    """True when ``spec`` names a Chakra job (``spec.0.et`` or ``spec.0.et.gz`` exists)."""
    p = Path(spec)
    return Path(f"{p}.0.et").is_file() or Path(f"{p}.0.et.gz").is_file()


def read_trace(prefix: str | Path, comm_groups: str | Path | None = None) -> ChakraTrace:
    """Read and check the job ``prefix``; ``comm_groups``: ASTRA-sim's communicator-group
    JSON (``{"ID": [ranks], ...}``; default ``PREFIX.comm_groups.json`` when it exists)."""
    files = trace_files(prefix)
    if not files:
        raise ChakraError(f"{prefix}: no Chakra trace ({prefix}.0.et or {prefix}.0.et.gz)")
    programs: list[Program] = []
    by_digest: dict[bytes, int] = {}
    rank_program = []
    for path in files:
        try:
            data = decompress(path.read_bytes())
        except RecordError as exc:
            raise ChakraError(f"{path}: {exc}") from None
        digest = hashlib.blake2b(data, digest_size=16).digest()
        idx = by_digest.get(digest)
        if idx is None:
            idx = by_digest[digest] = len(programs)
            programs.append(parse_program(data, str(path)))
        rank_program.append(idx)
    groups_file = comm_groups
    if groups_file is None and Path(f"{prefix}{GROUPS_SUFFIX}").is_file():
        groups_file = f"{prefix}{GROUPS_SUFFIX}"
    groups = read_comm_groups(groups_file, len(files)) if groups_file else {}
    return ChakraTrace(
        str(prefix), tuple(programs), tuple(rank_program), groups, tuple(map(str, files))
    )


def read_comm_groups(path: str | Path, ranks: int) -> dict[str, tuple[int, ...]]:
    """ASTRA-sim's communicator groups (Workload::initialize_comm_groups): a JSON object
    from group id to its ranks."""
    try:
        raw = json.loads(read_text(path, ChakraError, "the communicator groups"))
    except json.JSONDecodeError as exc:
        raise ChakraError(f"{path}: not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise ChakraError(f"{path}: must be an object of group id -> list of ranks")
    out = {}
    for name, members in raw.items():
        if not (isinstance(members, list) and members and all(type(r) is int for r in members)):
            raise ChakraError(f"{path}: group {name!r} must be a non-empty list of ranks")
        bad = [r for r in members if not 0 <= r < ranks]
        if bad:
            raise ChakraError(
                f"{path}: group {name!r} names rank {bad[0]}; ranks are 0..{ranks - 1}"
            )
        if len(set(members)) != len(members):
            raise ChakraError(f"{path}: group {name!r} names a rank twice")
        out[str(name)] = tuple(members)
    return out


def parse_program(data: bytes, source: str) -> Program:
    """One rank's file (already gunzipped) as a checked Program."""
    if not data:
        raise ChakraError(f"{source}: empty; a Chakra file starts with a GlobalMetadata record")
    meta = pb.GlobalMetadata()
    nodes: list[TraceNode] = []
    last = "the metadata record"
    try:
        for k, (offset, body) in enumerate(records(data)):
            if k == 0:
                try:
                    meta.ParseFromString(body)
                except DecodeError as exc:
                    raise ChakraError(
                        f"{source}: record 0 (offset {offset}): not a GlobalMetadata ({exc})"
                    ) from None
                continue
            msg = pb.Node()
            try:
                msg.ParseFromString(body)
            except DecodeError as exc:
                raise ChakraError(
                    f"{source}: record {k} (offset {offset}, after {last}): not a Node ({exc})"
                ) from None
            node = _node(msg, source)
            nodes.append(node)
            last = node.label()
    except RecordError as exc:
        where = "the GlobalMetadata record" if exc.offset == 0 else f"after {last}"
        raise ChakraError(f"{source}: offset {exc.offset}, {where}: {exc}") from None
    nodes.sort(key=lambda n: n.id)
    prog = Program(source, tuple(nodes), meta.version)
    _check_graph(prog)
    return prog


def _node(msg: pb.Node, source: str) -> TraceNode:
    label = f"node {msg.id} {msg.name!r}" if msg.name else f"node {msg.id}"
    kind = NODE_KIND.get(msg.type)
    if kind is None:
        known = ", ".join(f"{v} {k}" for k, v in sorted(NODE_KIND.items()))
        raise ChakraError(
            f"{source}: {label}: type: {msg.type} is not a Chakra node type ({known})"
        )
    attrs: dict = {}
    for a in msg.attr:
        which = a.WhichOneof("value")
        if which is None:
            continue
        v = getattr(a, which)
        if which.endswith("_list"):
            v = tuple(v.values)
        attrs[a.name] = (which, v)

    def integer(name: str, lo: int = 0) -> int | None:
        got = attrs.get(name)
        if got is None:
            return None
        which, v = got
        if which not in _INT_FIELDS:
            raise ChakraError(f"{source}: {label}: {name}: must be an integer, got {which}")
        if v < lo:
            raise ChakraError(f"{source}: {label}: {name}: must be >= {lo}, got {v}")
        return int(v)

    duration = float(msg.duration_micros) * 1e-6 if msg.duration_micros else None
    exact = attrs.get(DURATION_ATTR)
    if exact is not None:
        if exact[0] not in ("double_val", "float_val") or not exact[1] >= 0:
            raise ChakraError(f"{source}: {label}: {DURATION_ATTR}: must be a double >= 0")
        duration = float(exact[1])
    comm_type = None
    size = integer("comm_size")
    if kind == "COMM_COLL":
        comm_type = integer("comm_type")
        if comm_type is None:
            raise ChakraError(f"{source}: {label}: comm_type: missing (a collective needs it)")
        entry = COMM_TYPES.get(comm_type)
        if entry is None:
            raise ChakraError(
                f"{source}: {label}: comm_type: {comm_type} is not a Chakra collective type"
            )
        name, op = entry
        if op is None and name != "BARRIER":
            raise ChakraError(f"{source}: {label}: comm_type: {name} is not simulated")
        if size is None and name != "BARRIER":
            raise ChakraError(f"{source}: {label}: comm_size: missing (a collective needs it)")
    elif kind in ("COMM_SEND", "COMM_RECV") and size is None:
        raise ChakraError(f"{source}: {label}: comm_size: missing (a {kind} node needs it)")
    if size is None:
        size = integer("tensor_size") or 0
    pg = attrs.get("pg_name")
    if pg is not None and pg[0] != "string_val":
        raise ChakraError(f"{source}: {label}: pg_name: must be a string, got {pg[0]}")
    dims = attrs.get("involved_dim")
    if dims is not None and dims[0] != "bool_list":
        raise ChakraError(f"{source}: {label}: involved_dim: must be a bool_list, got {dims[0]}")
    data = tuple(dict.fromkeys(msg.data_deps))
    deps = data + tuple(d for d in dict.fromkeys(msg.ctrl_deps) if d not in data)
    return TraceNode(
        id=int(msg.id),
        name=msg.name,
        kind=kind,
        deps=deps,
        data_count=len(data),
        duration=duration,
        comm_type=comm_type,
        size=size,
        num_ops=integer("num_ops") or 0,
        src=integer("comm_src"),
        dst=integer("comm_dst"),
        tag=integer("comm_tag") or 0,
        pg_name=pg[1] if pg and pg[1] else None,
        involved_dim=tuple(bool(x) for x in dims[1]) if dims else None,
    )


def _check_graph(prog: Program) -> None:
    """Unique ids, dependencies on existing nodes, no cycle (Kahn's algorithm)."""
    index = prog.index
    if len(index) != len(prog.nodes):
        seen: set[int] = set()
        for n in prog.nodes:
            if n.id in seen:
                raise ChakraError(f"{prog.where(n, 'id')}: the id is used by two nodes")
            seen.add(n.id)
    indeg = [0] * len(prog.nodes)
    succ: list[list[int]] = [[] for _ in prog.nodes]
    for i, n in enumerate(prog.nodes):
        for d in n.deps:
            j = index.get(d)
            if j is None:
                field = "data_deps" if d in n.deps[: n.data_count] else "ctrl_deps"
                raise ChakraError(f"{prog.where(n, field)}: node {d} is not in the trace")
            if j == i:
                raise ChakraError(f"{prog.where(n, 'deps')}: the node depends on itself")
            succ[j].append(i)
            indeg[i] += 1
    ready = deque(i for i, d in enumerate(indeg) if d == 0)
    done = 0
    while ready:
        i = ready.popleft()
        done += 1
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    if done < len(prog.nodes):
        stuck = next(i for i, d in enumerate(indeg) if d > 0)
        cycle = _cycle_from(prog, stuck, indeg)
        path = " waits for ".join(str(prog.nodes[i].id) for i in cycle)
        raise ChakraError(f"{prog.where(prog.nodes[cycle[0]], 'deps')}: a cycle ({path})")


def _cycle_from(prog: Program, start: int, indeg: list[int]) -> list[int]:
    """A cycle among the nodes left with dependencies (each has a predecessor left)."""
    index = prog.index
    seen: dict[int, int] = {}
    path: list[int] = []
    i = start
    while i not in seen:
        seen[i] = len(path)
        path.append(i)
        i = next(index[d] for d in prog.nodes[i].deps if indeg[index[d]] > 0)
    return [*path[seen[i] :], i]


def _spans(ranks: list[int]) -> str:
    out, start = [], ranks[0]
    for a, b in zip(ranks, [*ranks[1:], None], strict=True):
        if b != a + 1:
            out.append(str(start) if start == a else f"{start}-{a}")
            start = b
    return ", ".join(out)
