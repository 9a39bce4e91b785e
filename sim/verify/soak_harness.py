"""The self-checking soak harness ``fred_soak``: traffic generators and checkers in Amaranth
around the generated switch Verilog, which it instantiates (``Instance``) by the names in the
switch's JSON manifest, so the soak tests the very file the cocotb benches use.

What the harness does
---------------------
* ``ConfigLoader``: from power-up it writes one routed flow set (fredfab.sim.verify.soak
  ``soak_flows``) into slot 1 through ``cfg``, raises ``select`` until it is accepted, then
  raises ``running``, which starts the traffic.
* ``Generator`` (one per input port of a flow): a xorshift64 state seeded per port, advanced
  once per accepted flit, whose bits make the flit's data; a ``last`` sequence seeded per
  *flow*, so every input of a flow cuts the same packets (as the flow contract requires);
  and an idle pattern of its own (always / 3 in 4 / 1 in 2 cycles offering; valid is held
  until the transfer).
* ``Checker`` (one per output port): a readiness pattern (always, 3/4, 1/2, or long random
  stalls of up to 63 cycles) and its own copies of the generators of its flow's inputs,
  advanced once per output flit. Output flit k of a flow must be the element-wise sum of
  input flit k of every input of the flow, and carry the flow's k-th ``last``. Sums wrap, so
  for integer element types the order of additions does not matter and the checker needs
  no reduction tree; that is why flows with more than one input need an integer type
  (float variants soak with single-input flows only). Outputs of ports no flow uses must
  stay silent (any flit there is an error).
* ``Counters``: cycles with traffic, flits accepted at the inputs, mismatches and the first
  one (port, flit index, cycle, expected and received flit; lowest port first in a cycle).
  Flits per output port come from the checkers.
* ``fault_en``/``fault_port``/``fault_index``: flip bit 0 of the flit the checker sees on one
  port at one flit index, to show that a mismatch is caught (exactly one error, there).

Why this is sound: the expected value of every output flit is computed from the same
deterministic sequences the generators used, indexed by flit count, not by time, so any
loss, duplication, reordering, misrouting, wrong sum or wrong packet boundary shows up,
whatever the idle and backpressure timing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from amaranth.back import verilog
from amaranth.hdl import (
    C,
    Cat,
    ClockDomain,
    ClockSignal,
    Const,
    Module,
    ResetSignal,
    Shape,
    Signal,
    Value,
)
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from fredfab.hw.flit import flit_layout, flit_stream
from fredfab.hw.params import SwitchParams
from fredfab.model.switch.router import Routing
from fredfab.sim.verify.dut_instance import manifest_instance

MODULE = "fred_soak"
#: Widths of the flit counters (per output port) and of the error counter and fields.
COUNT_BITS = 32
ERROR_BITS = 32
PORT_BITS = 8


def seed(tag: str, k: int) -> int:
    """A non-zero 64-bit xorshift seed for sequence ``tag`` of port (or flow) ``k``."""
    h = hashlib.sha256(f"{tag}:{k}".encode()).digest()
    return int.from_bytes(h[:8], "little") or 1


def clock_without_reset(m: Module, clk: Value) -> None:
    """A soak harness's ``sync`` domain: clocked by ``clk``, never reset.

    Every register of the switch and the harness starts at its initial value, which is what
    a reset loads (Amaranth gives each register one, and the Verilog declares it), so
    power-up is the reset state and the simulator's loop only toggles the clock. A reset
    port driven by the loop made Verilator evaluate every next state on both of a cycle's
    evaluations (the circuit soak at P = 4: 6,079 instructions per cycle against 3,809);
    one held from a counter inside still tested it in every next state every cycle (the
    packet soak: 35,779 against 32,281)."""
    m.domains.sync = ClockDomain("sync")
    m.d.comb += [ClockSignal("sync").eq(clk), ResetSignal("sync").eq(0)]


def _shl64(x: Value, k: int) -> Value:
    """``x << k`` truncated to 64 bits."""
    return Cat(C(0, k), x[: 64 - k])


class XorShift64(wiring.Component):
    """Marsaglia's xorshift64 sequence (shifts 13, 7, 17) from ``seed`` (reset value):
    ``value`` moves to the next element in every cycle ``advance`` is high; ``next`` is that
    element (combinationally)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        super().__init__({"advance": In(1), "value": Out(64, init=seed), "next": Out(64)})

    def elaborate(self, platform) -> Module:
        m = Module()
        # One signal per step (an expression used twice would be computed twice in the
        # Verilog) and shifts that stay 64 bits wide (``x << 13`` is 77 bits wide, which
        # Verilator computes in arrays of words): both cost the Verilated soak speed.
        x, t1, t2, nxt = self.value, Signal(64), Signal(64), self.next
        m.d.comb += [t1.eq(x ^ _shl64(x, 13)), t2.eq(t1 ^ t1[7:]), nxt.eq(t2 ^ _shl64(t2, 17))]
        with m.If(self.advance):
            m.d.sync += x.eq(nxt)
        return m


