"""The packet switch in the Amaranth simulator under the bench loop (loop.py), with NPU
endpoints on every port: no Verilog, no build, the same checks as the cocotb bench (the
whole-switch tests in tests/hw/packet use it, and so does the preemption diagram)."""

from __future__ import annotations

from amaranth.sim import Simulator

from fredfab.hw.packet.params import PacketParams
from fredfab.hw.packet.switch import PacketSwitch
from fredfab.sim.verify.packet.loop import LinkFaultModel, LoopResult, run_loop
from fredfab.sim.verify.packet.scenario import PacketScenario
from fredfab.sim.verify.packet.traffic import PacketTraffic, build_traffic


class AmaranthPins:
    def __init__(self, dut: PacketSwitch, ctx) -> None:
        self.dut, self.ctx = dut, ctx

    def tx(self, port: int) -> int | None:
        t = self.dut.tx[port]
        return self.ctx.get(t.payload).as_bits() if self.ctx.get(t.valid) else None

    def rx_credit(self, port: int) -> int:
        return self.ctx.get(self.dut.rx_credit[port])

    def rx_ack(self, port: int) -> int:
        return self.ctx.get(self.dut.rx_ack[port].as_value())

    def drive(self, port: int, flit: int | None, tx_credit: int, tx_ack: int) -> None:
        r = self.dut.rx[port]
        self.ctx.set(r.valid, flit is not None)
        if flit is not None:
            self.ctx.set(r.payload.as_value(), flit)
        self.ctx.set(self.dut.tx_credit[port], tx_credit)
        self.ctx.set(self.dut.tx_ack[port].as_value(), tx_ack)

    def write_cfg(self, slot: int, addr: int, data: int) -> None:
        self.ctx.set(self.dut.cfg.valid, 1)
        self.ctx.set(self.dut.cfg.payload, {"slot": slot, "addr": addr, "data": data})

    def write_flow_row(self, table: int, slot: int, port: int, mask: int) -> None:
        self.ctx.set(self.dut.cfg.valid, 0)
        self.ctx.set(self.dut.flows.valid, 1)
        self.ctx.set(
            self.dut.flows.payload, {"table": table, "slot": slot, "port": port, "mask": mask}
        )

    def idle_config(self) -> None:
        self.ctx.set(self.dut.cfg.valid, 0)
        self.ctx.set(self.dut.flows.valid, 0)

    def phase(self) -> tuple[int, int, int, int]:
        d, g = self.dut, self.ctx.get
        return g(d.phase_valid), g(d.phase_vc), g(d.phase_index), g(d.reconfiguring)

    async def settle(self) -> None:
        pass  # a testbench reads settled values

    async def edge(self) -> None:
        await self.ctx.tick()


def run_switch(
    params: PacketParams,
    scenario: PacketScenario,
    trace=None,
    traffic: PacketTraffic | None = None,
    on_npus=None,
    scripted: dict[tuple[int, str], LinkFaultModel] | None = None,
) -> LoopResult:
    """Run ``scenario`` on the switch of ``params`` (with ``traffic``, or the scenario's own:
    traffic.build_traffic); ``trace``, ``on_npus`` and ``scripted`` as in loop.run_loop."""
    s = params.switch
    if traffic is None:
        traffic = build_traffic(
            scenario,
            s.ports,
            s.m,
            s.arch,
            s.dtype,
            s.lanes,
            params.fmt.packet_flits,
            s.word_width,
        )
    dut = PacketSwitch(params)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    out: list[LoopResult] = []

    async def tb(ctx) -> None:
        pins = AmaranthPins(dut, ctx)
        out.append(
            await run_loop(
                pins, scenario, traffic, params.fmt, s.data_width, trace, on_npus, scripted
            )
        )

    sim.add_testbench(tb)
    sim.run()
    return out[0]
