"""Link-level retry in RTL, the two ends of model/packet/link_retry.py (which the tests compare
them with, cycle for cycle): ``RetryReceiver`` in front of an input port's writer,
``RetrySender`` behind an output port's flit choice. Both are transparent when the format
has ``link_retry`` off (then every flit passes and nothing is replayed)."""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from fredfab.hw.packet.crc import crc_of
from fredfab.hw.packet.layouts import link_layout, link_signature
from fredfab.hw.packet.params import PacketParams
from fredfab.model.packet.format import LSEQ_BITS
from fredfab.model.packet.link_retry import LSEQ_MOD, REPLAY_DEPTH, RETRY_TIMEOUT

#: What a receiving end shows its sending end every cycle.
ack_layout = data.StructLayout({"expect": LSEQ_BITS, "nak": 1})


def offer_layout(params: PacketParams) -> data.StructLayout:
    """A flit as the packet layer hands it to the sending end: the link flit but its
    ``lseq``, which the sending end stamps."""
    return data.StructLayout({k: w for k, w in params.link.fields if k != "lseq"})


def _fields(params: PacketParams) -> list[str]:
    return [k for k, _ in params.link.fields if k != "lseq"]


def after(a: Value, b: Value) -> Value:
    """``a`` comes strictly after ``b`` (model/packet/link_retry.py ``lseq_after``)."""
    diff = (a - b)[:LSEQ_BITS]
    return (diff != 0) & (diff < LSEQ_MOD // 2)


class RetryReceiver(wiring.Component):
    """``i``: the link as it arrives; ``o``: the flits taken, in order, good CRC (all of
    them, with ``ok`` telling the CRC's verdict, when retry is off); ``ack``: (expect, nak),
    registered."""

    def __init__(self, params: PacketParams) -> None:
        self.params = params
        super().__init__(
            {
                "i": In(link_signature(params)),
                "o": Out(link_signature(params)),
                "ok": Out(1),  # the CRC of the flit on ``o`` passes
                "ack": Out(ack_layout),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        f = self.i.payload
        ok = Signal()
        m.d.comb += [ok.eq(crc_of(f.data, self.params.link.crc) == f.crc), self.ok.eq(ok)]
        m.d.comb += self.o.payload.eq(f)
        if not self.params.fmt.link_retry:
            m.d.comb += self.o.valid.eq(self.i.valid)
            return m
        expect, nak = self.ack.expect, self.ack.nak
        take = self.i.valid & (f.lseq == expect) & ok
        m.d.comb += self.o.valid.eq(take)
        with m.If(take):
            m.d.sync += [expect.eq(expect + 1), nak.eq(0)]
        with m.Elif(self.i.valid & ((f.lseq == expect) | after(f.lseq, expect))):
            m.d.sync += nak.eq(1)
        return m


class RetrySender(wiring.Component):
    """``i``: a new flit (``ready``: it may go now; no replay running, room in the buffer);
    ``ack``: what the receiving end shows; ``tx``: the link, registered (a replayed flit in
    place of a new one while a replay runs)."""

    def __init__(self, params: PacketParams) -> None:
        self.params = params
        super().__init__(
            {
                "i": In(stream.Signature(offer_layout(params))),
                "ack": In(ack_layout),
                "tx": Out(link_signature(params)),
                "replaying": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        names = _fields(self.params)
        if not self.params.fmt.link_retry:
            m.d.comb += self.i.ready.eq(1)
            m.d.sync += self.tx.valid.eq(self.i.valid)
            m.d.sync += [self.tx.payload[k].eq(self.i.payload[k]) for k in names]
            return m
        layout = link_layout(self.params)
        m.submodules.buffer = buf = Memory(shape=layout, depth=REPLAY_DEPTH, init=[])
        wr, rd = buf.write_port(), buf.read_port(domain="comb")
        index = LSEQ_BITS if REPLAY_DEPTH == LSEQ_MOD else (REPLAY_DEPTH - 1).bit_length()

        nxt = Signal(LSEQ_BITS)  # lseq of the next new flit
        acked = Signal(LSEQ_BITS)  # the receiving end's expect, as last seen
        replay = Signal(LSEQ_BITS)  # the next flit to resend while replaying
        replaying = Signal()
        replayed_for = Signal(LSEQ_BITS)
        replayed_any = Signal()  # replayed_for is meaningful
        quiet = Signal(range(RETRY_TIMEOUT + 1))

        # This cycle's acknowledgement (model: RetrySender.ack).
        expect = self.ack.expect
        moved = expect != acked
        outstanding = (nxt - expect)[:LSEQ_BITS]
        quiet_now = Signal.like(quiet)
        m.d.comb += quiet_now.eq(
            Mux(moved | (outstanding == 0), 0, Mux(quiet == RETRY_TIMEOUT, quiet, quiet + 1))
        )
        told = replayed_any & ~moved & (replayed_for == expect)
        running = replaying & after(nxt, replay)
        start = (
            (outstanding != 0) & ~running & ((self.ack.nak & ~told) | (quiet_now >= RETRY_TIMEOUT))
        )
        at = Signal(LSEQ_BITS)  # the flit a replay sends this cycle
        m.d.comb += at.eq(Mux(start, expect, Mux(after(expect, replay), expect, replay)))
        resend = start | running
        m.d.comb += [
            self.replaying.eq(resend),
            self.i.ready.eq(~resend & (outstanding < REPLAY_DEPTH)),
        ]

        new = self.i.valid & self.i.ready
        flit = Signal(layout)
        m.d.comb += [rd.addr.eq(at[:index]), wr.addr.eq(nxt[:index]), wr.data.eq(flit)]
        with m.If(resend):
            m.d.comb += flit.eq(rd.data)
        with m.Else():
            m.d.comb += [flit[k].eq(self.i.payload[k]) for k in names]
            m.d.comb += [flit.lseq.eq(nxt), wr.en.eq(new)]
        m.d.sync += [
            self.tx.valid.eq(resend | new),
            self.tx.payload.eq(flit),
            acked.eq(expect),
            quiet.eq(Mux(start, 0, quiet_now)),
            replaying.eq(resend),
            replay.eq(Mux(resend, at + 1, replay)),
        ]
        with m.If(new):
            m.d.sync += nxt.eq(nxt + 1)
        with m.If(start):
            m.d.sync += [replayed_for.eq(expect), replayed_any.eq(1)]
        with m.Elif(moved):
            m.d.sync += replayed_any.eq(0)
        return m
