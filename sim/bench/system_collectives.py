"""Wall time of the system simulator: one wafer-wide All-Reduce, by NPU count and chunks.

Rows: the paper's 20-NPU fabrics (target < 50 ms), 1,024-NPU fabrics (target < 5 s),
growth with NPU count (meshes and FRED trees) and with chunk count. Each row gives the
median wall time of simulate() (schedule building + simulation), the simulated time, and the
transfer and event counts that drive the cost. Router checks of in-switch configurations are
memoised per process; the warm-up run pays for them, so medians are the simulation alone
(the first, cold run is reported as cold_s).
"""

from __future__ import annotations

import time

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.system import CollectiveRequest, fred_tree, load_fabric, mesh
from fredfab.sim.bench import median_seconds
from fredfab.sim.engines.system import simulate

NAME = "system_collectives"
SIZE = 64 * 2**20  # 64 MiB per NPU: a DP gradient bucket


def _row(case: str, fab, chunks: int, repeat: int, resolution: float = 0.0) -> dict:
    req = [CollectiveRequest(CollectiveKind.ALL_REDUCE, range(fab.num_npus), SIZE)]

    def go():
        return simulate(fab, req, chunks=chunks, resolution=resolution)

    t0 = time.perf_counter()
    res = go()
    cold = time.perf_counter() - t0
    wall = median_seconds(go, repeat=repeat, warmup=0)
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
        "median_s": wall,
    }


def run(quick: bool) -> list[dict]:
    rep_small = 3 if quick else 9
    rep_big = 1 if quick else 3
    rows = []
    for name in ("mesh-5x4", "fred-a", "fred-b", "fred-c", "fred-d"):
        rows.append(_row("20-NPU wafer", load_fabric(name), 2, rep_small))
    for ch in (1, 2, 4, 8) if not quick else (1, 4):
        rows.append(_row("chunks", load_fabric("mesh-5x4"), ch, rep_small))
        rows.append(_row("chunks", load_fabric("fred-a"), ch, rep_small))
    sides = (4, 8, 16) if quick else (4, 8, 16, 24)
    for s in sides:
        res = 20e-9 if s > 16 else 0.0  # exact up to 16 x 16; see docs/system-model.md
        rows.append(_row("npu count", mesh(s, s), 2, rep_big, resolution=res))
    for r in (4, 8, 16) if quick else (4, 8, 16, 24):
        rows.append(
            _row("npu count", fred_tree([r, r], [3e12, 12e12], in_switch=False), 2, rep_big)
        )
    big = [
        ("1024-NPU", mesh(32, 32), 1, 0.0),
        ("1024-NPU", mesh(32, 32), 2, 20e-9),
        (
            "1024-NPU",
            fred_tree([32, 32], [3e12, 12e12], in_switch=False, name="fred-c-1024"),
            2,
            0.0,
        ),
        (
            "1024-NPU",
            fred_tree([32, 32], [3e12, 12e12], in_switch=True, name="fred-d-1024"),
            2,
            0.0,
        ),
        ("1024-NPU", fred_tree([8, 8, 16], [3e12, 12e12, 48e12], in_switch=False), 2, 0.0),
    ]
    for case, fab, ch, res in big:
        rows.append(_row(case, fab, ch, rep_big, res))
    return rows
