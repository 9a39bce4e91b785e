"""Harnesses of the building blocks: the skid buffer and one uSwitch of each kind.

Skid buffer (hw/skid.py). Any sender, any receiver. Asserted: the output keeps the stream
rules; the flits leave in the order they came, none lost or made up (a two-entry shadow
queue of the accepted payloads, the buffer's capacity, against the output); input ``ready``
is high exactly when fewer than two flits are held, and the output is valid exactly when one
or more are.

uSwitch (hw/uswitch.py). One node of a switch graph with any configuration the model's
decoder accepts for it (``AnyConst`` codes), any senders and receivers. Asserted: every
output keeps the stream rules; every output carries, flit for flit, what its code names (the
input's payload, or for the sum the lane-wise integer sum of inputs 0 and 1, from the same
input flits); an output never offers the flit at the front of its input twice; the inputs
of a sum move together.
"""

from __future__ import annotations

from amaranth.asserts import AnyConst
from amaranth.hdl import Assert, Assume, Cat, Module, Signal, Value
from amaranth.lib import stream

from fredfab.hw.config_layout import node_codes_layout
from fredfab.hw.flit import flit_stream
from fredfab.hw.skid import SkidBuffer
from fredfab.hw.uswitch import USwitch
from fredfab.model.switch.arches import build_topology
from fredfab.model.switch.graph import SUM_OPERANDS, Node, SourceKind
from fredfab.sim.formal import streams
from fredfab.sim.formal.decoder import node_accepted
from fredfab.sim.formal.mutation import drop_valid_while_stalled, mutated, ready_regardless
from fredfab.sim.formal.runner import harness_module

#: The flit the block proofs use: one int8 lane (the integer adder: the float adders are
#: checked exhaustively by tests/hw/test_adder.py) and ``last``.
ELEMENT_BITS, LANES = 8, 1
SKID_WIDTH = 4


def skid_harness(order: bool = False, mutant: bool = False) -> Module:
    """``order`` False: the stream rules and the occupancy relations (k-induction). ``order``
    True: flits leave in order, unchanged (bounded: the skid entry is not visible at the
    ports until it moves, so induction cannot close on it)."""
    m = harness_module()
    dut = SkidBuffer(stream.Signature(SKID_WIDTH))
    if mutant and order:
        m.submodules.dut = mutated(dut, ready_regardless(lambda c: c.i))
    elif mutant:
        m.submodules.dut = mutated(dut, drop_valid_while_stalled(lambda c: c.o, registered=True))
    else:
        m.submodules.dut = dut
    streams.free_input(m, dut.i, "i")
    streams.free_ready(m, dut.o)

    held = [Signal(SKID_WIDTH, name=f"shadow{k}") for k in range(2)]
    count = Signal(range(3))
    push, pop = streams.transfer(dut.i), streams.transfer(dut.o)
    # The shadow queue: entry 0 is the oldest flit held.
    with m.If(pop & push):
        with m.If(count == 1):
            m.d.sync += held[0].eq(dut.i.payload)
        with m.Else():
            m.d.sync += [held[0].eq(held[1]), held[1].eq(dut.i.payload)]
    with m.Elif(pop):
        m.d.sync += [held[0].eq(held[1]), count.eq(count - 1)]
    with m.Elif(push):
        with m.Switch(count):
            with m.Case(0):
                m.d.sync += held[0].eq(dut.i.payload)
            with m.Case(1):
                m.d.sync += held[1].eq(dut.i.payload)
        m.d.sync += count.eq(count + 1)
    if order:
        with m.If(dut.o.valid):
            m.d.comb += Assert(dut.o.payload == held[0], "skid: flits leave in order, unchanged")
        m.d.comb += Assert(count <= 2, "skid: never more than two flits held")
        return m
    streams.assert_rules(m, dut.o, "o")
    m.d.comb += [
        Assert(count <= 2, "skid: never more than two flits held"),
        Assert(dut.i.ready == (count < 2), "skid: ready exactly while a slot is free"),
        Assert(dut.o.valid == (count != 0), "skid: output valid exactly while a flit is held"),
        Assert(dut.busy == (count != 0), "skid: busy exactly while a flit is held"),
    ]
    return m


