"""Wall time of the system simulator: one wafer-wide All-Reduce, by NPU count and chunks.

Rows: the paper's 20-NPU fabrics, growth with chunk count, and growth with NPU count:
meshes from 4 x 4 to 32 x 32 (1,024 NPUs, target < 10 s) and FRED trees from 16 to 4,096
NPUs (target < 5 s), all exact (resolution 0) unless the row says otherwise. Each row gives
the median wall and CPU time of simulate() (schedule building + simulation), the simulated
time, and the transfer and event counts that drive the cost. CPU time is the steadier figure
on a shared machine. Router checks of in-switch configurations are memoised per process; the
first, cold run pays for them and is reported as cold_s, so medians are the simulation alone.
"""

from __future__ import annotations

import statistics
import time

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.system import CollectiveRequest, fred_tree, load_fabric, mesh
from fredfab.sim.engines.system import simulate

NAME = "system_collectives"
SIZE = 64 * 2**20  # 64 MiB per NPU: a DP gradient bucket
TREE_BW = (3e12, 12e12, 48e12)  # per level, NPU links first


def _tree(radix: list[int], in_switch: bool):
    kind = "fred" if in_switch else "tree"
    name = f"{kind}-" + "x".join(map(str, radix))
    return fred_tree(radix, list(TREE_BW[: len(radix)]), in_switch=in_switch, name=name)


def _row(case: str, fab, chunks: int, repeat: int, resolution: float = 0.0) -> dict:
    req = [CollectiveRequest(CollectiveKind.ALL_REDUCE, range(fab.num_npus), SIZE)]

    def go():
        return simulate(fab, req, chunks=chunks, resolution=resolution)

    t0 = time.perf_counter()
    res = go()
    cold = time.perf_counter() - t0
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        go()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return {
        "case": case,
        "fabric": fab.name,
        "npus": fab.num_npus,
        "chunks": chunks,
        "resolution_ns": resolution * 1e9,
        "algorithm": res.requests[0].algorithm,
        "transfers": res.transfers,
        "events": res.events,
        "sim_time_us": res.time * 1e6,
        "cold_s": cold,
        "median_s": statistics.median(walls),
        "median_cpu_s": statistics.median(cpus),
    }


def run(quick: bool) -> list[dict]:
    rep_small = 3 if quick else 9
    rep_big = 1 if quick else 3
    rows = []
    for name in ("mesh-5x4", "fred-a", "fred-b", "fred-c", "fred-d"):
        rows.append(_row("20-NPU wafer", load_fabric(name), 2, rep_small))
    for ch in (1, 4) if quick else (1, 2, 4, 8):
        rows.append(_row("chunks", load_fabric("mesh-5x4"), ch, rep_small))
        rows.append(_row("chunks", load_fabric("fred-a"), ch, rep_small))
    for s in (4, 8, 16) if quick else (4, 8, 16, 24, 32):
        rows.append(_row("mesh npus", mesh(s, s), 2, rep_big))
    if not quick:
        rows.append(_row("mesh npus", mesh(32, 32), 2, rep_big, resolution=20e-9))
    trees = [[4, 4], [8, 8], [16, 16], [32, 32]]
    if not quick:
        trees += [[64, 64], [16, 16, 16]]
    for radix in trees:
        rows.append(_row("tree npus", _tree(radix, in_switch=False), 2, rep_big))
    # In-switch trees: the largest root switch whose router check stays short when cold.
    for radix in [[4, 4], [32, 32]] if quick else [[4, 4], [16, 16], [32, 32], [16, 16, 16]]:
        rows.append(_row("tree npus", _tree(radix, in_switch=True), 2, rep_big))
    return rows
