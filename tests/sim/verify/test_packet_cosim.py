"""Co-simulation of the packet-mode switch's Verilog on Icarus and Verilator
(fredfab.sim.verify.packet.cosim).

Every scenario runs Go-Back-N NPUs over credit-based links (faulty ones where the scenario
says) against the generated Verilog; the endpoints check every delivered packet bit for bit
against the functional model, once and in order. These tests check what the report says
on top of that: every stream delivered everything it had to, nothing arrived damaged over
clean links, and faulty links did damage packets that were then repaired. One build per (simulator,
variant), shared through the build root with every other co-simulation test.
"""

from __future__ import annotations

import pytest

from fredfab.hw.packet.params import PacketParams
from fredfab.hw.params import SwitchParams
from fredfab.model.packet.format import VC_DP, VC_MP, VC_PP, PacketFormat
from fredfab.sim.verify import cosim
from fredfab.sim.verify.packet.cosim import PacketCosimResult, run_packet
from fredfab.sim.verify.packet.metrics import expected_packets
from fredfab.sim.verify.packet.scenario import PacketScenario
from fredfab.sim.verify.packet.scenarios import standard, with_fault_rates

ROOT = cosim.shared_build_root()

SIMS = [
    pytest.param("icarus", marks=pytest.mark.needs("icarus")),
    pytest.param("verilator", marks=pytest.mark.needs("verilator")),
]


def _pk(P: int, m: int, lanes: int, dtype: str, arch: str = "clos", **fmt) -> PacketParams:
    return PacketParams(
        SwitchParams(P, m=m, lanes=lanes, dtype=dtype, arch=arch), PacketFormat(**fmt)
    )


#: The default sweep (64-bit flits, where the CRC catches every fault the links make):
#: the reference variant, odd ports (an MP group of one), the crossbar, and short packets
#: in shallow buffers (credits run out at every other packet) without link-level retry
#: (so its faults reach the packets: repair, REWINDs, Go-Back-N).
SWEEP = [
    _pk(4, 3, 4, "bf16"),
    _pk(5, 2, 4, "int16"),
    _pk(4, 3, 2, "int32", arch="xbar"),
    _pk(4, 2, 4, "fp16", packet_flits=4, data_depth=2, link_retry=False),
]
#: Wider sweep (-m slow): more ports, every element type, pipelines without and with two
#: register slices per stage, other packet sizes and buffer depths; each with its own
#: fault rates on the fault scenario (drop, corrupt).
#: Rates stay where Go-Back-N can finish: a sum of P inputs reaches a receiver intact only
#: if all (P + 1) * (packet_flits + 1) flits on its way are, so P = 8 at 3 % drop and 3 %
#: corrupt (0.94 ** 81, under 1 %) would take millions of cycles.
WIDE = [
    (_pk(2, 2, 8, "int8"), (0.02, 0.0)),
    (_pk(3, 3, 4, "bf16", packet_flits=2, data_depth=1, link_retry=False), (0.0, 0.02)),
    (_pk(6, 2, 2, "fp32", packet_flits=16), (0.005, 0.005)),
    (_pk(7, 3, 4, "int16", data_depth=6, link_retry=False), (0.01, 0.01)),
    (_pk(8, 3, 4, "fp16"), (0.005, 0.005)),
    (
        PacketParams(SwitchParams(8, m=2, lanes=4, dtype="bf16", regs_per_stage=0)),
        (0.01, 0.02),
    ),
    (
        PacketParams(SwitchParams(6, m=3, lanes=2, dtype="int32", regs_per_stage=2)),
        (0.02, 0.01),
    ),
    (_pk(8, 3, 8, "int8", arch="xbar", packet_flits=4, data_depth=3), (0.001, 0.001)),
]


