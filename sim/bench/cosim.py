"""Co-simulation speed: cocotb cycles per second on Icarus and Verilator for P = 8 and 16,
the self-checking RTL soak (no Python per cycle) next to it, the wall time of the default
co-simulation suite, the wider sweep (pytest -m slow), and the measured timing card of the
demo variant (P = 8, m = 3, 4 bf16 lanes) on both simulators.

Rows have a ``what`` column: ``cocotb`` / ``soak`` (cycles_per_s), ``suite`` (wall_s, tests),
``timing`` (the card's figures). Build times are reported separately from run times.
``--quick`` shortens the runs, uses cached builds for the suite and skips the wide sweep.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fredfab.hw.params import SwitchParams
from fredfab.model.switch.flow import Flow
from fredfab.sim.verify import cosim
from fredfab.sim.verify.scenario_file import Scenario
from fredfab.sim.verify.scenarios import ScenarioBuilder

NAME = "cosim"
REPO = Path(__file__).resolve().parents[2]
SPEED_VARIANTS = [SwitchParams(ports=P, m=3, lanes=4, dtype="int16") for P in (8, 16)]
CARD_VARIANT = SwitchParams(ports=8, m=3, lanes=4, dtype="bf16")


def _speed_scenario(params: SwitchParams, flits_per_port: int) -> Scenario:
    """Long traffic: an All-Reduce over half the ports next to a permutation of the rest,
    then the reverse, under random idles and backpressure."""
    b = ScenarioBuilder(params, 7)
    P, h = params.ports, params.ports // 2
    sets = [
        [Flow(range(h), range(h))] + [Flow([p], [P - 1 - (p - h)]) for p in range(h, P)],
        [Flow(range(h, P), range(h, P))] + [Flow([p], [h - 1 - p]) for p in range(h)],
    ]
    packets = max(1, flits_per_port // 5)
    phases = [
        b.flows_phase(flows, f"speed {k}", packets=packets, max_packet=8, edge_cases=False)
        for k, flows in enumerate(sets)
    ]
    return b.scenario("speed", phases, "random", "random", 7)


def _cocotb_rows(quick: bool) -> list[dict]:
    rows = []
    for sim in cosim.SIMULATORS:
        for params in SPEED_VARIANTS:
            flits = 100 if quick else (300 if sim == "icarus" else 1500)
            t0 = time.perf_counter()
            b = cosim.build(params, sim)
            build_s = time.perf_counter() - t0
            res = cosim.run(params, sim, [_speed_scenario(params, flits)], label="speed")
            sc = res.scenarios[0]
            rows.append(
                {
                    "what": "cocotb",
                    "sim": sim,
                    "variant": params.name,
                    "passed": sc.passed,
                    "cycles": sc.cycles,
                    "run_s": sc.wall_seconds,
                    "cycles_per_s": sc.cycles / sc.wall_seconds,
                    "process_s": res.wall_seconds,
                    "build_s": b.seconds or build_s,
                }
            )
    return rows


def _soak_rows(quick: bool) -> list[dict]:
    from fredfab.sim.verify.soak import soak

    rows = []
    runs = [("verilator", p, 100_000 if quick else 1_000_000) for p in SPEED_VARIANTS]
    runs += [("icarus", SPEED_VARIANTS[1], 2_000 if quick else 20_000)]
    for sim, params, cycles in runs:
        t0 = time.perf_counter()
        r = soak(params, cycles, sim)
        rows.append(
            {
                "what": "soak",
                "sim": sim,
                "variant": params.name,
                "passed": r.errors == 0 and min(r.out_flits) > 0,
                "cycles": r.clocked,
                "run_s": r.seconds,
                "cycles_per_s": r.cycles_per_second,
                "process_s": time.perf_counter() - t0 - r.build_seconds,
                "build_s": r.build_seconds,
                "flits_out": sum(r.out_flits),
                "errors": r.errors,
            }
        )
    return rows


def _pytest(args: list[str], env: dict) -> dict:
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/sim/verify/test_cosim.py", "-q", "-n", "2", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    tail = (r.stdout.strip().splitlines() or [""])[-1]
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|error)", tail)}
    return {"wall_s": wall, "tests": counts.get("passed", 0), "failed": counts.get("failed", 0)}


def _suite_rows(quick: bool) -> list[dict]:
    rows = []
    env = dict(os.environ)
    warm = _pytest(["-m", "not slow"], env)
    rows.append({"what": "suite", "sim": "both", "variant": "default (cached builds)", **warm})
    if not quick:
        with tempfile.TemporaryDirectory(prefix="fred-cosim-") as tmp:
            cold = _pytest(["-m", "not slow"], {**env, "FRED_COSIM_ROOT": tmp})
        rows.append({"what": "suite", "sim": "both", "variant": "default (cold: no cache)", **cold})
        wide = _pytest(["-m", "slow"], env)
        rows.append({"what": "suite", "sim": "both", "variant": "wide sweep (-m slow)", **wide})
    return rows


def _timing_rows() -> list[dict]:
    from fredfab.sim.verify.timing import measure_timing

    rows = []
    for sim in cosim.SIMULATORS:
        m = measure_timing(CARD_VARIANT, sim)
        row = {
            "what": "timing",
            "sim": m.simulator,
            "variant": m.variant,
            "latency": m.latency_cycles,
            "reconf_idle": m.reconfiguration_idle_cycles,
            "reconf_after_traffic": m.reconfiguration_after_traffic_cycles,
            "reconf_after_bp": m.reconfiguration_after_backpressure_cycles,
            "slot_write": m.slot_write_cycles,
        }
        for kind, v in m.throughput.items():
            row[f"{kind}_ready"] = v["ready"]
            row[f"{kind}_bp"] = v["backpressure"]
        rows.append(row)
    return rows


def run(quick: bool = False) -> list[dict]:
    return _cocotb_rows(quick) + _soak_rows(quick) + _timing_rows() + _suite_rows(quick)
