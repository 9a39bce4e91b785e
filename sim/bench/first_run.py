"""The first run of a new user: `make demo` in a fresh clone, from no .venv and no build/.

The checkout's committed HEAD is cloned into a scratch folder; there ``make .venv/.installed``
(the virtual environment: scripts/bootstrap.sh, from pip's cache when it is warm) and then
``make demo`` are timed, which is what the first ``make demo`` does in one go. Each demo step
is timed by the demo itself (its ``(N s)`` lines); a second ``make demo`` in the same clone
shows what the caches under build/ leave. Besides wall seconds, the CPU seconds of every
process each phase ran (user + system): on a machine shared with other jobs the wall time
stretches with the load, the CPU time much less. The load average at the start and the end says
how busy the machine was (timings on a shared machine are noisy: quote medians of repeats).
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

NAME = "first_run"
#: Cold runs per benchmark (each a clone, a venv and a demo: about two minutes).
REPEATS, QUICK_REPEATS = 3, 1

_STEP = re.compile(r"^=== (\d)\.", re.M)
_SECONDS = re.compile(r"^\((\d+(?:\.\d+)?) s\)$", re.M)


def checkout() -> Path:
    """The git checkout this package runs from (an editable install)."""
    import fredfab.sim

    root = Path(fredfab.sim.__path__[0]).resolve().parent
    if not (root / ".git").exists() or not (root / "Makefile").is_file():
        raise RuntimeError(f"first_run needs a git checkout with a Makefile; {root} is not one")
    return root


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system of every process it ran) and stdout of
    ``cmd``; the CPU time depends far less on what else the machine runs."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "FRED_COSIM_ROOT")}
    cpu0, t0 = _children_cpu(), time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    seconds, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed in {cwd} ({r.returncode}):\n{r.stderr[-2000:]}")
    return seconds, cpu, r.stdout


def step_seconds(demo_stdout: str) -> dict[str, float]:
    """Seconds per numbered demo step (a step's sub-steps added to it), from its output."""
    steps: dict[str, float] = {}
    current = "0"
    marks = sorted(
        [(m.start(), "step", m.group(1)) for m in _STEP.finditer(demo_stdout)]
        + [(m.start(), "time", m.group(1)) for m in _SECONDS.finditer(demo_stdout)]
    )
    for _, kind, value in marks:
        if kind == "step":
            current = value
        else:
            steps[f"step{current}_s"] = steps.get(f"step{current}_s", 0.0) + float(value)
    return steps


def one_cold_run(source: Path) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="fred-first-run-"))
    try:
        clone = scratch / "fred-fabric"
        subprocess.run(["git", "clone", "-q", str(source), str(clone)], check=True)
        load_before = os.getloadavg()[0]
        venv, venv_cpu, _ = _timed(["make", ".venv/.installed"], clone)
        demo, demo_cpu, out = _timed(["make", "demo"], clone)
        again, again_cpu, _ = _timed(["make", "demo"], clone)
        return {
            "first_make_demo_s": venv + demo,
            "venv_s": venv,
            "demo_s": demo,
            **step_seconds(out),
            "second_make_demo_s": again,
            "first_make_demo_cpu_s": venv_cpu + demo_cpu,
            "venv_cpu_s": venv_cpu,
            "demo_cpu_s": demo_cpu,
            "second_make_demo_cpu_s": again_cpu,
            "load_before": round(load_before, 2),
            "load_after": round(os.getloadavg()[0], 2),
        }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run(quick: bool = False) -> list[dict]:
    source = checkout()
    runs = [one_cold_run(source) for _ in range(QUICK_REPEATS if quick else REPEATS)]
    rows = [{"what": f"run {k + 1}", **r} for k, r in enumerate(runs)]
    if len(runs) > 1:
        keys = [k for k in runs[0] if isinstance(runs[0][k], float)]
        rows.append({"what": "median", **{k: statistics.median(r[k] for r in runs) for k in keys}})
    return rows