def _check(
    params: PacketParams, sim: str, scenarios: list[PacketScenario], label: str
) -> PacketCosimResult:
    """Run, and check every scenario's report: passed, every stream delivered exactly what
    it had to, nothing arrived damaged over clean links, faulty ones lost and damaged
    packets and Go-Back-N repaired them."""
    result = run_packet(params, sim, scenarios, label=label, root=ROOT)
    assert result.passed, result.summary()
    assert list(result.scenarios) == [s.name for s in scenarios]
    for sc in scenarios:
        r = result.scenarios[sc.name]
        assert r["packets_delivered"] == expected_packets(sc), sc.name
        assert r["deliveries"] and all(
            first is not None and last is not None and first <= last and count > 0
            for first, last, count in r["deliveries"].values()
        ), sc.name
        assert sum(count for _, _, count in r["deliveries"].values()) == r["packets_delivered"]
        faults = r["faults"]
        if sc.links.drop or sc.links.corrupt:
            assert faults["dropped"] + faults["corrupted"] > 0, sc.name
            if params.fmt.link_retry:
                # The links replayed what they lost; the packets above saw none of it.
                # The NPUs count replays of their up links and rejections of what came
                # down; a few faults may all fall one way (wide-107 at P = 8: three
                # replays, nothing rejected), so either shows the retry at work. A check
                # per direction would not hold: a down-link loss with nothing after it is
                # replayed on the switch's timeout and never counted as rejected at the NPU.
                assert r["link_replays"] + r["link_rejected"] > 0, sc.name
            else:
                assert r["retransmissions"] > 0, sc.name
                if sc.links.corrupt:
                    assert faults["corrupted"] > 0 and r["bad_packets_received"] > 0, sc.name
            # Data flits are not all that crosses the links: headers, ACKs and NACKs too.
            assert faults["flits"] > r["packets_delivered"] * params.fmt.packet_flits
        else:
            assert faults["dropped"] == faults["corrupted"] == 0, sc.name
            # A clean link damages nothing, so no packet arrives bad (a switch stomping a
            # packet it forwards would show here). Resends may still happen: a sender that
            # waits out its timeout behind higher-priority phases goes back anyway.
            assert r["bad_packets_received"] == 0, sc.name
    three = result.scenarios["three_phases"]
    assert {vc for _, vc, _ in three["phases"]} == {VC_MP, VC_DP, VC_PP}
    return result


def _sweep_runs() -> list:
    """Every SWEEP variant on Icarus; on Verilator the reference variant (which the agreement
    test builds too) in the default suite and the others with the slow suite: both run the
    same Verilog cycle for cycle, and a Verilator build is 30 to 60 s of C++ per variant."""
    runs = []
    for sim in ("icarus", "verilator"):
        for k, params in enumerate(SWEEP):
            marks = [pytest.mark.needs(sim)]
            if sim == "verilator" and k > 0:
                marks.append(pytest.mark.slow)
            runs.append(pytest.param(sim, params, marks=marks, id=f"{params.name}-{sim}"))
    return runs


@pytest.mark.parametrize("sim,params", _sweep_runs())
def test_standard_scenarios(sim, params):
    """Each collective kind on its VC, all-to-all unicast, the three phases at random
    times under backpressure, and the same on faulty links."""
    seed = SWEEP.index(params) + 1
    _check(params, sim, standard(params.ports, seed=seed, packets=10), f"sweep-{seed}")


@pytest.mark.needs("icarus", "verilator")
def test_simulators_agree_cycle_for_cycle():
    """The bench is deterministic: the same cycles, deliveries, retransmissions, faults and
    phase changes on both simulators, faulty links included."""
    params = SWEEP[0]
    scenarios = standard(params.ports, seed=3, packets=8)
    runs = [_check(params, sim, scenarios, "agree") for sim in cosim.SIMULATORS]
    keys = ("cycles", "packets_delivered", "deliveries", "retransmissions", "faults", "phases")
    for name in runs[0].scenarios:
        a, b = runs[0].scenarios[name], runs[1].scenarios[name]
        assert {k: a[k] for k in keys} == {k: b[k] for k in keys}, name


def test_fault_rates_reach_only_faulty_scenarios():
    scenarios = with_fault_rates(standard(4), 0.002, None)
    faulty = [s for s in scenarios if s.links.drop or s.links.corrupt]
    assert [s.name for s in faulty] == ["three_phases_faults"]
    assert (faulty[0].links.drop, faulty[0].links.corrupt) == (0.002, 0.01)
    clean = [s for s in scenarios if s not in faulty]
    assert clean == [s for s in standard(4) if s.name != "three_phases_faults"]


@pytest.mark.slow
@pytest.mark.parametrize("sim", SIMS)
@pytest.mark.parametrize(
    "params,rates",
    [pytest.param(p, r, id=p.name) for p, r in WIDE],
)
def test_packet_wide_sweep(sim, params, rates):
    seed = [p for p, _ in WIDE].index(params) + 100
    scenarios = with_fault_rates(standard(params.ports, seed=seed, packets=16), *rates)
    _check(params, sim, scenarios, f"wide-{seed}")
