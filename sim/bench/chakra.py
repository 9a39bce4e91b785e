"""Reading and simulating Chakra traces: a 1,024-NPU job of 10,000 nodes per rank.

The job (target: read and simulated in under 10 s) is data parallel, every rank alike:
blocks of nine compute nodes in a chain, each block's gradients all-reduced over all ranks
(four sizes in turn, 1 to 8 MiB) while the next block computes, on a 1,024-NPU FRED tree
(32 L1 switches of 32 NPUs, in-switch collectives). Rows give the median wall and CPU time
of reading (files to checked programs), of the simulation and of both, and the iteration
time; CPU time is the steadier figure on a shared machine. The first, cold run (cold_s)
pays once per process for the router check of the in-switch configurations and is left out
of the medians. The files are written to a temporary folder first (not timed) and removed
afterwards.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from fredfab.model.chakra import read_trace, write_trace
from fredfab.model.chakra.trace import TraceNode
from fredfab.model.system import fred_tree
from fredfab.sim.engines.dag import simulate_trace

NAME = "chakra"
SIZES = (1 << 20, 2 << 20, 4 << 20, 8 << 20)


def dp_program(nodes: int, block: int = 10, compute_s: float = 50e-6) -> list[TraceNode]:
    """``nodes`` nodes: per block, block - 1 chained compute nodes then an all-reduce of
    the block's gradients (depending on its last compute node)."""
    out: list[TraceNode] = []
    last = None
    for i in range(nodes):
        deps = () if last is None else (last,)
        if i % block == block - 1:
            size = SIZES[(i // block) % len(SIZES)]
            out.append(TraceNode(i, f"ar{i}", "COMM_COLL", deps, len(deps), comm_type=0, size=size))
        else:
            out.append(TraceNode(i, f"c{i}", "COMP", deps, len(deps), duration=compute_s))
            last = i
    return out


def _row(ranks: int, nodes: int, repeat: int, compress: bool) -> dict:
    fab = fred_tree([32, ranks // 32], [3e12, 12e12], in_switch=True, name=f"fred-32x{ranks // 32}")
    with tempfile.TemporaryDirectory() as tmp:
        prefix = Path(tmp) / "dp"
        write_trace(prefix, [dp_program(nodes)] * ranks, compress=compress)
        c0, t0 = time.process_time(), time.perf_counter()
        res = simulate_trace(read_trace(prefix), fab)
        cold, cold_cpu = time.perf_counter() - t0, time.process_time() - c0
        reads, sims, totals, cpus = [], [], [], []
        for _ in range(repeat):
            c0, t0 = time.process_time(), time.perf_counter()
            trace = read_trace(prefix)
            t1 = time.perf_counter()
            res = simulate_trace(trace, fab)
            t2 = time.perf_counter()
            cpus.append(time.process_time() - c0)
            reads.append(t1 - t0)
            sims.append(t2 - t1)
            totals.append(t2 - t0)
    return {
        "case": "dp job, identical ranks",
        "fabric": fab.name,
        "ranks": ranks,
        "nodes_per_rank": nodes,
        "gzip": compress,
        "iteration_ms": res.time * 1e3,
        "exposed_ms": res.exposed_comm * 1e3,
        "cold_s": cold,
        "cold_cpu_s": cold_cpu,
        "read_s": statistics.median(reads),
        "simulate_s": statistics.median(sims),
        "total_s": statistics.median(totals),
        "total_cpu_s": statistics.median(cpus),
        "target_s": 10.0,
    }


def run(quick: bool) -> list[dict]:
    rep = 1 if quick else 3
    rows = [_row(1024, 10_000, rep, compress=False)]
    if not quick:
        rows.append(_row(1024, 10_000, rep, compress=True))
    return rows
