"""The switch bench's latency rule (sim/verify/cocotb_bench/latency.py) on recorded cycles,
without a simulator: what it accepts and rejects for a flit taken by a fork before its
operands' handshake."""

from __future__ import annotations

import json

import pytest

from fredfab.hw.params import SwitchParams
from fredfab.sim.verify import cosim
from fredfab.sim.verify.cocotb_bench.latency import LatencyCheck
from fredfab.sim.verify.scenarios import standard_scenarios

ROOT = cosim.shared_build_root()
#: The 2-port switch of the wide sweep whose all-reduce showed it: output 1 ready, output 0
#: stalled on flit 0; flit 2's operands offered in cycle 8 and not accepted (output 0 has yet
#: to take its copy), yet output 1 shows their sum in cycle 9.
PARAMS = SwitchParams(ports=2, m=2, lanes=1, dtype="int8")


@pytest.fixture(scope="module")
def check() -> LatencyCheck:
    _, manifest = cosim.rtl(PARAMS, ROOT)
    scenario = standard_scenarios(PARAMS, 100, ["all_reduce"])[0]
    lat = LatencyCheck(json.loads(manifest.read_text()), scenario)
    for port in (0, 1):
        for cycle in (6, 7):  # flits 0 and 1: offered and accepted at once
            lat.input_offered(0, port, cycle)
            lat.input_accepted(0, port, cycle)
        lat.input_offered(0, port, 8)  # flit 2: offered, its handshake still waiting
    return lat


def test_the_path_has_a_register(check):
    """Output 1 hears both inputs through one register slice: not a path of no cycles."""
    assert check.paths[0][1] == {0: 1, 1: 1}


def test_a_fork_copy_before_the_handshake_is_on_time_under_backpressure(check):
    """Offered in 8, one register: valid in 9 is allowed while an output has stalled."""
    assert check.check(0, 1, 2, valid_cycle=9, last_stall=8) is None


def test_earlier_than_offer_plus_path_is_rejected(check):
    wrong = check.check(0, 1, 2, valid_cycle=8, last_stall=8)
    assert wrong is not None and "before it is due (due after 1)" in wrong


def test_a_flit_whose_operands_were_never_offered_is_rejected(check):
    assert check.check(0, 1, 3, valid_cycle=10, last_stall=8) == (
        "the flit came out before all its operands went in"
    )


def test_accepted_operands_without_stalls_are_due_exactly(check):
    """Flit 1: accepted in 7 with no stall since the phase began: valid in 8 exactly."""
    assert check.check(0, 1, 1, valid_cycle=8, last_stall=None) is None
    late = check.check(0, 1, 1, valid_cycle=9, last_stall=None)
    assert late is not None and "late" in late
