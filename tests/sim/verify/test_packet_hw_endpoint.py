"""The hardware NPU endpoint (fredfab.sim.verify.packet.hw_endpoint) against its reference,
the Python endpoint (endpoint.py), packet for packet and cycle for cycle.

The reference runs the soak's traffic (soak_plan.py: MP, DP and PP in messages, on faulty,
bursty, sometimes silent links, with idle and stalling NPUs) on the whole switch in the
Amaranth simulator, and logs what each NPU took in and gave out every cycle. The hardware
endpoint of the same port, fed the same inputs, must give out the same flit, credits and
retry state in every cycle, and count what the reference counted."""

from __future__ import annotations

import pytest
from amaranth.sim import Simulator

from fredfab.hw.packet.params import PacketParams
from fredfab.hw.params import SwitchParams
from fredfab.model.packet.format import PacketFormat
from fredfab.sim.verify.packet.amaranth_sim import run_switch
from fredfab.sim.verify.packet.hw_endpoint import NpuEndpoint
from fredfab.sim.verify.packet.loop import pack_ack
from fredfab.sim.verify.packet.scenario import LinkHostility
from fredfab.sim.verify.packet.soak_plan import SoakPlan

P = 4
PARAMS = PacketParams(SwitchParams(P, lanes=4, dtype="int16"), PacketFormat(packet_flits=4))
HOSTILE = LinkHostility(drop=0.01, corrupt=0.01, stall=0.3, idle=0.2, burst=0.3, silence=2e-4)


def _reference(plan: SoakPlan, cycles: int):
    npus = []

    def keep(created) -> None:
        for n in created:
            n.io_log = []
        npus.extend(created)

    result = run_switch(PARAMS, plan.scenario(cycles), traffic=plan.traffic(PARAMS), on_npus=keep)
    assert result.passed, result.errors[:3]
    return result, npus


def _hardware(plan: SoakPlan, npu) -> list[tuple]:
    """The hardware endpoint of ``npu``'s port fed ``npu``'s inputs: its outputs per cycle,
    and its counters at the end."""
    link = PARAMS.link
    dut = NpuEndpoint(PARAMS, npu.port, *plan.streams(npu.port), plan.knobs(npu.port))
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    out: list[tuple] = []
    counters: dict[str, int] = {}

    async def tb(ctx) -> None:
        for rx, credits, ack, *_ in npu.io_log:
            ctx.set(dut.rx.valid, rx is not None)
            if rx is not None:
                ctx.set(dut.rx.payload.as_value(), link.encode(rx))
            ctx.set(dut.rx_credit, credits)
            ctx.set(dut.rx_ack.as_value(), pack_ack(*ack))
            await ctx.tick()
            flit = link.decode(ctx.get(dut.tx.payload).as_bits()) if ctx.get(dut.tx.valid) else None
            out.append((flit, ctx.get(dut.tx_credit), ctx.get(dut.tx_ack.as_value())))
        for name in ("data_errors", "protocol_errors", "data_sent", "control_sent", "syncs_sent"):
            counters[name] = ctx.get(getattr(dut, name))
        counters["delivered"] = [ctx.get(d) for d in dut.delivered]
        counters["done"] = ctx.get(dut.done)

    sim.add_testbench(tb)
    sim.run()
    return out, counters


@pytest.mark.parametrize(
    "seed,packets",
    [(1, 10), pytest.param(2, 40, marks=pytest.mark.slow)],
)
def test_the_hardware_endpoint_is_the_python_one_cycle_for_cycle(seed, packets):
    plan = SoakPlan(P, seed, HOSTILE, packets=packets, size_bits=3, gap_bits=6)
    result, npus = _reference(plan, 30_000)
    assert result.faults["dropped"] and result.faults["corrupted"] and result.faults["bursts"]
    for npu in npus:
        got, counters = _hardware(plan, npu)
        want = [(f, c, pack_ack(*a)) for *_, f, c, a in npu.io_log]
        assert len(got) == len(want)
        for cycle, (g, w) in enumerate(zip(got, want, strict=True)):
            assert g == w, f"port {npu.port} cycle {cycle}: hardware {g}, python {w}"
        assert counters["data_errors"] == counters["protocol_errors"] == 0
        assert counters["delivered"] == [len(r.got) for r in npu.receivers]
        assert counters["data_sent"] == npu.stats.data_packets_sent
        assert counters["control_sent"] == npu.stats.control_sent
        assert counters["syncs_sent"] == npu.stats.syncs_sent
        assert counters["done"] == npu.done == 1
