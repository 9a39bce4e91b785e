"""Start-up of the `fred` command: whole-process wall and CPU time of short commands, the
medians of several runs (the README's start-up figures; each command loads only what it
uses, tests/sim/cli/test_startup.py)."""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

NAME = "cli_startup"

#: Short commands a user meets first (timing is reported here, never asserted in a test).
COMMANDS = (
    ("--help",),
    ("route", "--ports", "8", "--flow", "0-3:0-3"),
    ("collective", "--fabric", "fred-d", "--op", "all-reduce", "--group", "0-3", "--size", "1MiB"),
    ("estimate", "--workload", "transformer-17b", "--fabric", "fred-d"),
    ("generate", "--help"),
)


def fred_command() -> list[str]:
    """The console script next to this Python, as a user runs it."""
    script = Path(sys.executable).with_name("fred")
    return [str(script)] if script.exists() else [sys.executable, "-m", "fredfab.sim.cli"]


def _one(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU (user + system of the child) seconds of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def run(quick: bool = False) -> list[dict]:
    repeats = 3 if quick else 7
    fred = fred_command()
    rows = []
    for args in COMMANDS:
        _one([*fred, *args])  # warm the file cache
        runs = [_one([*fred, *args]) for _ in range(repeats)]
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        rows.append(
            {
                "command": "fred " + " ".join(args),
                "runs": repeats,
                "median_wall_s": statistics.median(walls),
                "min_wall_s": min(walls),
                "median_cpu_s": statistics.median(cpus),
                "load_1min": os.getloadavg()[0],  # a shared machine shows here
            }
        )
    return rows
