"""MP preempting DP in the packet switch, cycle by cycle (Amaranth simulator): the phase order,
no packet cut or mixed with another phase's on any link, and the switch-over within the
packet in flight + the interconnect's drain + the slot copy and its check; also with
pipelined adders, whose pipes the drain must wait for."""

from __future__ import annotations

import pytest

from fredfab.hw.packet.params import PacketParams
from fredfab.hw.packet.slot_store import stride
from fredfab.hw.params import SwitchParams
from fredfab.model.packet.format import VC_CTRL, VC_DP, VC_MP, LinkFlit, PacketFormat
from fredfab.sim.verify.packet.amaranth_sim import run_switch
from fredfab.sim.verify.packet.scenario import PacketPhase, PacketScenario
from fredfab.sim.verify.packet.scenarios import DP_SLOT, MP_SLOT, dp_flows, mp_flows

P = 4
PARAMS = PacketParams(SwitchParams(P, lanes=4, dtype="bf16"), PacketFormat(packet_flits=4))
PIPELINED = PacketParams(
    SwitchParams(P, lanes=4, dtype="bf16", adder_stages=4), PacketFormat(packet_flits=4)
)
VARIANTS = pytest.mark.parametrize("params", [PARAMS, PIPELINED], ids=["comb", "adder4"])
MP_AT = 60


def _trace(params=PARAMS):
    link = params.link
    tx: list[list[LinkFlit | None]] = [[] for _ in range(P)]
    phase: list[str] = []

    def trace(now, drives, seen, ph) -> None:
        for p in range(P):
            b = seen[p][0]
            tx[p].append(None if b is None else link.decode(b))
        valid, vc, _, reconf = ph
        phase.append("r" if reconf else ("MDP"[vc] if valid else "."))

    scenario = PacketScenario(
        "preempt",
        (
            PacketPhase.of(VC_DP, DP_SLOT, dp_flows(P), 24),
            PacketPhase.of(VC_MP, MP_SLOT, mp_flows(P), 3, MP_AT),
        ),
    )
    result = run_switch(params, scenario, trace)
    assert result.passed, result.errors[:3]
    return tx, phase


@VARIANTS
def test_mp_preempts_dp_without_cutting_or_mixing_packets(params):
    tx, phase = _trace(params)
    runs = [c for i, c in enumerate(phase) if c != "." and (i == 0 or c != phase[i - 1])]
    assert runs == ["r", "D", "r", "M", "r", "D"], runs  # the first r loads DP
    pf = params.fmt.packet_flits
    first_mp = min(
        t for p in range(P) for t, f in enumerate(tx[p]) if f is not None and f.vc == VC_MP
    )
    last_mp = max(
        t for p in range(P) for t, f in enumerate(tx[p]) if f is not None and f.vc == VC_MP
    )
    for p in range(P):
        data = [
            (t, f) for t, f in enumerate(tx[p]) if f is not None and f.vc != VC_CTRL and not f.sync
        ]
        # Every data packet on the link: a head and packet_flits payload flits of its VC,
        # with no flit of another data VC in between.
        k = 0
        while k < len(data):
            t, head = data[k]
            assert head.head, f"port {p} cycle {t}: payload flit outside a packet"
            body = data[k + 1 : k + 1 + pf]
            assert [f.vc for _, f in body] == [head.vc] * pf, f"port {p} cycle {t}: mixed"
            assert [f.last for _, f in body] == [False] * (pf - 1) + [True]
            k += 1 + pf
        # No DP flit leaves while MP's packets do.
        assert not [t for t, f in data if f.vc == VC_DP and first_mp <= t <= last_mp]


@VARIANTS
def test_switch_over_is_bounded_by_a_packet_a_drain_and_a_slot_copy(params):
    _, phase = _trace(params)
    start = phase.index("r", phase.index("D"))  # after the first load, DP running
    end = phase.index("M")
    s = params.switch
    bound = (params.fmt.packet_flits + 1) + s.latency_cycles + stride(s) + 1 + 2
    assert 0 < end - start <= bound, (end - start, bound)


@VARIANTS
@pytest.mark.parametrize("mp_at", [0, 6])
def test_mp_waits_for_a_dp_packet_still_inside_the_interconnect(params, mp_at):
    """One DP packet per flow, MP arriving while it crosses the interconnect (in the adder
    pipes, on the pipelined switch): the switch-over must wait until it has left, or the MP
    configuration would deliver its flits (every packet is checked at the NPUs)."""
    scenario = PacketScenario(
        "drain",
        (
            PacketPhase.of(VC_DP, DP_SLOT, dp_flows(P), 1),
            PacketPhase.of(VC_MP, MP_SLOT, mp_flows(P), 1, mp_at),
        ),
    )
    two_flit = PacketParams(params.switch, PacketFormat(packet_flits=2))
    result = run_switch(two_flit, scenario)
    assert result.passed, result.errors[:3]
