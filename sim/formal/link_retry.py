"""Harness of link-level retry (hw/packet/link_retry.py) on its own: a ``RetrySender``, a link
that may lose any flit, a ``RetryReceiver`` whose acknowledgements (expect, nak) go back to
the sender. The sender is offered numbered flits (the data is the count offered before it,
the CRC right) by any source that keeps the stream rules.

Asserted: the flits the receiver takes are the flits offered, in order, each once (every
flit taken carries the count taken before it), whatever the link loses: a lost flit is
replayed (after a NAK, or after ``RETRY_TIMEOUT`` quiet cycles when nothing followed it), and
a replayed flit the receiver already has is not taken again.
"""

from __future__ import annotations

from dataclasses import replace

from amaranth.asserts import AnySeq
from amaranth.hdl import Assert, Module, Signal

from fredfab.hw.packet.crc import crc_of
from fredfab.hw.packet.link_retry import RetryReceiver, RetrySender
from fredfab.sim.formal import streams
from fredfab.sim.formal.packet import FORMAL_FORMAT, packet_params
from fredfab.sim.formal.runner import harness_module

#: Counts of flits offered and taken; a bounded check of fewer cycles never wraps them.
COUNT_BITS = 6


def retry_harness(mutant: bool = False) -> Module:
    """Sender, lossy link, receiver (module docstring). ``mutant``: the receiver takes every
    flit whose CRC passes, replays included (link-level retry off at the receiving end)."""
    params = packet_params(fmt=FORMAL_FORMAT)
    m = harness_module()
    m.submodules.sender = sender = RetrySender(params)
    far = packet_params(fmt=replace(FORMAL_FORMAT, link_retry=False)) if mutant else params
    m.submodules.receiver = receiver = RetryReceiver(far)
    offered = streams.counter(m, streams.transfer(sender.i), COUNT_BITS, "offered")
    flit = Signal.like(sender.i.payload, name="offered_flit")
    m.d.comb += [
        flit.data.eq(offered),
        flit.head.eq(1),
        flit.last.eq(1),
        flit.crc.eq(crc_of(flit.data, params.link.crc)),
    ]
    streams.free_input(m, sender.i, "i", payload=flit)
    lose = Signal(name="link_loses")
    m.d.comb += [
        lose.eq(AnySeq(1)),
        receiver.i.valid.eq(sender.tx.valid & ~lose),
        receiver.i.payload.eq(sender.tx.payload),
        sender.ack.eq(receiver.ack),
    ]
    taken = streams.counter(m, receiver.o.valid, COUNT_BITS, "taken")
    with m.If(receiver.o.valid):
        m.d.comb += Assert(
            receiver.o.payload.data[:COUNT_BITS] == taken,
            "the flits taken are those offered, in order, each once",
        )
    return m
