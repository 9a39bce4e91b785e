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

from amaranth.asserts import AnyConst, AnySeq
from amaranth.hdl import Assert, Assume, Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import stream

from fredfab.hw.config_layout import node_codes_layout
from fredfab.hw.flit import flit_stream
from fredfab.hw.room_buffer import RoomBuffer
from fredfab.hw.skid import SkidBuffer
from fredfab.hw.uswitch import USwitch, decode_codes
from fredfab.model.switch.arches import build_topology
from fredfab.model.switch.graph import SUM_OPERANDS, Kind, Node, SourceKind
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


def room_harness(kind: str, mutant: bool = False) -> Module:
    """The room buffer (hw/room_buffer.py) as the interconnect builds it (``ROOM_DEPTH``,
    three entries). ``kind``:

    * ``"rules"`` (k-induction): any sender, any receiver; stream rules at the output; the
      flits held (a shadow count) fix ``i.ready`` (fewer than three), ``o.valid`` and
      ``busy`` (one or more) and ``room`` (one or fewer). Mutant: the output drops valid
      while stalled.
    * ``"order"`` (bounded): flits leave in the order they came, unchanged, against a
      three-entry shadow queue. Mutant: the input is always ready.
    * ``"lookahead"`` (k-induction): a sender that keeps to the buffer's rule (it registers
      ``room`` in a cycle it sends a flit, ``i.ready`` in one it does not, and offers a flit
      only in a cycle after that register was high), any receiver: the buffer is ready
      whenever the sender offers (it never overflows); and while the output has been ready
      in every cycle, the sender may send in every cycle (one flit per cycle). Mutant:
      ``room`` is the input's ready (room for one more flit now, not a cycle later).
    * ``"keeps_up"`` (k-induction): that sender always has a flit (it offers one whenever
      the rule lets it), any receiver: once a flit came out, the output is valid in every
      cycle, so an output under backpressure misses none of the cycles it is ready. Mutant:
      the sender reads ``room`` alone, also in a cycle it sent nothing (it stops while an
      entry is free, and the output runs dry).
    """
    m = harness_module()
    dut = RoomBuffer(stream.Signature(SKID_WIDTH))
    depth = dut.depth
    if kind == "keeps_up":
        m.submodules.dut = dut
    elif mutant and kind == "order":
        m.submodules.dut = mutated(dut, ready_regardless(lambda c: c.i))
    elif mutant and kind == "rules":
        m.submodules.dut = mutated(dut, drop_valid_while_stalled(lambda c: c.o))
    elif mutant:
        m.submodules.dut = mutated(dut, _room_when_ready)
    else:
        m.submodules.dut = dut
    streams.free_ready(m, dut.o)
    may_send = Signal(init=1, name="may_send")  # the sender's register of the rule
    if kind in ("lookahead", "keeps_up"):
        naive = mutant and kind == "keeps_up"
        sent = dut.i.valid & dut.i.ready
        m.d.sync += may_send.eq(Mux(sent | naive, dut.room, dut.i.ready))
        eager = Const(1) if kind == "keeps_up" else AnySeq(1)
        m.d.comb += [
            dut.i.valid.eq(eager & may_send),
            dut.i.payload.eq(AnySeq(SKID_WIDTH)),
        ]
    else:
        streams.free_input(m, dut.i, "i")
    held = [Signal(SKID_WIDTH, name=f"shadow{k}") for k in range(depth)]
    count = Signal(range(depth + 1))
    push, pop = streams.transfer(dut.i), streams.transfer(dut.o)
    # The shadow queue: entry 0 is the oldest flit held.
    with m.If(pop):
        for k in range(depth - 1):
            m.d.sync += held[k].eq(held[k + 1])
        for k in range(depth):
            with m.If(push & (count == k + 1)):
                m.d.sync += held[k].eq(dut.i.payload)
        with m.If(~push):
            m.d.sync += count.eq(count - 1)
    with m.Elif(push):
        with m.Switch(count):
            for k in range(depth):
                with m.Case(k):
                    m.d.sync += held[k].eq(dut.i.payload)
        m.d.sync += count.eq(count + 1)
    if kind == "order":
        with m.If(dut.o.valid):
            m.d.comb += Assert(dut.o.payload == held[0], "room: flits leave in order, unchanged")
        m.d.comb += Assert(count <= depth, "room: never more flits held than entries")
        return m
    if kind == "rules":
        streams.assert_rules(m, dut.o, "o")
    m.d.comb += [
        Assert(count <= depth, "room: never more flits held than entries"),
        Assert(dut.i.ready == (count < depth), "room: ready exactly while an entry is free"),
        Assert(dut.o.valid == (count != 0), "room: output valid exactly while a flit is held"),
        Assert(dut.busy == (count != 0), "room: busy exactly while a flit is held"),
    ]
    m.d.comb += Assert(
        dut.room == (count <= depth - 2), "room: room exactly while two entries are free"
    )
    # The ports show one, depth - 2 and depth flits held, not the counts between: tie the
    # buffer's own count to the shadow's, so that induction starts only from real states.
    for k in range(depth):
        m.d.comb += Assert(dut.held[k] == (count > k), f"room: entry {k} held exactly then")
    if kind == "rules":
        return m
    if kind == "keeps_up":
        # The sender stops only when its next flit would not fit, i.e. with depth - 1 or
        # more held after its last one went in; they last until the next one is in.
        started = Signal(name="started")  # a flit has come out
        m.d.sync += started.eq(started | dut.o.valid)
        with m.If(~may_send):
            m.d.comb += Assert(count >= depth - 1, "room: stopped only with enough held")
        with m.If(started):
            m.d.comb += [
                Assert(count >= 1, "room: never empty once a flit came out"),
                Assert(dut.o.valid, "room: the output valid in every cycle after the first"),
            ]
        return m
    always_ready = Signal(init=1, name="always_ready")  # o.ready in every cycle so far
    m.d.sync += always_ready.eq(always_ready & dut.o.ready)
    # A cycle after the rule's register was high the buffer has an entry free, so what the
    # sender offers fits; with the output always ready it never holds more than one flit, so
    # room stays high.
    with m.If(may_send):
        m.d.comb += Assert(count <= depth - 1, "room: an entry free when the sender may send")
    with m.If(dut.i.valid):
        m.d.comb += Assert(dut.i.ready, "room: a flit sent on room always fits")
    with m.If(always_ready):
        m.d.comb += [
            Assert(count <= 1, "room: one flit at most while the output is always ready"),
            Assert(may_send, "room: a sender a cycle behind sends every cycle"),
        ]
    return m


