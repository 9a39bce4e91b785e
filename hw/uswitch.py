"""One uSwitch (R, D, RD, DEMUX or MUX) of the FRED interconnect, with stream handshakes.

Configuration: one source code per output (model/switch/node.py): ``NONE``, ``node.source_input(i)``
or ``node.source_sum()``, the lane-wise sum of inputs 0 and 1 (reducing kinds only: the node
has one LaneAdder). The ``codes`` input has the node's field layout (hw/config_layout.py, from
the model's field table): output q's code is ``codes[q]``.

Handshake, so that each flit moves once, whole, and at full rate:

* Join: an output that takes SUM is valid only when both inputs are valid; both inputs are
  consumed together.
* Fork: an input taken by several outputs (multicast) offers its flit to all of them at
  once; an output that accepts early remembers it (``sent``) and is not offered the same
  flit again; the input is consumed in the cycle its last taker accepts. No flit is lost
  or duplicated when one branch stalls, and valid never waits for ready.

An input no output takes is never ready: nothing flows where the configuration says
nothing flows. The hardware does not police the kind rules of model/switch/config.py (an R node
could multicast): configurations come from the router, which keeps to them, and they are
checked by ``check_node_codes`` before they are encoded.
"""

from __future__ import annotations

from collections.abc import Sequence

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from fredfab.hw.adder import LaneAdder
from fredfab.hw.config_layout import node_codes_layout
from fredfab.model.switch.config_layout import CodeField
from fredfab.model.switch.graph import SUM_OPERANDS, Node


class USwitch(wiring.Component):
    """``i[n_in]`` -> ``o[n_out]`` for one graph node, configured by ``codes`` (the node's
    ``fields`` of the configuration table)."""

    def __init__(
        self,
        node: Node,
        fields: Sequence[CodeField],
        flit: stream.Signature,
        dtype: str,
        lanes: int,
    ) -> None:
        if [(f.node, f.output) for f in fields] != [(node.index, q) for q in range(node.n_out)]:
            raise ValueError(f"{node.name}: the fields given are not this node's outputs")
        self.node = node
        self._dtype, self._lanes = dtype, lanes
        super().__init__(
            {
                "i": In(flit).array(node.n_in),
                "o": Out(flit).array(node.n_out),
                "codes": In(node_codes_layout(fields)),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        node, n_in, n_out = self.node, self.node.n_in, self.node.n_out
        reducing = node.reducing
        code = [self.codes[q] for q in range(n_out)]
        takes_sum = [(code[q] == node.source_sum()) if reducing else Const(0) for q in range(n_out)]
        takes = [[(code[q] == node.source_input(i)) for i in range(n_in)] for q in range(n_out)]
        # uses[q][i]: output q consumes input i (directly, or as an operand of the sum).
        uses = [
            [takes[q][i] | (takes_sum[q] if i in SUM_OPERANDS else Const(0)) for i in range(n_in)]
            for q in range(n_out)
        ]

        if reducing:
            m.submodules.adder = adder = LaneAdder(self._dtype, self._lanes)
            first, second = (self.i[k] for k in SUM_OPERANDS)
            m.d.comb += [adder.a.eq(first.payload.data), adder.b.eq(second.payload.data)]
            sum_valid = first.valid & second.valid

        sent = Signal(n_out)
        done = Signal(n_out)
        for q in range(n_out):
            o = self.o[q]
            avail = Const(0)
            with m.Switch(code[q]):
                for i in range(n_in):
                    with m.Case(node.source_input(i)):
                        m.d.comb += o.payload.eq(self.i[i].payload)
                if reducing:
                    with m.Case(node.source_sum()):
                        # The first operand's fields (``last``, and in packet mode its
                        # sideband), then the sum; ``bad`` marks the sum if either is.
                        m.d.comb += [
                            o.payload.eq(first.payload),
                            o.payload.data.eq(adder.s),
                        ]
                        if _has_field(o.payload, "bad"):
                            m.d.comb += o.payload.bad.eq(first.payload.bad | second.payload.bad)
            for i in range(n_in):
                avail = avail | (takes[q][i] & self.i[i].valid)
            if reducing:
                avail = avail | (takes_sum[q] & sum_valid)
            m.d.comb += [
                o.valid.eq(avail & ~sent[q]),
                done[q].eq(sent[q] | (o.valid & o.ready)),
            ]

        consumed = Signal(n_in)
        for i in range(n_in):
            takers = Cat(uses[q][i] for q in range(n_out))
            # Ready once every taker has accepted (or accepts now); never without a taker.
            all_done = Cat((~uses[q][i]) | done[q] for q in range(n_out)).all()
            m.d.comb += [
                self.i[i].ready.eq(takers.any() & all_done),
                consumed[i].eq(self.i[i].valid & self.i[i].ready),
            ]
        for q in range(n_out):
            # The flit of output q is gone once its (first) input is consumed; both operands
            # of a sum are consumed together.
            source_consumed = Cat(uses[q][i] & consumed[i] for i in range(n_in)).any()
            with m.If(source_consumed):
                m.d.sync += sent[q].eq(0)
            with m.Else():
                m.d.sync += sent[q].eq(done[q])
        return m


def _has_field(payload, name: str) -> bool:
    return name in dict(payload.shape())
