"""The packet-mode soak (fredfab.sim.verify.packet.soak): random MP, DP and PP traffic on
faulty links through the cocotb bench until a number of cycles has run, every delivery
checked by the endpoints."""

from __future__ import annotations

import pytest

from fredfab.hw.packet.params import PacketParams
from fredfab.hw.params import SwitchParams
from fredfab.model.packet.format import UNICAST_INDEX, VC_DP, VC_MP, VC_PP
from fredfab.sim.verify.cosim import shared_build_root
from fredfab.sim.verify.packet.metrics import expected_packets
from fredfab.sim.verify.packet.soak import MAX_SPREAD, PacketSoakResult, packet_soak, soak_scenario

ROOT = shared_build_root()
#: The reference variant of the co-simulation suite (its build is shared).
PARAMS = PacketParams(SwitchParams(4, m=3, lanes=4, dtype="bf16"))


def test_soak_scenarios_are_random_three_phase_traffic_on_faulty_links():
    a, b = (soak_scenario(n, 5, 40, seed, 1e-3, 2e-3) for n, seed in (("a", 1), ("b", 2)))
    assert a != b and a == soak_scenario("a", 5, 40, 1, 1e-3, 2e-3)
    for sc in (a, b):
        assert [(p.vc, p.slot == UNICAST_INDEX) for p in sc.phases] == [
            (VC_MP, False),
            (VC_DP, False),
            (VC_PP, True),
        ]
        assert all(20 <= p.packets <= 40 and 0 <= p.start <= MAX_SPREAD for p in sc.phases)
        assert (sc.links.drop, sc.links.corrupt) == (1e-3, 2e-3)
        assert 0 <= sc.links.stall <= 0.5 and 0 <= sc.links.idle <= 0.4
        # MP pairs and a lone port 4, DP to all five, a PP ring of five.
        mp, dp, pp = (p.packets for p in sc.phases)
        assert expected_packets(sc) == 5 * mp + 5 * dp + 5 * pp
    assert {p.start for p in a.phases} != {p.start for p in b.phases}


def _check(r: PacketSoakResult, cycles: int) -> None:
    assert r.passed, r.errors[:5]
    assert r.errors == [] and r.cycles >= cycles
    assert r.cycles == sum(s["cycles"] for s in r.scenarios.values())
    assert all(s["passed"] for s in r.scenarios.values())
    assert r.fault_total("dropped") > 0 and r.fault_total("corrupted") > 0
    assert r.total("retransmissions") > 0 and r.total("bad_packets_received") > 0
    for s in r.scenarios.values():
        assert {vc for _, vc, _ in s["phases"]} == {VC_MP, VC_DP, VC_PP}


@pytest.mark.needs("verilator")
def test_short_soak_runs_rounds_until_the_cycles_are_reached():
    r = packet_soak(PARAMS, 20_000, "verilator", drop=5e-3, corrupt=5e-3, root=ROOT, label="s")
    _check(r, 20_000)
    assert (r.drop, r.corrupt) == (5e-3, 5e-3)


@pytest.mark.slow
@pytest.mark.needs("verilator")
def test_packet_soak_million_cycles():
    """At least 10**6 cycles of random traffic at 1e-3 faults per flit, not one error."""
    r = packet_soak(PARAMS, 1_000_000, "verilator", root=ROOT, label="soak-1m")
    _check(r, 1_000_000)
    assert r.total("packets_delivered") > 10_000
