# amaranth: UnusedElaboratable=no
# (test_port_out_of_range builds a port whose constructor rejects it)
"""The packet-mode output port (fredfab.hw.packet.output_port) in the Amaranth simulator.

Random traffic: packets of exactly ``packet_flits`` flits with random data, bad bits, seq
and src arrive with random idle cycles, each after its credit was reserved (as the control
unit does at commit: wait for ``can_take``, pulse ``reserve``), the phase changes between
packets, control headers arrive at random, and an NPU model returns credits after random
delays. The NPU decodes every link flit with model/packet/format.py and checks framing per
VC, header fields, CRCs (always the data's) and the ``bad`` symbol (exactly on bad flits),
consecutive ``pkt`` per VC, credits never overdrawn, data and control delivered whole and
in order, and ``busy``. Directed tests pin the corner cases: no credit means no commit,
control never widens a gap inside a packet, bad flits, syncs. Link-level retry is off here
(its sending end is tested in test_link_retry.py and in the whole switch).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np
import pytest
from amaranth.back import verilog
from amaranth.hdl import Signal
from amaranth.sim import Simulator

from fredfab.hw.packet.output_port import OutputPort
from fredfab.hw.packet.params import PacketParams
from fredfab.hw.params import SwitchParams
from fredfab.model.packet.format import (
    DATA_VCS,
    HEADER_BITS,
    KIND_ACK,
    KIND_DATA,
    KIND_NACK,
    N_VCS,
    SEQ_MOD,
    VC_CTRL,
    VC_DP,
    VC_MP,
    VC_PP,
    Header,
    LinkFlit,
    PacketFormat,
)
from fredfab.model.packet.link import sync_interval
from tests.hw.adder_harness import REPO, lint_verilog

CLOCK = 1e-8


@dataclass(frozen=True)
class DataPacket:
    """One packet from the interconnect and the phase it runs in."""

    vc: int
    index: int
    seq: int
    src: int
    flits: tuple[tuple[int, bool], ...]  # (data bits, bad) per payload flit

    def header(self, port: int) -> Header:
        return Header(self.vc, KIND_DATA, self.index, self.seq, self.src, port)


def random_bits(rng: np.random.Generator, width: int) -> int:
    return int.from_bytes(rng.bytes((width + 7) // 8), "little") & ((1 << width) - 1)


def random_packets(
    rng: np.random.Generator, params: PacketParams, count: int, bad: float = 0.2
) -> list[DataPacket]:
    """``count`` packets; the phase (VC, index) changes before a packet with probability 0.3."""
    packets, vc, index = [], VC_MP, 1
    for _ in range(count):
        if rng.random() < 0.3:
            vc, index = int(rng.choice(DATA_VCS)), int(rng.integers(1 << 10))
        flits = tuple(
            (random_bits(rng, params.switch.data_width), bool(rng.random() < bad))
            for _ in range(params.fmt.packet_flits)
        )
        packets.append(
            DataPacket(vc, index, int(rng.integers(SEQ_MOD)), int(rng.integers(64)), flits)
        )
    return packets


def random_controls(rng: np.random.Generator, count: int) -> list[Header]:
    return [
        Header(
            vc=int(rng.choice(DATA_VCS)),
            kind=int(rng.choice([KIND_ACK, KIND_NACK])),
            index=int(rng.integers(1 << 10)),
            seq=int(rng.integers(SEQ_MOD)),
            src=int(rng.integers(64)),
            dst=int(rng.integers(64)),
        )
        for _ in range(count)
    ]


async def until_ready(ctx, ready) -> None:
    """Ticks until ``ready`` was high at a clock edge. Plain awaits rather than
    ``tick().until()``: a producer left waiting when a check fails elsewhere is then closed
    quietly, instead of raising from its half-run async generator while pytest reports."""
    while not (await ctx.tick().sample(ready))[2]:
        pass


def data_producer(dut: OutputPort, packets: list[DataPacket], rng, idle: float):
    """Commits and offers the packets on ``i`` with random idles before each flit. A packet
    of a data VC is committed as the control unit does: once ``can_take`` shows a credit
    of its VC, ``reserve`` pulses for one cycle. The phase inputs are set before a packet's
    first flit is offered, when the previous packet has been taken whole, so they are
    stable while the port is busy."""
    lanes = dut.i.payload.shape()["data"].shape

    async def tb(ctx) -> None:
        for pk in packets:
            if pk.vc != VC_CTRL:
                while not (ctx.get(dut.can_take) >> pk.vc) & 1:
                    await ctx.tick()
                ctx.set(dut.reserve, 1 << pk.vc)
                await ctx.tick()
                ctx.set(dut.reserve, 0)
            ctx.set(dut.phase_vc, pk.vc)
            ctx.set(dut.phase_index, pk.index)
            for k, (data, bad) in enumerate(pk.flits):
                while rng.random() < idle:
                    await ctx.tick()
                ctx.set(dut.i.valid, 1)
                ctx.set(
                    dut.i.payload,
                    {
                        "data": lanes.from_bits(data),
                        "last": k == len(pk.flits) - 1,
                        "bad": bad,
                        "seq": pk.seq,
                        "src": pk.src,
                    },
                )
                await until_ready(ctx, dut.i.ready)
                ctx.set(dut.i.valid, 0)

    return tb


def ctrl_producer(dut: OutputPort, headers: list[Header], rng, idle: float, start: int = 0):
    """Offers the control headers on ``ctrl`` after ``start`` cycles, with random idles."""

    async def tb(ctx) -> None:
        if start:
            await ctx.tick().repeat(start)
        for h in headers:
            while rng.random() < idle:
                await ctx.tick()
            ctx.set(dut.ctrl.valid, 1)
            ctx.set(dut.ctrl.payload.as_value(), h.to_bits())
            await until_ready(ctx, dut.ctrl.ready)
            ctx.set(dut.ctrl.valid, 0)

    return tb


@dataclass
class Npu:
    """The link's receiver: checks every flit against what was sent and frees each packet
    slot (one credit back) a random delay after the packet arrived whole."""

    params: PacketParams
    port: int
    packets: list[DataPacket]
    controls: list[Header]
    rng: np.random.Generator
    max_delay: int
    cycle: int = 0
    data_done: int = 0
    ctrl_done: int = 0
    next_pkt: list[int] = field(default_factory=lambda: [0] * N_VCS)
    outstanding: list[int] = field(default_factory=lambda: [0] * N_VCS)
    releases: list[list[int]] = field(default_factory=lambda: [[] for _ in range(N_VCS)])
    open: tuple[int, DataPacket, int] | None = None  # (vc, packet, payload flits so far)
    most_outstanding: list[int] = field(default_factory=lambda: [0] * N_VCS)

    @property
    def done(self) -> bool:
        return self.data_done == len(self.packets) and self.ctrl_done == len(self.controls)

    def depth(self, vc: int) -> int:
        f = self.params.fmt
        return f.ctrl_depth if vc == VC_CTRL else f.data_depth

    def credit_pulses(self) -> int:
        """Bits of tx_credit this cycle: one freed slot per VC at most."""
        bits = 0
        for v in range(N_VCS):
            if self.releases[v] and self.releases[v][0] <= self.cycle:
                heapq.heappop(self.releases[v])
                self.outstanding[v] -= 1
                bits |= 1 << v
        return bits

    def free_later(self, vc: int) -> None:
        delay = int(self.rng.integers(self.max_delay + 1))
        heapq.heappush(self.releases[vc], self.cycle + 1 + delay)

    def start_packet(self, f: LinkFlit) -> None:
        assert self.params.link.good(f), f"head flit with a bad CRC on VC {f.vc}"
        assert f.pkt == self.next_pkt[f.vc], f"VC {f.vc}: pkt {f.pkt}, {self.next_pkt[f.vc]} due"
        self.next_pkt[f.vc] = (f.pkt + 1) % 16
        self.outstanding[f.vc] += 1
        assert self.outstanding[f.vc] <= self.depth(f.vc), f"VC {f.vc}: credits overdrawn"
        self.most_outstanding[f.vc] = max(self.most_outstanding[f.vc], self.outstanding[f.vc])

    def receive(self, f: LinkFlit) -> None:
        if f.vc == VC_CTRL:
            assert f.head and f.last, "a control packet is one flit"
            self.start_packet(f)
            assert self.ctrl_done < len(self.controls), "control flit never sent"
            want = self.controls[self.ctrl_done]
            assert f.header == want and f.data >> HEADER_BITS == 0
            self.ctrl_done += 1
            self.free_later(VC_CTRL)
        elif f.head:
            assert self.open is None, "a data header inside an open data packet"
            assert not f.last, "a data header flit is not the packet's last"
            self.start_packet(f)
            assert self.data_done < len(self.packets), "data packet never sent"
            pk = self.packets[self.data_done]
            assert f.vc == pk.vc
            assert f.header == pk.header(self.port) and f.data >> HEADER_BITS == 0
            self.open = (f.vc, pk, 0)
        else:
            assert self.open is not None, f"body flit on VC {f.vc} outside a packet"
            vc, pk, k = self.open
            assert f.vc == vc, f"body flit on VC {f.vc} inside a packet on VC {vc}"
            data, bad = pk.flits[k]
            assert f.data == data, f"packet {self.data_done} flit {k}: data"
            assert self.params.link.ok(f) and f.bad == bad, "the data's CRC, bad iff bad"
            assert f.pkt == (self.next_pkt[vc] - 1) % 16, "a body flit carries its packet's pkt"
            assert f.last == (k == len(pk.flits) - 1), "last only on the final payload flit"
            if f.last:
                self.open = None
                self.data_done += 1
                self.free_later(vc)
            else:
                self.open = (vc, pk, k + 1)

    def testbench(self, dut: OutputPort, max_cycles: int, drain: int = 8):
        link = self.params.link

        async def tb(ctx) -> None:
            while not self.done and self.cycle < max_cycles:
                ctx.set(dut.tx_credit, self.credit_pulses())
                _, _, valid, payload, busy = await ctx.tick().sample(
                    dut.tx.valid, dut.tx.payload, dut.busy
                )
                if valid and not link.decode(payload.as_bits()).sync:
                    self.receive(link.decode(payload.as_bits()))
                assert busy == (self.open is not None), f"cycle {self.cycle}: busy"
                self.cycle += 1
            ctx.set(dut.tx_credit, 0)
            # Nothing more may come out once everything has been delivered.
            for _ in range(drain):
                _, _, valid = await ctx.tick().sample(dut.tx.valid)
                assert not valid, "a flit nobody sent"

        return tb


def params_of(ports: int, lanes: int, dtype: str, **fmt: int) -> PacketParams:
    return PacketParams(
        SwitchParams(ports=ports, m=2, lanes=lanes, dtype=dtype),
        PacketFormat(**fmt, link_retry=False),
    )


PARAMS = {
    "default": params_of(4, 4, "fp16"),
    # One credit per VC, one-flit packets: every packet waits for the one before it.
    "tight": params_of(8, 2, "fp32", packet_flits=1, data_depth=1, ctrl_depth=1),
    # A flit exactly as wide as the header.
    "narrow": params_of(2, 3, "int16", packet_flits=3, data_depth=2, ctrl_depth=3),
}


@pytest.mark.parametrize("name", PARAMS)
@pytest.mark.parametrize(
    "idle,ctrl_idle,max_delay", [(0.0, 0.9, 0), (0.3, 0.5, 6), (0.1, 0.7, 100)]
)
def test_random_traffic(name, idle, ctrl_idle, max_delay):
    params = PARAMS[name]
    seed = sorted(PARAMS).index(name) * 10 + int(max_delay)
    rngs = np.random.default_rng(seed).spawn(4)
    port = params.ports - 1
    packets = random_packets(rngs[0], params, 40)
    controls = random_controls(rngs[0], 30)
    dut = OutputPort(params, port)
    npu = Npu(params, port, packets, controls, rngs[3], max_delay)
    sim = Simulator(dut)
    sim.add_clock(CLOCK)
    sim.add_testbench(data_producer(dut, packets, rngs[1], idle), background=True)
    sim.add_testbench(ctrl_producer(dut, controls, rngs[2], ctrl_idle), background=True)
    sim.add_testbench(npu.testbench(dut, max_cycles=20_000))
    sim.run()
    assert npu.data_done == len(packets), f"{npu.data_done} of {len(packets)} data packets"
    assert npu.ctrl_done == len(controls), f"{npu.ctrl_done} of {len(controls)} control packets"
    if max_delay == 100:
        # Slow credits must have run a data VC and the control VC out of them, else the
        # limit went untested.
        assert max(npu.most_outstanding[v] for v in DATA_VCS) == params.fmt.data_depth
        assert npu.most_outstanding[VC_CTRL] == params.fmt.ctrl_depth


def run_trace(
    params: PacketParams,
    port: int,
    packets: list[DataPacket],
    controls: list[Header],
    cycles: int,
    credits: dict[int, int] | None = None,
    ctrl_start: int = 0,
) -> list[tuple[LinkFlit | None, int, int]]:
    """Runs ``cycles`` cycles with no idles and no credit returned except ``credits``
    ({cycle: tx_credit bits}); returns (tx flit or None, busy, i.ready) per cycle."""
    dut = OutputPort(params, port)
    sim = Simulator(dut)
    sim.add_clock(CLOCK)
    rng = np.random.default_rng(0)
    sim.add_testbench(data_producer(dut, packets, rng, 0.0), background=True)
    sim.add_testbench(ctrl_producer(dut, controls, rng, 0.0, ctrl_start), background=True)
    trace = []

    async def tb(ctx) -> None:
        for cycle in range(cycles):
            ctx.set(dut.tx_credit, (credits or {}).get(cycle, 0))
            _, _, valid, payload, busy, ready = await ctx.tick().sample(
                dut.tx.valid, dut.tx.payload, dut.busy, dut.i.ready
            )
            flit = params.link.decode(payload.as_bits())
            trace.append((flit if valid else None, busy, ready))

    sim.add_testbench(tb)
    sim.run()
    return trace


def heads(trace) -> list[int]:
    """Cycles in which a data header flit was on the link."""
    return [c for c, (f, _, _) in enumerate(trace) if f and f.head and f.vc != VC_CTRL]


def test_no_credit_no_commit():
    """``can_take`` falls once every credit of a VC is reserved, so the control unit commits
    no packet the NPU cannot take whole; credits of other VCs do not raise it."""
    params = params_of(4, 4, "fp16", packet_flits=2, data_depth=2, ctrl_depth=1)
    rng = np.random.default_rng(1)
    packets = [replace_vc(p, VC_PP) for p in random_packets(rng, params, 3, bad=0.0)]
    trace = run_trace(
        params,
        1,
        packets,
        [],
        60,
        credits={30: 1 << VC_MP | 1 << VC_DP | 1 << VC_CTRL, 40: 1 << VC_PP},
    )
    starts = heads(trace)
    # Two credits: two packets one after the other (3 link flits each, and the cycle the
    # producer spends on its reserve pulse).
    assert len(starts) == 3 and starts[1] - starts[0] == 4
    # The PP credit pulses in cycle 40: can_take rises in 41, the reserve pulses then, the
    # first flit is offered in 42, its header is on the link in 43.
    assert starts[2] == 43, "the third packet waited for a PP credit"
    stalled = trace[starts[1] + 3 : starts[2]]
    assert all(f is None or f.sync for f, _, _ in stalled)

    # The control VC spends its credit at the flit: the second control packet waits.
    controls = random_controls(rng, 2)
    trace = run_trace(params, 1, [], controls, 30, credits={20: 1 << VC_CTRL})
    sent = [c for c, (f, _, _) in enumerate(trace) if f]
    assert sent == [1, 22]


def test_a_vc_out_of_credits_and_quiet_sends_a_sync():
    """After the last credit of PP is spent and ``sync_interval`` quiet cycles, the port
    sends a sync of PP carrying its next ``pkt``, and again every interval while it lasts."""
    params = params_of(4, 4, "fp16", packet_flits=2, data_depth=1)
    (pk,) = [replace_vc(p, VC_PP) for p in random_packets(np.random.default_rng(5), params, 1)]
    interval = sync_interval(params.fmt)
    trace = run_trace(params, 1, [pk], [], 2 * interval + 30)
    syncs = [(c, f) for c, (f, _, _) in enumerate(trace) if f and f.sync]
    last_flit = max(c for c, (f, _, _) in enumerate(trace) if f and not f.sync)
    assert [c for c, _ in syncs] == [last_flit + interval, last_flit + 2 * interval]
    assert all((f.vc, f.pkt, f.head, f.last) == (VC_PP, 1, False, False) for _, f in syncs)


def test_control_vc_never_carries_data():
    params = params_of(4, 4, "fp16", packet_flits=2)
    (pk,) = random_packets(np.random.default_rng(4), params, 1, bad=0.0)
    trace = run_trace(params, 2, [replace_vc(pk, VC_CTRL)], [], 20)
    assert all(f is None and not busy and not ready for f, busy, ready in trace)


def replace_vc(pk: DataPacket, vc: int) -> DataPacket:
    return DataPacket(vc, pk.index, pk.seq, pk.src, pk.flits)


def test_control_waits_for_a_gap_inside_a_packet():
    """A packet's flits arriving back to back go out back to back: the control flit that
    came meanwhile waits for the packet's end; one arriving before a header may precede it."""
    params = params_of(4, 4, "fp16", packet_flits=4)
    rng = np.random.default_rng(2)
    (pk,) = random_packets(rng, params, 1, bad=0.0)
    controls = random_controls(rng, 1)
    trace = run_trace(params, 3, [pk], controls, 16, ctrl_start=4)
    flits = [f for f, _, _ in trace if f]
    kinds = ["ctrl" if f.vc == VC_CTRL else "head" if f.head else "body" for f in flits]
    assert kinds == ["head", "body", "body", "body", "body", "ctrl"], kinds
    data = [c for c, (f, _, _) in enumerate(trace) if f and f.vc != VC_CTRL]
    assert data == list(range(data[0], data[0] + 5))  # no gap
    ctrl = flits[-1]
    assert ctrl.head and ctrl.last and params.link.good(ctrl) and ctrl.header == controls[0]

    trace = run_trace(params, 3, [pk], controls, 16, ctrl_start=0)
    kinds = [("ctrl" if f.vc == VC_CTRL else "data") for f, _, _ in trace if f]
    assert kinds == ["ctrl"] + ["data"] * 5


