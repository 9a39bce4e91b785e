"""Gaps inside packets on the switch's tx links (model/packet/recovery.py ``tx_gap_bound``, the
manifest's ``tx_max_gap_in_packet``): a forked packet never waits for a credit half sent,
so with receivers that hold their credits back for hundreds of cycles every packet still
leaves whole at link rate; and a sender's gap reaches tx as it came, up to the input
port's tail timeout, beyond which the input pads: the bound is that timeout plus the
cycles the padding takes to reach tx, measured here at its worst."""

from __future__ import annotations

import pytest
from amaranth.sim import Simulator

from fredfab.hw.packet.params import PacketParams
from fredfab.hw.packet.switch import PacketSwitch
from fredfab.hw.params import SwitchParams
from fredfab.model.packet.format import VC_DP, VC_MP, Header, PacketFormat
from fredfab.model.packet.link import Credit, LinkReceiver, LinkSender, Packet, tail_timeout
from fredfab.model.packet.recovery import tx_gap_bound
from fredfab.sim.verify.packet.amaranth_sim import AmaranthPins, run_switch
from fredfab.sim.verify.packet.loop import load
from fredfab.sim.verify.packet.metrics import packet_gaps
from fredfab.sim.verify.packet.scenario import LinkHostility, PacketPhase, PacketScenario
from fredfab.sim.verify.packet.scenarios import DP_SLOT, MP_SLOT, dp_flows, mp_flows
from fredfab.sim.verify.packet.traffic import build_traffic

P = 4
PARAMS = PacketParams(SwitchParams(P, lanes=4, dtype="int16"), PacketFormat(packet_flits=4))


def test_slow_receivers_never_stop_a_packet_half_sent():
    """The issue's case: an MP pair {0, 1} and a DP All-Reduce over every port, NPU 1
    returning no credit from cycle 300 to 800. A forked packet waits, before its first
    flit, for every output to hold a credit, so no packet on any tx pauses inside; no NPU
    pads one; everything arrives."""
    scenario = PacketScenario(
        "slow",
        (
            PacketPhase.of(VC_MP, MP_SLOT, mp_flows(P), 40),
            PacketPhase.of(VC_DP, DP_SLOT, dp_flows(P), 40),
        ),
        3,
        LinkHostility(idle=0.1),
        credit_holds=((1, 300, 800),),
    )
    tx: list[list] = [[] for _ in range(P)]

    def trace(now, drives, seen, phase) -> None:
        for p in range(P):
            tx[p].append(None if seen[p][0] is None else PARAMS.link.decode(seen[p][0]))

    result = run_switch(PARAMS, scenario, trace)
    assert result.passed, result.errors[:3]
    assert sum(n.stats.bad_packets for n in result.npus) == 0
    gaps = [g for p in range(P) for g in packet_gaps(tx[p])]
    # Every MP and DP packet to every output (retransmissions on top, if any); their gaps
    # are the senders' idle cycles, nothing like the 500 cycles of the hold.
    assert len(gaps) >= 2 * 2 * 40 + P * 40
    assert max(gaps) < 10 <= tx_gap_bound(PARAMS.fmt)
    # The hold did bite: no packet reached NPU 1 while it held its credits.
    idle = [t for t in range(400, 800) if tx[1][t] is not None and not tx[1][t].sync]
    assert [t for t in idle if tx[1][t].vc != 3] == []


def _directed(gap: int) -> tuple[list, list[Packet]]:  # noqa: C901 (one scripted run)
    """An MP pair: ports 0 and 1 send packets 0 and 1 back to back, except that port 0
    leaves ``gap`` idle cycles after packet 1's second payload flit (by then the switch
    streams the pair at link rate). What tx[0] carries per cycle, and what its NPU reads."""
    params = PacketParams(PARAMS.switch, PacketFormat(packet_flits=4, link_retry=False))
    scenario = PacketScenario("g", (PacketPhase.of(VC_MP, MP_SLOT, mp_flows(P), 2),))
    s = params.switch
    traffic = build_traffic(
        scenario, P, s.m, s.arch, s.dtype, s.lanes, params.fmt.packet_flits, s.word_width
    )
    dut = PacketSwitch(params)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    tx: list = []
    readers = [LinkReceiver(params.fmt, s.data_width, 10**6) for _ in range(P)]
    got: list[Packet] = []

    async def tb(ctx):
        pins = AmaranthPins(dut, ctx)
        await load(pins, traffic.loads)
        script: dict[int, list] = {}
        for p in (0, 1):
            sender = LinkSender(params.fmt, s.data_width)
            flits = [
                f
                for seq, words in enumerate(traffic.sends[p][0].packets)
                for f in sender.packet_flits(Header(vc=VC_MP, index=MP_SLOT, seq=seq, src=p), words)
            ]
            # Packet 0 from cycle 2; packet 1 from cycle 40, when the pair's phase runs and
            # nothing waits in the input ports.
            n = params.fmt.data_packet_flits
            times = list(range(2, 2 + n)) + list(range(40, 40 + n))
            if p == 0:  # after packet 1's head and two payload flits
                times = times[: n + 3] + [t + gap for t in times[n + 3 :]]
            script[p] = list(zip(times, flits, strict=True))
        due = [[0] * 4 for _ in range(P)]
        for now in range(2 * gap + 80):
            for p in range(P):
                flit = next((f for t, f in script.get(p, []) if t == now), None)
                credits = 0
                for vc in range(4):
                    if due[p][vc]:
                        due[p][vc] -= 1
                        credits |= 1 << vc
                pins.drive(p, None if flit is None else params.link.encode(flit), credits, 0)
            await pins.settle()
            seen = [pins.tx(p) for p in range(P)]
            await pins.edge()
            tx.append(None if seen[0] is None else params.link.decode(seen[0]))
            for p in range(P):
                if seen[p] is not None:
                    for e in readers[p].push(params.link.decode(seen[p])):
                        if isinstance(e, Credit):
                            due[p][e.vc] += e.n
                        elif isinstance(e, Packet) and p == 0:
                            got.append(e)

    sim.add_testbench(tb)
    sim.run()
    return tx, got


@pytest.mark.parametrize("below", [1, 0])
def test_a_gap_reaches_tx_as_it_came_and_a_longer_one_is_padded_within_the_bound(below):
    params = PacketParams(PARAMS.switch, PacketFormat(packet_flits=4, link_retry=False))
    t = tail_timeout(params.fmt)
    tx, got = _directed(t - below)
    [first, gap] = packet_gaps(tx)
    assert first == 0
    [_, packet] = got
    # The input port reads a flit a cycle sooner when its FIFO had run empty: a gap comes
    # out one cycle shorter than it went in; the padding follows the timeout at once.
    assert gap == t - 2 <= tx_gap_bound(params.fmt)
    if below:  # a gap the input waits out: forwarded as it came, the packet intact
        assert packet.ok
    else:  # the input's tail timeout ends it, padded (the sum with port 1's flits, bad)
        assert [bad for _, bad in packet.flits] == [False, False, True, True]
