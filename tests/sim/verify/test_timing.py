"""The timing card built from a timing scenario's phase statistics, without a simulator
run: the per-phase slot write statistic is read under its current and its former name."""

import pytest

from fredfab.hw.params import SwitchParams
from fredfab.model.timing_card import KINDS
from fredfab.sim.verify import cosim
from fredfab.sim.verify.timing import measurements_from_report
from fredfab.sim.verify.toolchain import have_icarus


def _report(write_key: str, writes: list[int | None]) -> cosim.CosimResult:
    """A passed timing scenario: every kind at full rate, latency 3, the given per-phase
    slot write cycles under ``write_key``."""
    out = {"flits": 8, "first": 10, "last": 17, "ready_first": 10, "ready_last": 17}
    phases = []
    labels = [f"{k} {c}" for k in KINDS for c in ("ready", "backpressure")]
    labels.append("idle reconfiguration")
    for n, label in enumerate(labels):
        phases.append(
            {
                "label": label,
                "out": {0: {**out, "valid_first": 10}},
                "in_first": 7,
                "select_cycles": 9 + n,
                write_key: writes[n % len(writes)],
            }
        )
    sc = cosim.ScenarioResult("timing", True, None, None, 500, 0.1, 64, 64, phases)
    return cosim.CosimResult("icarus", "v", cosim.DEFAULT_ROOT, cosim.DEFAULT_ROOT, 0, 0, [sc])


@pytest.mark.parametrize("key", ["slot_write_cycles", "load_cycles"])
def test_slot_write_cycles_read_under_either_name(key):
    if not have_icarus():
        pytest.skip("Icarus Verilog not installed (the card names the simulator's version)")
    params = SwitchParams(ports=4, m=3, lanes=2, dtype="int16")
    m = measurements_from_report(params, "icarus", _report(key, [None, 4, 6, None]))
    assert m.slot_write_cycles == 6
    assert m.latency_cycles == 3 and m.throughput["unicast"]["ready"] == 1.0
    card = m.card(params)
    assert card.slot_write_cycles == 6 and card.to_dict()["slot_write_cycles"] == 6
