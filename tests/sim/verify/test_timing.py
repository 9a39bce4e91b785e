"""The timing card built from a timing scenario's phase statistics, without a simulator
run: the measurement reads the typed report (slowest slot write, latency, rates)."""

import pytest

from fredfab.hw.params import SwitchParams
from fredfab.model.timing_card import KINDS
from fredfab.sim.verify import cosim
from fredfab.sim.verify.report import PhaseStats, PortStats, ScenarioReport
from fredfab.sim.verify.timing import measurements_from_report


def _report(writes: list[int | None]) -> cosim.CosimResult:
    """A passed timing scenario: every kind at full rate, latency 3, the given per-phase
    slot write cycles (None: the phase wrote no slot)."""
    labels = [f"{k} {c}" for k in KINDS for c in ("ready", "backpressure")]
    labels.append("idle reconfiguration")
    phases = [
        PhaseStats(
            label=label,
            select_cycles=9 + n,
            slot_write_cycles=writes[n % len(writes)],
            in_first=7,
            out={
                0: PortStats(
                    valid_first=10, flits=8, first=10, last=17, ready_first=10, ready_last=17
                )
            },
        )  # fmt: skip
        for n, label in enumerate(labels)
    ]
    sc = ScenarioReport("timing", True, cycles=500, wall_seconds=0.1, in_flits=64, out_flits=64,
                        phases=phases)  # fmt: skip
    return cosim.CosimResult("icarus", "v", cosim.DEFAULT_ROOT, cosim.DEFAULT_ROOT, 0, 0, [sc])


@pytest.mark.needs("icarus")  # the card names the simulator's version
def test_slot_write_cycles_is_the_slowest_write():
    params = SwitchParams(ports=4, m=3, lanes=2, dtype="int16")
    m = measurements_from_report(params, "icarus", _report([None, 4, 6, None]))
    assert m.slot_write_cycles == 6
    assert m.latency_cycles == 3 and m.throughput["unicast"]["ready"] == 1.0
    card = m.card(params)
    assert card.slot_write_cycles == 6 and card.to_dict()["slot_write_cycles"] == 6
