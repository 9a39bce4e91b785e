"""One uSwitch (R, D, RD, ART, DEMUX, FORK or MUX) of the FRED interconnect, with stream
handshakes.

Configuration: one source code per output (model/switch/node.py): ``NONE``, ``node.source_input(i)``
or ``node.source_sum()``, the lane-wise sum of inputs 0 and 1 (reducing kinds only: the node
has one adder). The ``codes`` input has the node's field layout (hw/config_layout.py, from
the model's field table): output q's code is ``codes[q]``.

Handshake, so that each flit moves once, whole, and at full rate:

* Join: an output that takes SUM is valid only when both inputs are valid; both inputs are
  consumed together.
* Fork: an input taken by several outputs (multicast) offers its flit to all of them at
  once; an output that accepts early remembers it (``sent``) and is not offered the same
  flit again; the input is consumed in the cycle its last taker accepts. No flit is lost
  or duplicated when one branch stalls, and valid never waits for ready.
* One output, no adder (MUX): each source has one possible taker, so a source is ready when
  it is selected and the output is ready; nothing needs remembering.

Adder stages (``stages`` > 0, a node of a column that adds: model/switch/latency.py). Every
input first crosses a *pipe* of ``stages`` registers, then the select and fork logic above
runs on the pipes' outputs. When the node sends the sum somewhere, inputs 0 and 1 enter pipe
0 together (the join moves to its entrance) and pipe 0 computes the sum on the way: the
adder's first slice before its first register, one slice between each two registers, the
last slice behind the pipe, before the output select (hw/adder.py ``AdderSlices``). So no
register-to-register path holds more than one adder slice, and a flit takes ``stages``
cycles longer through the node whether it is added or passed. A pipe register loads when
it is empty or its content moves on (``ready = ~valid | next ready``): one flit per cycle,
and bubbles close up. The last register of a pipe is a skid buffer (hw/skid.py), so the
ready the pipe gives its input comes from registers: no combinational ready path runs from
the node's output slices through the pipe into the previous node, which would otherwise
be the switch's slowest path. Pipe 1 carries nothing while the node adds: a configuration
that also passes input 1 on its own (which the kind rules forbid, model/switch/config.py)
gets nothing on that output.

Crossbar options (``crossbar``, set by hw/interconnect.py on a switch with crossbars, whose
wires cross the whole switch; the Clos leaves them off):

* Decoded codes: the node takes ``takes`` instead of ``codes``, its codes decoded one bit per
  output and source (``decode_codes``) and registered that way, so no code compare sits
  between the configuration register and the selects; an output's payload is an AND-OR of
  its sources.
* A kind that never multicasts (ART, DEMUX: the kind rules of model/switch/config.py) keeps
  no ``sent`` bits: each source has one taker, so it is ready when that taker is (for a sum,
  and the other operand is valid). No source's ready then depends on its own valid.
* The skid buffers at the ends of the pipes load from their own state only (hw/skid.py
  ``state_enables``).

Look-ahead (``lookahead``, a one-input fan-out whose every output feeds a room buffer:
hw/room_buffer.py, hw/interconnect.py ``crossbar_nodes``): the node registers whether a flit
sent in the next cycle fits every taker (the room buffer's rule: each taker's ``room``, two
entries free, if the node sends a flit in this cycle, its ``free``, one entry, if not), and
sends only on that register, to all takers at once. Its input's ready is that register, so
no ready is gathered from the takers in the cycle a flit moves. Its outputs' ``ready`` is
not read: a taker kept to the rule always accepts.

An input no output takes is never ready: nothing flows where the configuration says
nothing flows. The hardware does not police the kind rules of model/switch/config.py (an R node
could multicast): configurations come from the router, which keeps to them, and they are
checked by ``check_node_codes`` before they are encoded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from fredfab.hw.adder import AdderSlices, LaneAdder
from fredfab.hw.config_layout import node_codes_layout
from fredfab.hw.contract import NO_MULTICAST
from fredfab.hw.skid import SkidBuffer
from fredfab.model.switch.config_layout import CodeField
from fredfab.model.switch.graph import SUM_OPERANDS, Node


@dataclass
class _Source:
    """What the select and fork logic reads: an input, or the end of its pipe."""

    payload: Value
    valid: Value
    ready: Value


class USwitch(wiring.Component):
    """``i[n_in]`` -> ``o[n_out]`` for one graph node, configured by ``codes`` (the node's
    ``fields`` of the configuration table; with ``crossbar``, ``takes``: those codes
    decoded), with ``stages`` adder stages on every input (module docstring); ``busy`` while
    a pipe holds a flit (only with ``stages`` > 0); ``room`` and ``free`` with ``lookahead``."""

    def __init__(
        self,
        node: Node,
        fields: Sequence[CodeField],
        flit: stream.Signature,
        dtype: str,
        lanes: int,
        stages: int = 0,
        crossbar: bool = False,
        lookahead: bool = False,
    ) -> None:
        if [(f.node, f.output) for f in fields] != [(node.index, q) for q in range(node.n_out)]:
            raise ValueError(f"{node.name}: the fields given are not this node's outputs")
        if isinstance(stages, bool) or not isinstance(stages, int) or stages < 0:
            raise ValueError(f"{node.name}: stages must be an integer >= 0, got {stages!r}")
        if lookahead and (node.n_in != 1 or node.reducing or stages):
            raise ValueError(
                f"{node.name}: only a one-input node without an adder or pipes (DEMUX, FORK) "
                "sends on look-ahead room"
            )
        self.node = node
        self.stages = stages
        self.crossbar = crossbar
        self.lookahead = lookahead
        self._dtype, self._lanes = dtype, lanes
        members = {
            "i": In(flit).array(node.n_in),
            "o": Out(flit).array(node.n_out),
        }
        if crossbar:
            members["takes"] = In(decoded_width(node))
        else:
            members["codes"] = In(node_codes_layout(fields))
        if stages:
            members["busy"] = Out(1)
        if lookahead:
            members["room"] = In(node.n_out)
            members["free"] = In(node.n_out)
        super().__init__(members)

    def elaborate(self, platform) -> Module:
        m = Module()
        node, n_in, n_out = self.node, self.node.n_in, self.node.n_out
        reducing = node.reducing
        if self.crossbar:
            width = n_in + int(reducing)
            bits = [self.takes[q * width : (q + 1) * width] for q in range(n_out)]
            takes = [[bits[q][i] for i in range(n_in)] for q in range(n_out)]
            takes_sum = [bits[q][n_in] if reducing else Const(0) for q in range(n_out)]
        else:
            code = [self.codes[q] for q in range(n_out)]
            takes = [[(code[q] == node.source_input(i)) for i in range(n_in)] for q in range(n_out)]
            takes_sum = [
                (code[q] == node.source_sum()) if reducing else Const(0) for q in range(n_out)
            ]
        if self.lookahead:
            self._lookahead(m, [takes[q][0] for q in range(n_out)])
            return m
        first, second = (self.i[k] for k in SUM_OPERANDS) if reducing else (None, None)

        if self.stages == 0:
            sources = [_Source(s.payload, s.valid, s.ready) for s in self.i]
            # The sum joins both operands here; its payload is the first operand's fields
            # (``last``, and in packet mode its sideband), then the sum, ``bad`` if either is.
            sum_operands: tuple[int, ...] = SUM_OPERANDS
            if reducing:
                m.submodules.adder = adder = LaneAdder(self._dtype, self._lanes)
                m.d.comb += [adder.a.eq(first.payload.data), adder.b.eq(second.payload.data)]
                sum_payload = _with_sum(m, first.payload, adder.s, second.payload)
                sum_valid = first.valid & second.valid
        else:
            sum_mode = Cat(takes_sum).any()
            sources, sum_data = self._pipes(m, sum_mode)
            # The join happened at the entrance of pipe 0, which now carries the sum.
            sum_operands = (SUM_OPERANDS[0],)
            if reducing:
                carrier = sources[SUM_OPERANDS[0]]
                sum_payload = _with_sum(m, carrier.payload, sum_data)
                sum_valid = carrier.valid

        # uses[q][i]: output q consumes source i (directly, or as an operand of the sum).
        uses = [
            [takes[q][i] | (takes_sum[q] if i in sum_operands else Const(0)) for i in range(n_in)]
            for q in range(n_out)
        ]
        # A node with one output and no adder (a MUX) has one taker per source and no join:
        # a source is ready when it is selected and the output is, whatever the valids, so no
        # path runs from the selected source's valid into the ready of the others (on the
        # crossbar that path crossed the output selects and the forks feeding them).
        single = n_out == 1 and not reducing
        # On the crossbar, a kind that never multicasts (ART, DEMUX: model/switch/config.py)
        # has at most one taker per source: nothing to remember, and a source's ready depends
        # on no valid but a sum's other operand.
        unique = self.crossbar and node.kind in NO_MULTICAST
        sent = Signal(n_out)
        done = Signal(n_out)
        for q in range(n_out):
            o = self.o[q]
            avail = Const(0)
            if self.crossbar:
                # At most one select is high: an AND-OR of the sources.
                chosen = [(takes[q][i], sources[i].payload) for i in range(n_in)]
                if reducing:
                    chosen.append((takes_sum[q], sum_payload))
                payload: Value = Const(0, len(Value.cast(o.payload)))
                for sel, source_payload in chosen:
                    payload = payload | Mux(sel, Value.cast(source_payload), 0)
                m.d.comb += Value.cast(o.payload).eq(payload)
            else:
                with m.Switch(code[q]):
                    for i in range(n_in):
                        with m.Case(node.source_input(i)):
                            m.d.comb += o.payload.eq(sources[i].payload)
                    if reducing:
                        with m.Case(node.source_sum()):
                            m.d.comb += o.payload.eq(sum_payload)
            for i in range(n_in):
                avail = avail | (takes[q][i] & sources[i].valid)
            if reducing:
                avail = avail | (takes_sum[q] & sum_valid)
            if single or unique:
                m.d.comb += o.valid.eq(avail)
                continue
            m.d.comb += [
                o.valid.eq(avail & ~sent[q]),
                done[q].eq(sent[q] | (o.valid & o.ready)),
            ]
        if single:
            for i in range(n_in):
                m.d.comb += sources[i].ready.eq(takes[0][i] & self.o[0].ready)
            return m
        if unique:
            for i in range(n_in):
                taken = Const(0)
                for q in range(n_out):
                    taken = taken | (takes[q][i] & self.o[q].ready)
                    if reducing and i in sum_operands:
                        # The sum's operands move together: each is ready when the other
                        # is valid.
                        joined = takes_sum[q] & self.o[q].ready
                        for k in sum_operands:
                            if k != i:
                                joined = joined & sources[k].valid
                        taken = taken | joined
                m.d.comb += sources[i].ready.eq(taken)
            return m

        consumed = Signal(n_in)
        for i in range(n_in):
            takers = Cat(uses[q][i] for q in range(n_out))
            # Ready once every taker has accepted (or accepts now); never without a taker.
            all_done = Cat((~uses[q][i]) | done[q] for q in range(n_out)).all()
            m.d.comb += [
                sources[i].ready.eq(takers.any() & all_done),
                consumed[i].eq(sources[i].valid & sources[i].ready),
            ]
        for q in range(n_out):
            # The flit of output q is gone once its (first) source is consumed; both operands
            # of a sum are consumed together.
            source_consumed = Cat(uses[q][i] & consumed[i] for i in range(n_in)).any()
            with m.If(source_consumed):
                m.d.sync += sent[q].eq(0)
            with m.Else():
                m.d.sync += sent[q].eq(done[q])
        return m

    def _lookahead(self, m: Module, uses: list[Value]) -> None:
        """A one-input node whose outputs feed room buffers (hw/room_buffer.py): it sends a
        flit only in a cycle after it found that the flit would fit every taker, and then to
        all takers at once, so its ready is a register beside it and no ready is gathered
        from the takers in the cycle a flit moves. The takers never refuse it:
        ``o[q].ready`` is not read."""
        node, src = self.node, self.i[0]
        # After reset every buffer is empty; the configuration changes only while the switch
        # is drained (every buffer empty), so the register computed from the previous
        # cycle's codes is right for the new ones too.
        fits = Signal(init=1, name="fits")
        send = Signal()
        # Next cycle's flit fits every taker if each has an entry free after this cycle's
        # flit, if one is sent now: two free (``room``) if so, one (``free``) if not.
        after_send = Cat(~uses[q] | self.room[q] for q in range(node.n_out)).all()
        after_none = Cat(~uses[q] | self.free[q] for q in range(node.n_out)).all()
        m.d.sync += fits.eq(Mux(src.valid & send, after_send, after_none))
        m.d.comb += [send.eq(fits & Cat(uses).any()), src.ready.eq(send)]
        for q, o in enumerate(self.o):
            m.d.comb += [o.payload.eq(src.payload), o.valid.eq(src.valid & send & uses[q])]

    def _pipes(self, m: Module, sum_mode: Value) -> tuple[list[_Source], Value | None]:
        """A pipe of ``stages`` registers behind every input (module docstring); returns the
        pipes' ends and, on a reducing node, the sum that leaves pipe 0's last slice."""
        node, n = self.node, self.stages
        reducing = node.reducing
        carrier, partner = SUM_OPERANDS
        slices = AdderSlices(self._dtype, self._lanes, n) if reducing else None
        ends, accepts, busy = [], [], []
        sum_data = None
        for k, inp in enumerate(self.i):
            adds = reducing and k == carrier
            # What enters the pipe: the input's flit; on pipe 0 of an adding node both
            # operands at once, and the adder's first slice.
            payload: Value = inp.payload
            valid: Value = inp.valid
            state: Value | None = None
            if adds:
                other = self.i[partner]
                valid = inp.valid & (~sum_mode | other.valid)
                payload = _with_sum(m, inp.payload, inp.payload.data, other.payload, sum_mode)
                state = slices.slice(m, 0, Cat(inp.payload.data, other.payload.data))
            elif reducing and k == partner:
                valid = inp.valid & ~sum_mode
            # Registers 1 .. n-1: loaded when empty or when their flit moves on.
            valids = [Signal(name=f"pipe{k}_valid{j}") for j in range(1, n)]
            payloads = [
                Signal(inp.payload.shape(), name=f"pipe{k}_flit{j}", reset_less=True)
                for j in range(1, n)
            ]
            # Register n is a skid buffer: the pipe's ready towards its input comes from a
            # register, so no ready path runs from the node's outputs through the pipe to its
            # inputs (and from there into the previous node).
            fields = {"flit": inp.payload.shape()}
            loads: list[Value] = []
            for j in range(n - 1):
                loads.append(Signal(name=f"pipe{k}_load{j + 1}"))
            for j in range(n - 1):
                with m.If(loads[j]):
                    m.d.sync += [valids[j].eq(valid), payloads[j].eq(payload)]
                if state is not None:
                    reg = Signal(slices.width(j), name=f"pipe{k}_sum{j + 1}", reset_less=True)
                    with m.If(loads[j]):
                        m.d.sync += reg.eq(state)
                    state = slices.slice(m, j + 1, reg)
                valid, payload = valids[j], payloads[j]
            if state is not None:
                fields["sum"] = len(state)
            skid = SkidBuffer(
                stream.Signature(data.StructLayout(fields)), state_enables=self.crossbar
            )
            m.submodules[f"pipe{k}_end"] = skid
            m.d.comb += [skid.i.valid.eq(valid), skid.i.payload.flit.eq(payload)]
            if state is not None:
                m.d.comb += skid.i.payload.sum.eq(state)
                sum_data = slices.slice(m, n, skid.o.payload.sum)  # the last slice
            end = _Source(skid.o.payload.flit, skid.o.valid, skid.o.ready)
            # A register loads when it is empty or its flit moves on to the next one.
            nxt: Value = skid.i.ready
            for j in reversed(range(n - 1)):
                m.d.comb += loads[j].eq(~valids[j] | nxt)
                nxt = loads[j]
            accepts.append(nxt)
            ends.append(end)
            busy += [*valids, skid.busy]
        for k, inp in enumerate(self.i):
            if reducing and k == carrier:
                ready = accepts[k] & (~sum_mode | self.i[partner].valid)
            elif reducing and k == partner:
                joined = accepts[carrier] & self.i[carrier].valid
                ready = (sum_mode & joined) | (~sum_mode & accepts[k])
            else:
                ready = accepts[k]
            m.d.comb += inp.ready.eq(ready)
        m.d.comb += self.busy.eq(Cat(busy).any())
        return ends, sum_data


def decoded_width(node: Node) -> int:
    """Bits of a node's codes decoded (``decode_codes``)."""
    return node.n_out * (node.n_in + int(node.reducing))


