"""The whole packet-mode switch in the Amaranth simulator, with Go-Back-N NPUs on every port:
every delivery bit-exact against the functional model (the endpoints compare each packet as
it is delivered), each packet once and in order. The cocotb benches
(tests/sim/verify/test_packet_cosim.py) run the same loop on the Verilog, longer."""

from __future__ import annotations

import numpy as np
import pytest

from fredfab.hw.packet.params import PacketParams
from fredfab.hw.params import SwitchParams
from fredfab.model.packet.format import UNICAST_INDEX, VC_DP, VC_MP, VC_PP, PacketFormat
from fredfab.sim.verify.packet.amaranth_sim import run_switch
from fredfab.sim.verify.packet.scenario import LinkHostility, PacketPhase, PacketScenario
from fredfab.sim.verify.packet.scenarios import (
    DP_SLOT,
    MP_SLOT,
    all_to_all,
    dp_flows,
    mp_flows,
    pp_flows,
    three_phases,
)

P = 4
PARAMS = PacketParams(SwitchParams(P, lanes=4, dtype="bf16"), PacketFormat(packet_flits=4))


def _check(scenario: PacketScenario, params: PacketParams = PARAMS):
    result = run_switch(params, scenario)
    assert result.passed, result.errors[:5]
    assert sum(len(r.got) for n in result.npus for r in n.receivers) > 0
    return result


def test_mp_allreduce_pairs():
    _check(PacketScenario("mp", (PacketPhase.of(VC_MP, MP_SLOT, mp_flows(P), 5),)))


def test_dp_allreduce_under_backpressure():
    hostile = LinkHostility(stall=0.4, idle=0.3)
    _check(PacketScenario("dp", (PacketPhase.of(VC_DP, DP_SLOT, dp_flows(P), 5),), 3, hostile))


def test_unicast_all_to_all_is_routed_by_destination():
    _check(PacketScenario("a2a", (PacketPhase.of(VC_PP, UNICAST_INDEX, all_to_all(P), 2),)))


@pytest.mark.parametrize("seed", [1, 2])
def test_three_phases_at_random_times(seed):
    rng = np.random.default_rng(seed)
    hostile = LinkHostility(stall=0.3, idle=0.2)
    result = _check(PacketScenario("3d", three_phases(P, 4, rng, 100), seed, hostile))
    assert {c.vc for c in result.phases} == {VC_MP, VC_DP, VC_PP}


def test_faulty_links_still_deliver_exactly_once_in_order():
    rng = np.random.default_rng(7)
    hostile = LinkHostility(drop=0.02, corrupt=0.02, stall=0.2, idle=0.1)
    result = _check(PacketScenario("faults", three_phases(P, 6, rng, 50), 7, hostile))
    assert result.faults["dropped"] + result.faults["corrupted"] > 0


def test_pp_ring_on_the_unicast_index():
    _check(PacketScenario("pp", (PacketPhase.of(VC_PP, UNICAST_INDEX, pp_flows(P), 4),)))


@pytest.mark.parametrize(
    "phases, message",
    [
        (
            (
                PacketPhase.of(VC_DP, DP_SLOT, dp_flows(P), 2),
                PacketPhase.of(VC_MP, DP_SLOT, mp_flows(P), 2),
            ),
            "slot 2 is used by two phases",
        ),
        (
            (
                PacketPhase.of(VC_DP, DP_SLOT, dp_flows(P), 2),
                PacketPhase.of(VC_DP, MP_SLOT, mp_flows(P), 2),
            ),
            "VC 1 carries two configured phases",
        ),
    ],
)
def test_scenarios_the_sequence_numbers_cannot_serve_are_refused(phases, message):
    with pytest.raises(ValueError, match=message):
        PacketScenario("bad", phases)


@pytest.mark.parametrize("window", [1, 16, 1 << 15])
def test_a_window_not_above_the_ack_interval_is_refused(window):
    # Receivers ACK every 16 packets: a window of 16 or less would wait out a timeout per
    # window; 2^15 packets is past what 16-bit sequence numbers tell apart.
    phases = (PacketPhase.of(VC_DP, DP_SLOT, dp_flows(P), 2),)
    with pytest.raises(ValueError, match=f"window must exceed the ACK interval .*got {window}"):
        PacketScenario("bad", phases, window=window)
    PacketScenario("ok", phases, window=17)


def test_a_long_unicast_stream_does_not_starve_another_round():
    """0 -> 1 (round 1) streams 40 packets; 2 -> 0 (round 2) sends 2 from cycle 5: the
    round quantum lets them through long before the long stream ends."""
    from fredfab.model.switch.flow import Flow

    long = PacketPhase.of(VC_PP, UNICAST_INDEX, [Flow([0], [1])], 40)
    short = PacketPhase.of(VC_PP, UNICAST_INDEX, [Flow([2], [0])], 2, start=5)
    result = _check(PacketScenario("rounds", (long, short)))
    npu = {n.port: n for n in result.npus}
    short_done = npu[0].last_delivery[(VC_PP, UNICAST_INDEX, 2)]
    long_done = npu[1].last_delivery[(VC_PP, UNICAST_INDEX, 0)]
    assert short_done < long_done / 2, (short_done, long_done)
