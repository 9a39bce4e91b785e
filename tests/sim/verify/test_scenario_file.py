"""The scenario file and the report (sim/verify/scenario_file.py, sim/verify/report.py): the
typed contract between the scenario builder, the runner and the cocotb bench."""

from __future__ import annotations

import json

import pytest

from fredfab.hw.params import SwitchParams
from fredfab.sim.verify.report import (
    CosimReport,
    FlitMismatch,
    PhaseStats,
    PortStats,
    ScenarioReport,
)
from fredfab.sim.verify.scenario_file import SCENARIO_SCHEMA, Phase, ScenarioFile
from fredfab.sim.verify.scenarios import PATTERNS, standard_scenarios
from fredfab.sim.verify.timing import timing_scenario


def test_scenarios_survive_the_file(tmp_path):
    params = SwitchParams(ports=4, m=2, lanes=2, dtype="int16")
    scenarios = standard_scenarios(params, 2) + [timing_scenario(params)]
    path = tmp_path / "scenarios.json"
    ScenarioFile(tmp_path / "switch.json", scenarios).write(path)
    back = ScenarioFile.read(path)
    assert back.manifest == tmp_path / "switch.json"
    assert back.scenarios == scenarios
    raw = json.loads(path.read_text())
    assert raw["schema"] == SCENARIO_SCHEMA
    idle = {s.name: s.idle for s in scenarios}
    for sc in raw["scenarios"]:
        assert sc["idle"] == idle[sc["name"]].to_json()
        assert sc["idle"] in [p.to_json() for p in PATTERNS.values()]


def test_a_file_of_another_schema_is_refused(tmp_path):
    path = tmp_path / "scenarios.json"
    path.write_text(json.dumps({"schema": "fred-cosim-scenarios/0", "scenarios": []}))
    with pytest.raises(ValueError, match="expected 'fred-cosim-scenarios/1'"):
        ScenarioFile.read(path)


def test_a_slot_needs_its_words():
    with pytest.raises(ValueError, match="a slot needs its words"):
        Phase("p", slot=1, words=None)


def test_reports_survive_the_file(tmp_path):
    stats = PhaseStats("all-reduce ready", select_cycles=7, slot_write_cycles=12, in_first=3)
    stats.in_last, stats.in_flits = 40, 38
    stats.out = {2: PortStats(valid_first=5, flits=3, first=5, last=9, ready_first=4)}
    mismatch = FlitMismatch(
        "mismatch", 2, 1, 17, (0x20001, 1), "mismatch on output port 2, flit 1", (1, 1), "a", 1
    )
    report = CosimReport(
        {
            "a": ScenarioReport("a", False, "boom", mismatch, 20, 0.5, 38, 3, [stats]),
            "b": ScenarioReport("b", True, cycles=4),
        }
    )
    path = tmp_path / "report.json"
    report.write(path)
    assert CosimReport.read(path) == report
    phase = json.loads(path.read_text())["scenarios"]["a"]["phases"][0]
    assert phase["slot_write_cycles"] == 12 and "load_cycles" not in phase
    assert phase["out"]["2"]["ready_first"] == 4
