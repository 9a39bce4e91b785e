"""What `fred estimate` writes for a Chakra trace: per-node CSV and a Chrome trace timeline.

* ``--nodes-csv FILE``: one row per node of every rank: rank, npu, node id, name, kind
  (the node type, or the collective), start and end in seconds, bytes.
* ``--timeline FILE``: the Chrome trace-event JSON format (the "JSON Array Format" of
  Google's Trace Event Format document, which Perfetto and chrome://tracing open): complete
  ("X") events with microsecond timestamps, process 1 holding one track (thread) per NPU,
  process 2 one track per link that carried bytes, each busy for the span of every
  communication event that used it.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from fredfab.model.chakra.trace import COMM_TYPES
from fredfab.model.system.fabric import Fabric
from fredfab.sim.atomic import write_text
from fredfab.sim.engines.dag import DagResult

CSV_COLUMNS = ("rank", "npu", "node", "name", "kind", "start_s", "end_s", "bytes")


def node_kind(node) -> str:
    if node.kind == "COMM_COLL":
        return COMM_TYPES[node.comm_type][0]
    return node.kind


def node_rows(res: DagResult):
    trace = res.job.trace
    for r, p in enumerate(trace.rank_program):
        prog = trace.programs[p]
        s, e = res.start[p], res.end[p]
        for i, nd in enumerate(prog.nodes):
            yield (r, res.placement[r], nd.id, nd.name, node_kind(nd), s[i], e[i], nd.size)


def write_nodes_csv(res: DagResult, path: str | Path) -> Path:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for row in node_rows(res):
        w.writerow((*row[:5], repr(float(row[5])), repr(float(row[6])), row[7]))
    return write_text(path, buf.getvalue())


def timeline(res: DagResult, fabric: Fabric) -> dict:
    """The Chrome trace-event document of ``res``."""
    us = 1e6
    ev: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "NPUs"}},
        {"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "links"}},
    ]
    for r in range(res.job.trace.num_ranks):
        ev.append(
            {
                "name": "thread_name",
                "ph": "M",
                "pid": 1,
                "tid": r,
                "args": {"name": f"rank {r} (NPU {res.placement[r]})"},
            }
        )
    for r, npu, nid, name, kind, s, e, size in node_rows(res):
        ev.append(
            {
                "name": name or f"node {nid}",
                "cat": kind,
                "ph": "X",
                "pid": 1,
                "tid": r,
                "ts": float(s) * us,
                "dur": float(e - s) * us,
                "args": {"node": nid, "npu": npu, "bytes": size},
            }
        )
    names = [n.name for n in fabric.nodes]
    named: set[int] = set()
    for k, (s, e, links) in enumerate(res.events):
        kind = res.job.events[k].kind
        for lk in links:
            if lk not in named:
                named.add(lk)
                ev.append(
                    {
                        "name": "thread_name",
                        "ph": "M",
                        "pid": 2,
                        "tid": lk,
                        "args": {
                            "name": f"{names[fabric.link_src[lk]]} -> {names[fabric.link_dst[lk]]}"
                        },
                    }
                )
            ev.append(
                {
                    "name": kind,
                    "cat": "link",
                    "ph": "X",
                    "pid": 2,
                    "tid": lk,
                    "ts": s * us,
                    "dur": (e - s) * us,
                }
            )
    return {"traceEvents": ev, "displayTimeUnit": "ns"}


def write_timeline(res: DagResult, fabric: Fabric, path: str | Path) -> Path:
    return write_text(path, json.dumps(timeline(res, fabric)))
