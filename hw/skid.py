"""A skid buffer: one register slice of a stream at full throughput.

Both the output (payload, valid) and the input's ready come from registers, so a chain of
these breaks every combinational path between its two sides. The second entry (the skid)
catches the flit that arrives in the cycle the output stalls, because the input saw ready
from a register one cycle old.

``state_enables``: every register's load enable depends on the buffer's own state and the
output's ready only, not on ``i.valid``: the skid copies the input in every cycle it is
empty, and ``i.valid`` goes only into the valid registers' data. Where the input arrives
from across the switch (the crossbar, hw/interconnect.py) that takes the far signal off the
enables of a whole flit's registers; the flits and the handshake are the same.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out


class SkidBuffer(wiring.Component):
    """``i`` -> ``o`` with one cycle of latency and no bubbles; ``busy`` while holding data."""

    def __init__(self, signature: stream.Signature, state_enables: bool = False) -> None:
        self._signature = signature
        self.state_enables = state_enables
        super().__init__({"i": In(signature), "o": Out(signature), "busy": Out(1)})

    def elaborate(self, platform) -> Module:
        m = Module()
        skid = Signal.like(self.i.payload)
        skid_valid = Signal()
        m.d.comb += [
            self.i.ready.eq(~skid_valid),
            self.busy.eq(self.o.valid | skid_valid),
        ]
        with m.If(self.o.ready | ~self.o.valid):
            # The output register is free (or being emptied): refill it from the skid
            # first, else from the input.
            with m.If(skid_valid):
                m.d.sync += [self.o.payload.eq(skid), self.o.valid.eq(1), skid_valid.eq(0)]
            with m.Else():
                m.d.sync += [self.o.payload.eq(self.i.payload), self.o.valid.eq(self.i.valid)]
        if not self.state_enables:
            with m.Elif(self.i.valid & self.i.ready):
                # Output stalled and a flit arrives: it waits in the skid.
                m.d.sync += [skid.eq(self.i.payload), skid_valid.eq(1)]
            return m
        with m.Elif(~skid_valid):
            # Output stalled: a flit arriving now waits in the skid.
            m.d.sync += skid_valid.eq(self.i.valid)
        with m.If(~skid_valid):
            # An empty skid copies the input whatever it carries: skid_valid says whether
            # it holds a flit.
            m.d.sync += skid.eq(self.i.payload)
        return m
