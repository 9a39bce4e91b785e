"""A register slice that tells its senders a cycle ahead whether it has room.

A skid buffer (hw/skid.py) registers its input's ``ready``, but a sender that must wait for
several receivers at once (a multicast fork) still gathers those readies combinationally in
the cycle it sends: on the crossbar, where the receivers sit across the switch, that gather
was the slowest path (docs/architecture-cost.md). This buffer holds ``depth`` flits (three by
default) and offers two flags, both flip-flops: ``i.ready``, an entry is free, and ``room``,
two are.

The sender's rule: in every cycle it registers whether a flit sent in the next cycle will
fit, which is ``room`` if it sends one in this cycle and ``i.ready`` if not (or the AND of
its receivers' flags), and it sends in the next cycle only if that register is high. The
flit it may send in this cycle is the only one that can arrive in between, so the buffer
never overflows; and the rule waits for no entry it does not need, so a sender that always
has a flit keeps the buffer from running dry once its first flit is in: the output is then
valid in every cycle, as behind a skid buffer, whatever the backpressure. Three entries are
the fewest for a flit per cycle with the output always ready: the buffer then holds one
flit, and a sender that sends in every cycle needs ``room``. (A sender that read ``room``
alone, whether it sent or not, would stop while an entry is still free, and the output
would run dry now and then under backpressure: ``room.keeps_up`` in sim/formal/blocks.py
and its negative control, tests/hw/test_room_buffer.py.)

Ports: ``i`` (``i.ready`` is high while an entry is free, so the stream rules hold for any
sender; one that keeps to the rule above always finds it high), ``o`` (payload and valid
from the head register: one cycle from ``i`` to ``o`` when the buffer is empty, as a skid
buffer), ``room`` and ``busy`` (a flit is held).

Entries fill from the head: ``held[k]`` is set only while ``held[k - 1]`` is, so ``room`` and
``i.ready`` are single flip-flops. Every entry loads when it is free or the head moves on (its
successor's flit, else the input's), so no entry's load enable depends on ``i.valid``, which
arrives from across the switch.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

#: Flits a room buffer holds by default, the fewest it can: enough for a flit per cycle with
#: the output always ready while the sender looks a cycle ahead (module docstring).
ROOM_DEPTH = 3


class RoomBuffer(wiring.Component):
    """``i`` -> ``o`` with one cycle of latency and no bubbles; ``room`` a cycle ahead."""

    def __init__(self, signature: stream.Signature, depth: int = ROOM_DEPTH) -> None:
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < ROOM_DEPTH:
            raise ValueError(f"a room buffer holds >= {ROOM_DEPTH} flits, got depth {depth!r}")
        self.depth = depth
        #: Entry k holds a flit (a thermometer: ``held[k]`` implies ``held[k - 1]``). Internal
        #: state; the proofs read it (sim/formal/blocks.py): the ports show whether none,
        #: ``depth - 2`` or more, or ``depth`` flits are held, not every count between.
        self.held = Signal(depth, name="held")
        super().__init__({"i": In(signature), "o": Out(signature), "room": Out(1), "busy": Out(1)})

    def elaborate(self, platform) -> Module:
        m = Module()
        n = self.depth
        held = self.held
        entries = [self.o.payload] + [
            Signal.like(self.i.payload, name=f"entry{k}", reset_less=True) for k in range(1, n)
        ]
        pop = Signal()
        push = Signal()
        m.d.comb += [
            pop.eq(self.o.valid & self.o.ready),
            push.eq(self.i.valid & self.i.ready),
            self.o.valid.eq(held[0]),
            self.i.ready.eq(~held[n - 1]),
            self.room.eq(~held[n - 2]),
            self.busy.eq(held[0]),
        ]
        for k in range(n):
            below = held[k - 1] if k else 1  # the entry before k is (or is the head)
            after = held[k + 1] if k + 1 < n else 0
            # The head moving on shifts every flit one entry forward; a flit arriving takes
            # the first entry free after that.
            with m.If(pop):
                m.d.sync += held[k].eq(after | (push & held[k]))
            with m.Else():
                m.d.sync += held[k].eq(held[k] | (push & below))
            with m.If(pop | ~held[k]):
                if k + 1 < n:
                    with m.If(held[k + 1]):
                        m.d.sync += entries[k].eq(entries[k + 1])
                    with m.Else():
                        m.d.sync += entries[k].eq(self.i.payload)
                else:
                    m.d.sync += entries[k].eq(self.i.payload)
        return m
