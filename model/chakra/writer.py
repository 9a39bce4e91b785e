"""Write a Chakra job: one ``PREFIX.R.et`` per rank (gzipped as ``.et.gz`` on request).

The inverse of reader.py: a GlobalMetadata record (version ``WRITER_VERSION``), then one
Node per TraceNode; the communicator groups go to ``PREFIX.comm_groups.json``, the file
ASTRA-sim 2.x takes as ``--comm-group-configuration``. Files are written under temporary
names and renamed into place, and the files of a job that fails part way are removed, so a
failed run leaves no partial job.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from fredfab.model.chakra import et_def_pb2 as pb
from fredfab.model.chakra.reader import GROUPS_SUFFIX
from fredfab.model.chakra.records import frame
from fredfab.model.chakra.trace import DURATION_ATTR, NODE_TYPES, TraceNode

#: The Chakra schema version the files claim (the GlobalMetadata of chakra's generator).
WRITER_VERSION = "0.0.4"


def node_message(n: TraceNode) -> pb.Node:
    """The protobuf Node of ``n``; attribute types as ASTRA-sim's feeder reads them."""
    data = n.deps[: n.data_count]
    msg = pb.Node(
        id=n.id,
        name=n.name,
        type=NODE_TYPES[n.kind],
        data_deps=data,
        ctrl_deps=n.deps[n.data_count :],
    )
    attr = msg.attr
    attr.add(name="is_cpu_op", bool_val=False)
    if n.duration is not None:
        msg.duration_micros = round(n.duration * 1e6)
        attr.add(name=DURATION_ATTR, double_val=n.duration)
    if n.kind == "COMM_COLL":
        attr.add(name="comm_type", int64_val=n.comm_type)
        attr.add(name="comm_size", int64_val=n.size)
    elif n.kind in ("COMM_SEND", "COMM_RECV"):
        attr.add(name="comm_size", int64_val=n.size)
        attr.add(name="comm_src", int32_val=n.src)
        attr.add(name="comm_dst", int32_val=n.dst)
        attr.add(name="comm_tag", int32_val=n.tag)
    elif n.size:
        attr.add(name="tensor_size", uint64_val=n.size)
    if n.num_ops:
        attr.add(name="num_ops", int64_val=n.num_ops)
    if n.pg_name is not None:
        attr.add(name="pg_name", string_val=n.pg_name)
    if n.involved_dim is not None:
        attr.add(name="involved_dim", bool_list=pb.BoolList(values=n.involved_dim))
    return msg


def encode_program(nodes: Sequence[TraceNode]) -> bytes:
    """The bytes of one rank's file (uncompressed)."""
    parts = [frame(pb.GlobalMetadata(version=WRITER_VERSION).SerializeToString())]
    parts += [frame(node_message(n).SerializeToString()) for n in nodes]
    return b"".join(parts)


def write_trace(
    prefix: str | Path,
    ranks: Sequence[Sequence[TraceNode]],
    comm_groups: Mapping[str, Sequence[int]] | None = None,
    *,
    compress: bool = False,
) -> list[Path]:
    """Write rank r's nodes to ``PREFIX.r.et`` (``.et.gz`` with ``compress``); return the
    files written (the groups' file last, when there are groups). Ranks with the same nodes
    are encoded once."""
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    suffix = ".et.gz" if compress else ".et"
    encoded: dict[int, bytes] = {}
    out: list[Path] = []
    try:
        for r, nodes in enumerate(ranks):
            key = id(nodes)
            data = encoded.get(key)
            if data is None:
                data = encode_program(nodes)
                if compress:
                    data = gzip.compress(data, compresslevel=6, mtime=0)
                encoded[key] = data
            out.append(_write(Path(f"{prefix}.{r}{suffix}"), data))
        if comm_groups:
            text = json.dumps({k: list(v) for k, v in comm_groups.items()}, indent=1)
            out.append(_write(Path(f"{prefix}{GROUPS_SUFFIX}"), text.encode()))
    except BaseException:  # the ranks written so far are not a job: none of them stays
        for path in out:
            path.unlink(missing_ok=True)
        raise
    return out


def _write(path: Path, data: bytes) -> Path:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError as exc:  # about the file asked for, not the temporary name
        tmp.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
    return path