def _room_when_ready(m: Module, dut) -> None:
    """The fault of the look-ahead mutant: ``room`` says there is room now, not next cycle."""
    m.d.comb += dut.room.eq(dut.i.ready)


#: Outputs of the crossbar fan-out proofs: the result fan-outs of the crossbar at P = 4, 5.
FORK_WIDTHS = (4, 5)


def crossbar_fork_harness(width: int, mutant: bool = False) -> Module:
    """A result fan-out of the crossbar as the interconnect builds it (hw/interconnect.py):
    a FORK with ``width`` outputs sending on look-ahead room (hw/uswitch.py ``lookahead``),
    each output into a room buffer (hw/room_buffer.py), any code tuple the model accepts,
    any sender, any receivers behind the buffers (bounded). The sender's k-th flit carries
    k + 1. Asserted: no buffer is offered a flit it cannot take; each taker's j-th flit out
    carries j + 1 (none lost, duplicated or reordered), and a taker never gets ahead of the
    input nor behind it by more than its buffer and the fan-out's look-ahead hold; a
    non-taker gets nothing; stream rules at the buffers' outputs. Mutant: the buffers' room
    is their ready (no look-ahead)."""
    node = next(n for n in block_nodes().values() if n.kind is Kind.FORK and n.n_out == width)
    node = Node(0, node.name, node.kind, node.n_in, node.n_out, 0, node.registered)
    fields = _fields_of(node)
    flit = flit_stream(ELEMENT_BITS, LANES)
    m = harness_module()
    fork = USwitch(node, fields, flit, f"int{ELEMENT_BITS}", LANES, crossbar=True, lookahead=True)
    m.submodules.fork = fork
    layout = node_codes_layout(fields)
    codes = layout(AnyConst(layout.size))
    fields_v = [codes[q] for q in range(width)]
    m.d.comb += Assume(node_accepted(node, fields_v), "codes: a tuple the model accepts")
    m.d.comb += fork.takes.eq(decode_codes(node, fields_v))
    n_in = streams.counter(m, streams.transfer(fork.i[0]), 8, "in")
    tag = Signal(ELEMENT_BITS, name="tag")
    m.d.comb += tag.eq(n_in + 1)
    streams.free_input(m, fork.i[0], "i", payload=Cat(tag, AnySeq(1)))
    for q in range(width):
        buf = RoomBuffer(flit)
        m.submodules[f"buf{q}"] = mutated(buf, _room_when_ready) if mutant else buf
        o = fork.o[q]
        m.d.comb += [
            buf.i.payload.eq(o.payload),
            buf.i.valid.eq(o.valid),
            o.ready.eq(buf.i.ready),
            fork.room[q].eq(buf.room),
            fork.free[q].eq(buf.i.ready),
        ]
        streams.free_ready(m, buf.o)
        streams.assert_rules(m, buf.o, f"o{q}")
        with m.If(buf.i.valid):
            m.d.comb += Assert(buf.i.ready, f"o{q}: never offered a flit it cannot take")
        n_out = streams.counter(m, streams.transfer(buf.o), 8, f"out{q}")
        taker = codes[q] == node.source_input(0)
        with m.If(~taker):
            m.d.comb += Assert(~buf.i.valid, f"o{q}: a non-taker gets nothing")
        with m.If(taker):
            lag = (n_in - n_out)[:8]
            m.d.comb += Assert(lag <= buf.depth, f"o{q}: behind the input by what it holds")
            with m.If(buf.o.valid):
                m.d.comb += Assert(
                    buf.o.payload.data.as_value() == (n_out + 1)[:ELEMENT_BITS],
                    f"o{q}: flit j carries j + 1",
                )
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