def test_bad_flits_go_out_marked_bad_with_their_data_and_crc():
    params = params_of(4, 2, "fp32", packet_flits=4)
    rng = np.random.default_rng(3)
    (pk,) = random_packets(rng, params, 1, bad=0.0)
    bad = (True, False, True, False)
    pk = DataPacket(
        VC_DP,
        pk.index,
        pk.seq,
        pk.src,
        tuple((d, b) for (d, _), b in zip(pk.flits, bad, strict=True)),
    )
    trace = run_trace(params, 0, [pk], [], 10)
    head, *body = [f for f, _, _ in trace if f]
    assert head.head and params.link.good(head)
    assert [f.bad for f in body] == list(bad)
    assert all(params.link.ok(f) for f in body)
    assert [f.data for f in body] == [d for d, _ in pk.flits]


@pytest.mark.needs("verilator")
def test_verilog_converts_and_lints_clean():
    """verilator --lint-only -Wall finds nothing beyond the waivers lint_verilog explains."""
    dut = OutputPort(PARAMS["default"], 1)
    # convert() rejects the constant ``ready`` of the always-ready ``tx`` stream when it lists
    # a component's ports itself (amaranth-lang/amaranth#1574), so they are listed here.
    ports = [value for _, _, value in dut.signature.flatten(dut) if isinstance(value, Signal)]
    text = verilog.convert(dut, ports=ports, name="output_port")
    assert "module output_port(" in text and "tx__ready" not in text
    problems = lint_verilog(text, REPO / "build" / "tests" / "packet" / "output_port")
    assert not problems, "\n".join(problems)


def test_port_out_of_range():
    params = PARAMS["default"]
    with pytest.raises(ValueError, match="port must be"):
        OutputPort(params, params.ports)
