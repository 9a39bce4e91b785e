"""The worst pattern of lost heads and tails on the packet switch's RTL (the Amaranth
simulator, Go-Back-N NPUs on every port): on NPU 0's link into the switch the first MP
packet is lost whole and the next ``data_depth - 1`` lose their heads and tails
(scripted_faults.WorstWindow; the model's test_the_worst_window_comes_back_with_one_sync
builds the same on the link model). The switch's input counts none of them and returns no
credit; the NPU's sync of the VC must bring the whole window back, and Go-Back-N then
resends what was lost: every delivery exact, once, in order."""

from __future__ import annotations

from fredfab.hw.packet.params import PacketParams
from fredfab.hw.params import SwitchParams
from fredfab.model.packet.format import VC_DP, VC_MP, PacketFormat
from fredfab.sim.verify.packet.amaranth_sim import run_switch
from fredfab.sim.verify.packet.scenario import PacketPhase, PacketScenario
from fredfab.sim.verify.packet.scenarios import DP_SLOT, MP_SLOT, dp_flows, mp_flows
from fredfab.sim.verify.packet.scripted_faults import WorstWindow

P = 4
#: No link-level retry: it would replay the lost flits before the packet layer saw a gap.
FMT = PacketFormat(packet_flits=4, link_retry=False)
PARAMS = PacketParams(SwitchParams(P, lanes=4, dtype="int16"), FMT)


def _run(vc: int, phase: PacketPhase):
    window = WorstWindow(vc, FMT.data_depth)
    scenario = PacketScenario("worst-window", (phase,), max_cycles=20_000)
    result = run_switch(PARAMS, scenario, scripted={(0, "up"): window})
    return result, window


def test_the_worst_window_of_lost_heads_comes_back_on_the_switch():
    result, window = _run(VC_MP, PacketPhase.of(VC_MP, MP_SLOT, mp_flows(P), 8))
    # The pattern happened: packet 0 whole (head and 4 payload flits), then head and tail
    # of each of the next three.
    assert window.window_done and window.dropped == 5 + 2 * (FMT.data_depth - 1)
    assert window.syncs_after >= 1  # the VC came back through a sync
    assert result.passed, result.errors[:5]
    npu0 = result.npus[0]
    # Go-Back-N resent the lost packets.
    assert npu0.stats.syncs_sent >= 1 and npu0.retransmissions >= FMT.data_depth
    delivered = [len(r.got) for n in result.npus for r in n.receivers]
    assert delivered == [8] * P  # every MP receiver: all 8 packets, checked as they came


def test_the_same_window_on_the_dp_vc_alongside_the_ring():
    result, window = _run(VC_DP, PacketPhase.of(VC_DP, DP_SLOT, dp_flows(P), 6))
    assert window.window_done and window.syncs_after >= 1
    assert result.passed, result.errors[:5]
    assert [len(r.got) for n in result.npus for r in n.receivers] == [6] * P
