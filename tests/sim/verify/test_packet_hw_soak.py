"""The packet switch's hardware soak (fredfab.sim.verify.packet.hw_soak): the switch's Verilog
between hardware NPU endpoints and fault injectors on Verilator, every delivery checked
by the endpoint that takes it. These tests check what its counters say: traffic flowed on
every stream, every kind of fault happened and was repaired (link replays, syncs, REWINDs,
timeouts), phases changed, and not one delivery was wrong."""

from __future__ import annotations

import pytest

from fredfab.hw.packet.params import PacketParams
from fredfab.hw.params import SwitchParams
from fredfab.sim.verify.cosim import shared_build_root
from fredfab.sim.verify.packet.hw_soak import LINK_COUNTERS, HwSoakResult, hw_soak
from fredfab.sim.verify.packet.scenario import LinkHostility
from fredfab.sim.verify.packet.soak_plan import SoakPlan

ROOT = shared_build_root()
#: The soak's variant: the reference switch's, with integer lanes (sums in any order).
PARAMS = PacketParams(SwitchParams(4, m=3, lanes=4, dtype="int16"))
HOSTILE = LinkHostility(drop=1e-3, corrupt=1e-3, stall=0.3, idle=0.2, burst=0.1, silence=1e-5)


def _check(r: HwSoakResult) -> None:
    c = r.counters
    assert r.errors == 0 and c["slot_error"] == 0
    # Every stream of every port delivered, and the switch changed phases all along.
    assert all(v > 0 for k, v in c.items() if "_delivered" in k)
    assert c["reconfigurations"] > 100
    for name in LINK_COUNTERS:
        if name != "undetected":  # CRC-8 on 64-bit flits sees every fault the links make
            assert r.links(name) > 0, name
    assert r.links("undetected") == 0
    assert r.total("replayed") > 0 and r.total("syncs_sent") > 0
    # Silences cut packets: Go-Back-N repaired them, and no stream waited for good.
    assert r.total("rewinds") > 0 and r.total("bad_packets") > 0
    assert r.longest_wait < 20_000


@pytest.mark.needs("verilator")
def test_a_short_hardware_soak_checks_every_delivery():
    # -O1: a short run pays less for compiling than for a faster model.
    r = hw_soak(PARAMS, SoakPlan(4, 1, HOSTILE), 300_000, root=ROOT, opt="-O1")
    _check(r)
    assert r.cycles > 290_000 and r.delivered > 40_000


@pytest.mark.needs("verilator")
def test_the_two_thread_soak_is_the_one_model_soak_with_registered_links():
    """Split over two models on two threads (hw_soak_split.py), the soak with every link
    registered at its receiving end counts exactly what the one model with the same
    registers counts, and passes the same checks; the registers do change the soak."""
    plan, n = SoakPlan(4, 1, HOSTILE), 200_000
    two = hw_soak(PARAMS, plan, n, root=ROOT, opt="-O1", threads=2)
    one = hw_soak(PARAMS, plan, n, root=ROOT, opt="-O1", link_register=True)
    assert two.counters == one.counters
    _check(two)
    assert two.cycles > 190_000 and two.delivered > 25_000
    plain = hw_soak(PARAMS, plan, n, root=ROOT, opt="-O1")  # the test above's build
    assert plain.counters != two.counters


@pytest.mark.slow
@pytest.mark.needs("verilator")
@pytest.mark.parametrize("threads", [1, 2])
def test_packet_hardware_soak_hundred_million_cycles(threads):
    """10**8 cycles of MP, DP and PP in messages on links that drop, corrupt, burst and
    fall silent: every delivery checked (its sum, its place, once), not one error; on one
    thread, and split over two (links a cycle longer)."""
    r = hw_soak(PARAMS, SoakPlan(4, 7, HOSTILE), 100_000_000, root=ROOT, threads=threads)
    _check(r)
    assert r.cycles >= 99_999_000 and r.delivered > 10_000_000
