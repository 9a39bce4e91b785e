"""The expected sequence number never falls below the acknowledged floor (packet control
unit, hw/packet/control.py, "Control network").

The control unit alone, at P = 2, with the smallest slot count packet mode takes (4: slot 0
is the unicast index): slot 1 is configured, slots 2 and 3 keep no flow (their rows are
never written, so nothing of them commits). The flow table of slot 1 is any consistent flow
set: every input has a flow (or is unused), the table-0 row of an input names its flow's
inputs, the table-1 row of an output the inputs of the one flow it receives (or nothing).
The harness writes those rows through the loader (``flows``) in the first 2P cycles, and
never again. Everything else is free: configuration words (``cfg``) at any time, heads of
any header, credits, busy signals, and control packets on ``ctrl_in`` under the stream
rules and the receivers' rule: an ACK or NACK of slot 1 from the receiver at output q names
a sequence number its flow has reached (at each input of q's flow, not after the highest
``seq`` + 1 committed there, as the harness sees the commits) and at most a quarter of the
sequence space behind it (a window in which serial-number order is a total order:
model/packet/format.py ``seq_before``). No control packet comes before the table is
written.

The spec shadow (written here, from the control packets that pass, not from the RTL's
registers): ``acked[q]``, the most advanced sequence number receiver q has named in an ACK
or NACK of the slot that the switch took. The floor of input p is the least of these over
its flow's receivers (the outputs whose row names p). Asserted once the table is written:
``E[p]`` is not before the floor, i.e. not before every receiver's ``acked`` (in a total
order, "at least the least" is "at least one of them").

``mutant``: a NACK that comes before ``E`` rewinds ``E`` to its ``seq`` with no lift to
the floor (a stale NACK, older than what every receiver has acknowledged, rewinds the
senders below it).
"""

from __future__ import annotations

from amaranth.asserts import AnyConst, AnySeq
from amaranth.hdl import Assert, Assume, Cat, Module, Mux, Signal, Value

from fredfab.hw.packet.control import PacketControl
from fredfab.model.packet.format import KIND_ACK, KIND_NACK, SEQ_BITS, SEQ_MOD
from fredfab.sim.formal import streams
from fredfab.sim.formal.mutation import mutated
from fredfab.sim.formal.packet import packet_params
from fredfab.sim.formal.runner import harness_module

PORTS = 2
SLOT = 1  # the configured slot
#: How far behind the flow's progress an ACK/NACK may be: a quarter of the sequence space.
WINDOW = SEQ_MOD // 4