def decode_codes(node: Node, codes: Sequence[Value] | Sequence[int]) -> Value | int:
    """A node's codes (output 0 first) decoded, the ``takes`` input of a uSwitch with the
    crossbar options: for output q, ``n_in`` bits (bit i: it takes input i), then on a reducing node
    one more (it takes the sum); at most one bit per output is high, none for NONE or a code
    that names no source. An int for int codes."""
    sources = [node.source_input(i) for i in range(node.n_in)]
    if node.reducing:
        sources.append(node.source_sum())
    if all(isinstance(c, int) for c in codes):
        bits = [int(c == s) for c in codes for s in sources]
        return sum(b << k for k, b in enumerate(bits))
    return Cat(c == s for c in codes for s in sources)


def _with_sum(
    m: Module,
    first_payload: Value,
    total: Value,
    second_payload: Value | None = None,
    adding: Value | None = None,
) -> Value:
    """The payload of a sum: the first operand's fields (``last``, and in packet mode its
    sideband) with ``total`` as its data; ``bad`` (packet mode) marks it if either operand is
    bad (only while ``adding``, when given)."""
    out = Signal(first_payload.shape())
    m.d.comb += [out.eq(first_payload), out.data.eq(total)]
    if second_payload is not None and "bad" in dict(first_payload.shape()):
        marks = second_payload.bad if adding is None else (adding & second_payload.bad)
        m.d.comb += out.bad.eq(first_payload.bad | marks)
    return out