def block_nodes() -> dict[str, Node]:
    """One node of every (kind, inputs, outputs) shape the Clos and crossbar graphs use at
    P = 4 and 5, m = 2 and 3, named like ``R_2x3``."""
    nodes: dict[str, Node] = {}
    for arch, P, mm in [("clos", 4, 2), ("clos", 4, 3), ("clos", 5, 2), ("clos", 5, 3)] + [
        ("xbar", 4, 2),
        ("xbar", 5, 2),
    ]:
        for node in build_topology(P, mm, arch).nodes:
            nodes.setdefault(f"{node.kind.value}_{node.n_in}x{node.n_out}", node)
    return dict(sorted(nodes.items()))


def _fields_of(node: Node):
    """The node's field table, at offset 0 (a lone uSwitch's codes)."""
    from fredfab.model.switch.config_layout import ConfigLayout

    return ConfigLayout.of_nodes([node]).node_fields(node.index)


def uswitch_harness(name: str, counts: bool = False, mutant: bool = False) -> Module:
    """``counts`` False: the stream rules and what each output carries (k-induction).
    ``counts`` True: flit counts per input and output (bounded: counts are unbounded state)."""
    node = block_nodes()[name]
    node = Node(0, node.name, node.kind, node.n_in, node.n_out, 0, node.registered)
    fields = _fields_of(node)
    flit = flit_stream(ELEMENT_BITS, LANES)
    m = harness_module()
    dut = USwitch(node, fields, flit, f"int{ELEMENT_BITS}", LANES)
    if mutant and counts:
        m.submodules.dut = mutated(dut, ready_regardless(lambda c: c.i[0]))
    elif mutant:
        m.submodules.dut = mutated(dut, drop_valid_while_stalled(lambda c: c.o[0]))
    else:
        m.submodules.dut = dut

    layout = node_codes_layout(fields)
    codes = layout(AnyConst(layout.size))
    m.d.comb += dut.codes.eq(codes)
    fields_v = [codes[q] for q in range(node.n_out)]
    m.d.comb += Assume(node_accepted(node, fields_v), "codes: a tuple the model accepts")
    for i in range(node.n_in):
        streams.free_input(m, dut.i[i], f"i{i}")
    for q in range(node.n_out):
        streams.free_ready(m, dut.o[q])
        if not counts:
            streams.assert_rules(m, dut.o[q], f"o{q}")

    n_in = [streams.counter(m, streams.transfer(dut.i[i]), 8, f"in{i}") for i in range(node.n_in)]
    n_out = [
        streams.counter(m, streams.transfer(dut.o[q]), 8, f"out{q}") for q in range(node.n_out)
    ]
    for q in range(node.n_out):
        o = dut.o[q]
        for code in range(1 << node.code_bits):
            try:
                source = node.decode(code)
            except ValueError:
                source = None  # a value no source has: it must carry nothing
            with m.If(codes[q] == code):
                if source is None or source.kind is SourceKind.NONE:
                    m.d.comb += Assert(~o.valid, f"o{q}: NONE (or no source) carries nothing")
                    continue
                ins = [source.input] if source.kind is SourceKind.INPUT else list(SUM_OPERANDS)
                if counts:
                    # An output may take the flit at the front of its input before the
                    # input's other takers do: then it is one flit ahead, never more.
                    ahead = Cat(n_out[q] == n_in[i] + 1 for i in ins).all()
                    level = Cat(n_out[q] == n_in[i] for i in ins).all()
                    m.d.comb += Assert(ahead | level, f"o{q}: one flit out per flit in")
                    with m.If(o.valid):
                        m.d.comb += Assert(level, f"o{q}: offers each flit once")
                    if source.kind is SourceKind.SUM:
                        m.d.comb += Assert(n_in[0] == n_in[1], "sum: both operands move together")
                    continue
                with m.If(o.valid):
                    for i in ins:
                        m.d.comb += Assert(dut.i[i].valid, f"o{q}: offers only flits present")
                    if source.kind is SourceKind.INPUT:
                        m.d.comb += Assert(
                            Value.cast(o.payload) == Value.cast(dut.i[source.input].payload),
                            f"o{q}: carries its input's flit unchanged",
                        )
                    else:
                        a, b = (dut.i[k].payload for k in SUM_OPERANDS)
                        m.d.comb += [
                            Assert(
                                o.payload.data.as_value()
                                == (a.data.as_value() + b.data.as_value())[:ELEMENT_BITS],
                                f"o{q}: the lane-wise sum of inputs 0 and 1",
                            ),
                            Assert(o.payload.last == a.last, f"o{q}: the first operand's last"),
                        ]
    return m