def seq_before(a: Value, b: Value) -> Value:
    """``a`` strictly before ``b`` in serial-number order on SEQ_BITS bits (the model's
    ``seq_before``, as logic)."""
    diff = (b - a)[:SEQ_BITS]
    return (diff != 0) & (diff < SEQ_MOD // 2)


def _rewind_below_floor(masks_out):
    def fault(m: Module, ctl: PacketControl) -> None:
        E = ctl.expected[SLOT]
        for q in range(PORTS):
            c = ctl.ctrl_in[q]
            h = c.payload
            nack = c.valid & c.ready & (h.kind == KIND_NACK) & (h.index == SLOT)
            for p in range(PORTS):
                with m.If(nack & masks_out[q][p] & seq_before(h.seq, E[p])):
                    m.d.sync += E[p].eq(h.seq)

    return fault


def floor_harness(mutant: bool = False) -> Module:
    """The proof of the module docstring."""
    params = packet_params(ports=PORTS)
    m = harness_module()
    ctl = PacketControl(params)
    # The flow set: a flow id per input and per output, and which are used.
    fid_in = [AnyConst(1) for _ in range(PORTS)]
    used_in = [AnyConst(1) for _ in range(PORTS)]
    fid_out = [AnyConst(1) for _ in range(PORTS)]
    used_out = [AnyConst(1) for _ in range(PORTS)]
    mask_in = [Signal(PORTS, name=f"flow_inputs_of_input{p}") for p in range(PORTS)]  # table 0
    mask_out = [Signal(PORTS, name=f"flow_inputs_of_output{q}") for q in range(PORTS)]
    for p in range(PORTS):
        m.d.comb += mask_in[p].eq(
            Cat(used_in[p] & used_in[j] & (fid_in[j] == fid_in[p]) for j in range(PORTS))
        )
    for q in range(PORTS):
        m.d.comb += mask_out[q].eq(
            Cat(used_out[q] & used_in[j] & (fid_in[j] == fid_out[q]) for j in range(PORTS))
        )
    m.submodules.ctl = mutated(ctl, _rewind_below_floor(mask_out)) if mutant else ctl

    # The loader: row c of 2P, table c // P, port c % P, in cycle c; then nothing.
    rows = 2 * PORTS
    cycle = Signal(range(rows + 1), name="rows_written")
    loaded = cycle == rows
    with m.If(~loaded):
        m.d.sync += cycle.eq(cycle + 1)
    row = ctl.flows.payload
    m.d.comb += [ctl.flows.valid.eq(~loaded), row.slot.eq(SLOT)]
    with m.Switch(cycle):
        for c in range(rows):
            table, port = divmod(c, PORTS)
            with m.Case(c):
                m.d.comb += [
                    row.table.eq(table),
                    row.port.eq(port),
                    row.mask.eq((mask_in if table == 0 else mask_out)[port]),
                ]

    # Free inputs.
    m.d.comb += [
        ctl.cfg.valid.eq(AnySeq(1)),
        ctl.cfg.payload.eq(AnySeq(len(ctl.cfg.payload.as_value()))),
        ctl.in_busy.eq(AnySeq(PORTS)),
        ctl.ic_busy.eq(AnySeq(1)),
        ctl.out_busy.eq(AnySeq(PORTS)),
    ]
    for p in range(PORTS):
        m.d.comb += ctl.out_credit[p].eq(AnySeq(len(ctl.out_credit[p])))
        for v in range(len(ctl.head[p])):
            m.d.comb += ctl.head[p][v].eq(AnySeq(len(ctl.head[p][v].as_value())))

    # The flow's progress at each input: the highest seq committed there, plus one.
    reached = [Signal(SEQ_BITS, name=f"reached_p{p}") for p in range(PORTS)]
    for p in range(PORTS):
        nxt = reached[p]
        for v in range(len(ctl.head[p])):
            h = ctl.head[p][v].header
            took = ctl.commit[p][v] & (h.index == SLOT)
            after = (h.seq + 1)[:SEQ_BITS]
            nxt = Mux(took & seq_before(nxt, after), after, nxt)
        m.d.sync += reached[p].eq(nxt)

    # Control packets: stream rules; none before the table is written; the receivers' rule.
    acked = [Signal(SEQ_BITS, name=f"spec_acked_q{q}") for q in range(PORTS)]
    for q in range(PORTS):
        c = ctl.ctrl_in[q]
        streams.free_input(m, c, f"ctrl_in{q}")
        h = c.payload
        m.d.comb += Assume(~c.valid | loaded, f"ctrl_in{q}: none before the table is written")
        says = (h.kind == KIND_ACK) | (h.kind == KIND_NACK)
        for p in range(PORTS):
            ok = ~seq_before(reached[p], h.seq) & ~seq_before(h.seq, reached[p] - WINDOW)
            with m.If(c.valid & says & (h.index == SLOT) & mask_out[q][p]):
                m.d.comb += Assume(ok, f"ctrl_in{q}: an ACK/NACK within the flow's progress")
        with m.If(streams.transfer(c) & says & (h.index == SLOT) & seq_before(acked[q], h.seq)):
            m.d.sync += acked[q].eq(h.seq)

    # The property.
    E = ctl.expected[SLOT]
    for p in range(PORTS):
        receivers = Cat(mask_out[q][p] for q in range(PORTS))
        at_least_one = Cat(mask_out[q][p] & ~seq_before(E[p], acked[q]) for q in range(PORTS))
        with m.If(loaded & receivers.any()):
            m.d.comb += Assert(at_least_one.any(), f"E[{p}] never below the acknowledged floor")
    return m