def mix_key(width: int) -> int:
    """The constant ``mix`` xors into ``width`` data bits: 64 bits per chunk of data."""
    return sum(seed("mix", j) << (64 * j) for j in range(-(-width // 64))) & ((1 << width) - 1)


def mix(x: Value, key: Value, width: int) -> Value:
    """``width`` data bits from one 64-bit state: 64-bit chunks (least significant first),
    chunk j the state rotated left by 17 j, all xored with ``key`` (``mix_key(width)``)."""
    chunks = [x.rotate_left((17 * j) % 64) for j in range(-(-width // 64))]
    return Cat(*chunks)[:width] ^ key


def first_of_packet(last_state: Value) -> Value:
    """The ``last`` bit a ``last`` sequence state gives (one flit in eight on average)."""
    return last_state[:3] == 0


class ConfigLoader(wiring.Component):
    """Writes ``words`` into ``slot`` through ``cfg``, then selects ``slot``; ``running``
    rises in the cycle after the selection is accepted and stays high."""

    def __init__(
        self, words: Sequence[int], cfg_layout: data.Layout, select_bits: int, slot: int = 1
    ) -> None:
        if not words:
            raise ValueError("the configuration has no words")
        if len(words) > 1 << Shape.cast(cfg_layout["addr"].shape).width:
            raise ValueError(f"{len(words)} words do not fit the cfg address field")
        self.words, self.slot = tuple(words), slot
        super().__init__(
            {
                "cfg": Out(stream.Signature(cfg_layout)),
                "select": Out(stream.Signature(select_bits)),
                "running": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        index = Signal(16)
        word = Signal(self.cfg.payload.data.shape())
        with m.Switch(index):
            for i, v in enumerate(self.words):
                with m.Case(i):
                    m.d.comb += word.eq(v)
        m.d.comb += [
            self.cfg.payload.slot.eq(self.slot),
            self.cfg.payload.addr.eq(index),
            self.cfg.payload.data.eq(word),
            self.select.payload.eq(self.slot),
        ]
        with m.FSM():
            with m.State("LOAD"):
                m.d.comb += self.cfg.valid.eq(1)
                with m.If(self.cfg.ready):
                    m.d.sync += index.eq(index + 1)
                    with m.If(index == len(self.words) - 1):
                        m.next = "SELECT"
            with m.State("SELECT"):
                m.d.comb += self.select.valid.eq(1)
                with m.If(self.select.ready):
                    m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += self.running.eq(1)
        return m


def offer_pattern(mode: int, state: Value) -> Value:
    """Whether to offer (or accept) a flit this cycle: always, 3 in 4, or 1 in 2 cycles."""
    return [C(1, 1), state[:2] != 0, state[0]][mode]


class Generator(wiring.Component):
    """The traffic of input ``port`` (of flow ``flow_id``) with idle pattern ``port % 3``:
    random bits over the whole flit, lanes of ``element_bits``."""

    def __init__(self, data_width: int, element_bits: int, port: int, flow_id: int) -> None:
        if data_width % element_bits:
            raise ValueError(f"data width {data_width} is not a multiple of {element_bits}")
        self.data_width, self.port, self.flow_id = data_width, port, flow_id
        flit = flit_stream(element_bits, data_width // element_bits)
        super().__init__({"running": In(1), "mix_key": In(data_width), "o": Out(flit)})

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.data = data_seq = XorShift64(seed("data", self.port))
        m.submodules.last = last_seq = XorShift64(seed("last", self.flow_id))
        m.submodules.idle = idle_seq = XorShift64(seed("valid", self.port))
        fire = Signal()
        m.d.comb += [
            fire.eq(self.o.valid & self.o.ready),
            self.o.payload.data.eq(mix(data_seq.value, self.mix_key, self.data_width)),
            self.o.payload.last.eq(first_of_packet(last_seq.value)),
            idle_seq.advance.eq(self.running),
            data_seq.advance.eq(self.running & fire),
            last_seq.advance.eq(self.running & fire),
        ]
        with m.If(self.running & (~self.o.valid | fire)):  # valid is held until the transfer
            m.d.sync += self.o.valid.eq(offer_pattern(self.port % 3, idle_seq.value))
        return m


def report_signature(flit_bits: int) -> wiring.Signature:
    """What a checker tells the counters every cycle."""
    return wiring.Signature(
        {
            "fire": Out(1),  # a flit was accepted at the output
            "bad": Out(1),  # ... and it was wrong (meaningful when fire)
            "count": Out(COUNT_BITS),  # flits accepted before this cycle
            "got": Out(flit_bits),
            "expected": Out(flit_bits),
        }
    )


class Checker(wiring.Component):
    """Readiness pattern ``port % 4`` and the check of output ``port`` against the wrap-sum
    of ``inputs`` (flow ``flow_id``); with no inputs, any flit is an error."""

    def __init__(
        self,
        data_width: int,
        element_bits: int,
        port: int,
        inputs: Sequence[int] = (),
        flow_id: int | None = None,
    ) -> None:
        if data_width % element_bits:
            raise ValueError(f"data width {data_width} is not a multiple of {element_bits}")
        if bool(inputs) != (flow_id is not None):
            raise ValueError("a checked output needs both its flow's inputs and the flow id")
        self.data_width, self.element_bits = data_width, element_bits
        self.port, self.inputs, self.flow_id = port, tuple(sorted(inputs)), flow_id
        self.flit = flit = flit_layout(element_bits, data_width // element_bits)
        super().__init__(
            {
                "running": In(1),
                "mix_key": In(data_width),
                "fault": In(1),  # flip bit 0 of the flit whose index is fault_index
                "fault_index": In(COUNT_BITS),
                "i": In(flit_stream(element_bits, data_width // element_bits)),
                "report": Out(report_signature(flit.size)),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.ready = ready_seq = XorShift64(seed("ready", self.port))
        ready = ready_seq.value
        stall, stall_left = Signal(), Signal(6)
        count = Signal(COUNT_BITS)
        ready_now = [*(offer_pattern(mode, ready) for mode in range(3)), ~stall][self.port % 4]
        fire = Signal()
        m.d.comb += [
            self.i.ready.eq(self.running & ready_now),
            fire.eq(self.i.valid & self.i.ready),
            ready_seq.advance.eq(self.running),
            self.report.fire.eq(fire),
            self.report.count.eq(count),
        ]
        with m.If(self.running):
            with m.If(stall_left == 0):  # long stalls and runs for readiness pattern 3
                m.d.sync += [stall.eq(~stall), stall_left.eq(ready[8:14])]
            with m.Else():
                m.d.sync += stall_left.eq(stall_left - 1)
            with m.If(fire):
                m.d.sync += count.eq(count + 1)
        if not self.inputs:
            m.d.comb += [self.report.bad.eq(1), self.report.got.eq(self.i.payload)]
            return m
        # The generators of the flow's inputs again, advanced once per output flit.
        refs = []
        for p in self.inputs:
            m.submodules[f"ref{p}"] = ref = XorShift64(seed("data", p))
            data = Signal(self.data_width, name=f"ref{p}_data")
            m.d.comb += [ref.advance.eq(fire), data.eq(mix(ref.value, self.mix_key, len(data)))]
            refs.append(data)
        m.submodules.last = last_seq = XorShift64(seed("last", self.flow_id))
        m.d.comb += last_seq.advance.eq(fire)
        expected = Signal(self.flit)
        eb = self.element_bits
        for lane in range(self.data_width // eb):
            terms = [r[lane * eb : (lane + 1) * eb] for r in refs]
            m.d.comb += expected.data[lane].eq(sum(terms))  # wraps
        m.d.comb += expected.last.eq(first_of_packet(last_seq.value))
        got = Signal.like(self.report.got)
        m.d.comb += [
            got.eq(self.i.payload.as_value() ^ (self.fault & (self.fault_index == count))),
            self.report.expected.eq(expected),
            self.report.got.eq(got),
            self.report.bad.eq(got != expected.as_value()),
        ]
        return m


class Counters(wiring.Component):
    """Cycles with traffic, input flits, errors and the first error of ``ports`` checkers."""

    def __init__(self, ports: int, inputs: int, flit_bits: int) -> None:
        self.ports = ports
        super().__init__(
            {
                "running": In(1),
                "in_fire": In(inputs),  # one bit per generator
                "checks": In(report_signature(flit_bits)).array(ports),
                "cycles": Out(64),
                "in_flits": Out(64),
                "errors": Out(ERROR_BITS),
                "err_port": Out(PORT_BITS),
                "err_index": Out(COUNT_BITS),
                "err_cycle": Out(64),
                "err_got": Out(flit_bits),
                "err_exp": Out(flit_bits),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        with m.If(self.running):
            wrong = [c.fire & c.bad for c in self.checks]
            m.d.sync += [
                self.cycles.eq(self.cycles + 1),
                self.in_flits.eq(self.in_flits + sum(b for b in self.in_fire)),
                self.errors.eq(self.errors + sum(wrong)),
            ]
            with m.If(self.errors == 0):
                for q, (check, w) in enumerate(zip(self.checks, wrong, strict=True)):
                    with (m.If if q == 0 else m.Elif)(w):  # lowest port first
                        m.d.sync += [
                            self.err_port.eq(q),
                            self.err_index.eq(check.count),
                            self.err_cycle.eq(self.cycles),
                            self.err_got.eq(check.got),
                            self.err_exp.eq(check.expected),
                        ]
        return m


class SoakHarness(wiring.Component):
    """``fred_soak``: the switch of ``manifest`` (instantiated by name) configured with
    ``routing``, driven by generators and watched by checkers and counters."""

    def __init__(self, params: SwitchParams, manifest: dict, routing: Routing) -> None:
        P = params.ports
        fields = manifest["flit"]["fields"]
        if fields != {
            "data": {"lsb": 0, "width": params.data_width},
            "last": {"lsb": params.data_width, "width": 1},
        }:
            raise ValueError(f"flit layout {fields} is not data then last")
        for f in routing.flows:
            if len(f.ips) > 1 and params.element.is_float:
                raise ValueError("soak reductions need an integer element type")
        self.params, self.manifest, self.routing = params, manifest, routing
        self.flit_bits = manifest["flit"]["width"]
        super().__init__(
            {
                "clk": In(1),
                "fault_en": In(1),
                "fault_port": In(PORT_BITS),
                "fault_index": In(COUNT_BITS),
                "cycles": Out(64),
                "in_flits": Out(64),
                "errors": Out(ERROR_BITS),
                "running": Out(1),
                "err_port": Out(PORT_BITS),
                "err_index": Out(COUNT_BITS),
                "err_cycle": Out(64),
                "err_got": Out(self.flit_bits),
                "err_exp": Out(self.flit_bits),
                "out_flits": Out(data.ArrayLayout(COUNT_BITS, P)),
            }
        )

    def _cfg_layout(self) -> data.FlexibleLayout:
        cfg = self.manifest["config"]["cfg_payload"]
        size = max(f["lsb"] + f["width"] for f in cfg.values())
        return data.FlexibleLayout(
            size, {k: data.Field(f["width"], f["lsb"]) for k, f in cfg.items()}
        )

    def _port_width(self, name: str) -> int:
        return next(p["width"] for p in self.manifest["ports"] if p["name"] == name)

    def elaborate(self, platform) -> Module:
        m = Module()
        clock_without_reset(m, self.clk)
        p, routing, streams = self.params, self.routing, self.manifest["streams"]
        flow_id = {f: i for i, f in enumerate(routing.flows)}
        owner_in = {q: f for f in routing.flows for q in f.ips}
        owner_out = {q: f for f in routing.flows for q in f.ops}
        select_bits = self._port_width(streams["select"]["payload"])
        words = routing.config.to_words(p.word_width)
        m.submodules.loader = loader = ConfigLoader(words, self._cfg_layout(), select_bits)
        running = loader.running
        m.d.comb += self.running.eq(running)
        # The mix constant lives in a register that keeps its initial value: xor with a literal
        # constant becomes bit-by-bit wiring in the Verilog (inverted and plain bits apart),
        # which Verilates to one masked insert per run of bits (a fifth of the soak speed).
        key = Signal(p.data_width, init=mix_key(p.data_width))
        m.d.sync += key.eq(key)

        conns: dict[str, Value] = {}  # DUT port name -> harness signal

        def attach(names: dict[str, str], s: wiring.PureInterface | None, width: int = 0) -> None:
            if s is None:  # an input no flow uses: never valid
                conns[names["payload"]], conns[names["valid"]] = Const(0, width), Const(0, 1)
                conns[names["ready"]] = Signal(name=f"unused_{names['ready']}")
                return
            conns[names["payload"]] = Value.cast(s.payload)
            conns[names["valid"]], conns[names["ready"]] = s.valid, s.ready

        attach(streams["cfg"], loader.cfg)
        attach(streams["select"], loader.select)
        gens = []
        for q in range(p.ports):
            g = None
            if q in owner_in:
                g = Generator(p.data_width, p.element.bits, q, flow_id[owner_in[q]])
                m.submodules[f"gen{q}"] = g
                m.d.comb += [g.running.eq(running), g.mix_key.eq(key)]
                gens.append(g)
            attach(streams["i"][q], g.o if g else None, self.flit_bits)

        m.submodules.counters = counters = Counters(p.ports, len(gens), self.flit_bits)
        m.d.comb += [
            counters.running.eq(running),
            counters.in_fire.eq(Cat(g.o.valid & g.o.ready for g in gens)),
        ]
        for q in range(p.ports):
            f = owner_out.get(q)
            chk = Checker(
                p.data_width,
                p.element.bits,
                q,
                sorted(f.ips) if f else (),
                flow_id[f] if f else None,
            )
            m.submodules[f"check{q}"] = chk
            m.d.comb += [
                chk.running.eq(running),
                chk.mix_key.eq(key),
                chk.fault.eq(self.fault_en & (self.fault_port == q)),
                chk.fault_index.eq(self.fault_index),
                self.out_flits[q].eq(chk.report.count),
            ]
            wiring.connect(m, chk.report, counters.checks[q])
            attach(streams["o"][q], chk.i, self.flit_bits)
        for name in ("cycles", "in_flits", "errors", "err_port", "err_index", "err_cycle"):
            m.d.comb += getattr(self, name).eq(getattr(counters, name))
        m.d.comb += [self.err_got.eq(counters.err_got), self.err_exp.eq(counters.err_exp)]

        # The switch itself; outputs nobody reads (status) still get a wire each.
        m.submodules.dut = manifest_instance(self.manifest, conns, idle_inputs=False)
        return m


def harness_verilog(params: SwitchParams, manifest: dict, routing: Routing) -> str:
    """The Verilog of ``fred_soak`` (the switch module itself is not in it)."""
    # No source locations: the text (a cache key) then depends on the design only.
    return verilog.convert(SoakHarness(params, manifest, routing), name=MODULE, emit_src=False)
