"""Manifest-driven cocotb bench of a generated FRED switch: one cocotb test per scenario.

Environment (set by fredfab.sim.verify.cosim):

* ``FRED_COSIM_SCENARIOS``: the scenario file (fredfab.sim.verify.scenario_file, schema
  ``fred-cosim-scenarios/1``) naming the switch manifest and listing the scenarios; one
  cocotb test is registered per scenario, under its name.
* ``FRED_COSIM_REPORT``: the report file (fredfab.sim.verify.report, schema
  ``fred-cosim-report/1``) this bench rewrites after every test with what it measured and the
  first mismatching flit, so that the runner reports without parsing logs.

Each test resets the switch and runs its scenario in a ``SwitchEnv`` (env.py): a flit
source per input port with an idle pattern (drivers.py), a sink per output port with a
backpressure pattern (monitors.py), the patterns of patterns.py, the phase sequencer
(sequencer.py: slot writes under traffic, phase changes, reset mid-traffic), a monitor of
per-phase timing (monitors.py) and a bit-exact scoreboard (scoreboard.py).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import cocotb

from fredfab.sim.verify.cocotb_bench.env import SwitchEnv
from fredfab.sim.verify.cocotb_bench.harness import SwitchHarness
from fredfab.sim.verify.report import REPORT_ENV, CosimReport
from fredfab.sim.verify.scenario_file import SCENARIOS_ENV, Scenario, ScenarioFile


def _load() -> tuple[dict, list[Scenario]]:
    """The manifest and the scenarios (none when imported outside a co-simulation run)."""
    path = os.environ.get(SCENARIOS_ENV)
    if not path:
        return {}, []
    spec = ScenarioFile.read(Path(path))
    return json.loads(spec.manifest.read_text()), spec.scenarios


MANIFEST, SCENARIOS = _load()
REPORT = CosimReport()


async def run_scenario(dut, scenario: Scenario) -> None:
    harness = SwitchHarness(dut, MANIFEST)
    await harness.start()
    env = SwitchEnv(harness, scenario)
    t0 = time.perf_counter()
    error = None
    try:
        await env.run()
    except AssertionError as exc:
        error = str(exc)
    REPORT.scenarios[scenario.name] = env.report(error, time.perf_counter() - t0)
    path = os.environ.get(REPORT_ENV)
    if path:
        REPORT.write(Path(path))
    assert error is None, error


def _register(scenario: Scenario):
    async def test(dut) -> None:
        await run_scenario(dut, scenario)

    test.__name__ = test.__qualname__ = scenario.name
    test.__doc__ = scenario.doc or scenario.name
    return cocotb.test(name=scenario.name)(test)


for _sc in SCENARIOS:
    globals()[f"test_{_sc.name}"] = _register(_sc)
