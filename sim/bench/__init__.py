"""Benchmarks run by `make bench` (python -m fredfab.sim.bench).

Each module here exposes ``NAME`` and ``run(quick: bool) -> list[dict]``: a list of rows
(flat dicts of str/int/float). The runner writes them to build/bench/<NAME>.json and prints
them as a table. Timings are medians of repeated runs measured in one process, so that
ratios between rows are meaningful on a shared, noisy machine.
"""

import statistics
import time
from collections.abc import Callable


def median_seconds(fn: Callable[[], object], repeat: int = 7, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` over ``repeat`` runs after ``warmup`` untimed runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
