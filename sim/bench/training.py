"""Wall time of training estimates: one estimate per workload, and the full compare.

Every run starts cold (fabrics reloaded, no memoised collective times), as a fresh
`fred estimate` / `fred compare` would. Targets: one estimate < 1 s; the compare of
all four workloads on the five fabrics < 30 s on 2 cores.
"""

from __future__ import annotations

from fredfab.model.training import shipped_workloads
from fredfab.sim.bench import median_seconds
from fredfab.sim.engines.training import DEFAULT_FABRICS, clear_cache, compare, estimate

NAME = "training"


def _cold(fn):
    def run():
        clear_cache()
        return fn()

    return run


def run(quick: bool = False) -> list[dict]:
    rows = []
    repeat = 3 if quick else 5
    workloads = shipped_workloads()
    for wl in workloads:
        for fab in ("mesh-5x4", "fred-d"):
            e = estimate(wl, fab)
            t = median_seconds(_cold(lambda w=wl, f=fab: estimate(w, f)), repeat=repeat)
            rows.append(
                {
                    "case": f"estimate {wl} on {fab}",
                    "strategy": e.strategy,
                    "median_s": t,
                    "target_s": 1.0,
                    "iteration_ms": e.time * 1e3 if e.time else None,
                }
            )
    for wl in workloads:
        t = median_seconds(_cold(lambda w=wl: compare(w)), repeat=1 if quick else 3, warmup=0)
        rows.append(
            {
                "case": f"compare {wl} ({len(DEFAULT_FABRICS)} fabrics)",
                "median_s": t,
            }
        )

    def all_four():
        for w in workloads:
            compare(w)

    t = median_seconds(_cold(all_four), repeat=1 if quick else 3, warmup=0)
    rows.append({"case": "compare all four workloads", "median_s": t, "target_s": 30.0})
    return rows