def crossbar_block_nodes() -> dict[str, Node]:
    """The shapes of ``block_nodes`` the crossbar switch uses (at P = 4 and 5), which it
    builds with the crossbar options."""
    shapes = set()
    for P in (4, 5):
        for node in build_topology(P, 2, "xbar").nodes:
            shapes.add(f"{node.kind.value}_{node.n_in}x{node.n_out}")
    return {k: v for k, v in block_nodes().items() if k in shapes}


def _fields_of(node: Node):
    """The node's field table, at offset 0 (a lone uSwitch's codes)."""
    from fredfab.model.switch.config_layout import ConfigLayout

    return ConfigLayout.of_nodes([node]).node_fields(node.index)


def uswitch_harness(
    name: str, counts: bool = False, mutant: bool = False, crossbar: bool = False
) -> Module:
    """``counts`` False: the stream rules and what each output carries (k-induction).
    ``counts`` True: flit counts per input and output (bounded: counts are unbounded state).
    ``crossbar``: the node with the crossbar options (hw/uswitch.py), its codes decoded."""
    node = block_nodes()[name]
    node = Node(0, node.name, node.kind, node.n_in, node.n_out, 0, node.registered)
    fields = _fields_of(node)
    flit = flit_stream(ELEMENT_BITS, LANES)
    m = harness_module()
    dut = USwitch(node, fields, flit, f"int{ELEMENT_BITS}", LANES, crossbar=crossbar)
    if mutant and counts:
        m.submodules.dut = mutated(dut, ready_regardless(lambda c: c.i[0]))
    elif mutant:
        m.submodules.dut = mutated(dut, drop_valid_while_stalled(lambda c: c.o[0]))
    else:
        m.submodules.dut = dut

    layout = node_codes_layout(fields)
    codes = layout(AnyConst(layout.size))
    if crossbar:
        m.d.comb += dut.takes.eq(decode_codes(node, [codes[q] for q in range(node.n_out)]))
    else:
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
