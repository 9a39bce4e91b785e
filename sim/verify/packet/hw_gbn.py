"""Go-Back-N in RTL for the hardware endpoint (hw_endpoint.py): one sender and one receiver of
a stream, the same rules as model/packet/gbn.py (``GoBackNSender``, ``GoBackNReceiver``) and
sim/verify/packet/traffic.py ``Messages``, in the same cycle (the lockstep test,
tests/sim/verify/test_packet_hw_endpoint.py, compares them flit for flit).

Packet numbers are absolute (``INDEX_BITS`` bits: a soak of 10**8 cycles sends under 2**24
packets per stream); a sequence number maps to the absolute index nearest a reference, as
the model's ``_absolute`` does. Each block computes its next state combinationally from its
registers and this cycle's events, so the endpoint can act on it in the same cycle."""

from __future__ import annotations

from collections.abc import Sequence

from amaranth.hdl import Elaboratable, Module, Mux, Signal, Value

from fredfab.hw.named import named
from fredfab.model.errors import InputError
from fredfab.model.packet.format import SEQ_BITS, SEQ_MOD
from fredfab.sim.verify.soak_harness import XorShift64

INDEX_BITS = 32
#: Cycles are counted in 32 bits: a soak runs for far fewer than 2**31 cycles.
TIME_BITS = 32


def absolute(seq: Value, near: Value) -> Value:
    """The absolute index with sequence number ``seq`` closest to ``near`` (model/packet/
    gbn.py ``_absolute``), as an INDEX_BITS-bit value."""
    delta = (seq - near[:SEQ_BITS])[:SEQ_BITS]
    return Mux(delta < SEQ_MOD // 2, near + delta, near + delta - SEQ_MOD)[:INDEX_BITS]


class GbnSender(Elaboratable):
    """One stream's sender. Inputs (this cycle): ``now``; a control packet for it
    (``ctl_valid``, ``ctl_kind`` 1 ACK / 2 NACK / 3 REWIND, ``ctl_src`` the receiver's port,
    ``ctl_seq``); ``sent`` (the endpoint sends packet ``next`` now). Outputs: ``can`` (a
    packet may go now: ``next_seq`` of the model), ``next``, ``base``, ``done``, counters,
    and ``error`` (an acknowledgement of a packet never sent)."""

    def __init__(
        self,
        receivers: Sequence[int],
        n_packets: int,
        window: int,
        timeout: int,
        messages: tuple[int, int, int] | None,
    ) -> None:
        self.receivers = tuple(receivers)
        self.n_packets, self.window, self.timeout = n_packets, window, timeout
        self.messages = messages  # (seed, size_bits, gap_bits), or None: all at once
        self.now = Signal(TIME_BITS)
        self.ctl_valid = Signal()
        self.ctl_kind = Signal(2)
        self.ctl_src = Signal(6)
        self.ctl_seq = Signal(SEQ_BITS)
        self.sent = Signal()
        self.can = Signal()
        self.next = Signal(INDEX_BITS)
        self.base = Signal(INDEX_BITS)
        self.done = Signal()
        self.error = Signal()
        self.sent_count = Signal(INDEX_BITS)
        self.rewinds = Signal(INDEX_BITS)
        self.timeouts = Signal(INDEX_BITS)

    def elaborate(self, platform) -> Module:
        m = Module()
        n = self.n_packets
        acked = [Signal(INDEX_BITS, name=f"acked_{r}") for r in self.receivers]
        nxt = Signal(INDEX_BITS)
        high = Signal(INDEX_BITS)  # one past the highest index ever sent
        since = Signal(TIME_BITS)
        limit = Signal(INDEX_BITS, init=n if self.messages is None else 0)

        def least(values: list[Value], name: str) -> Value:
            out = values[0]
            for j, v in enumerate(values[1:]):
                out = named(m, Mux(v < out, v, out), f"{name}_{j}")  # each step once
            return out

        base0 = Signal(INDEX_BITS)
        m.d.comb += base0.eq(least(acked, "base0"))
        # -- the control packet: ACK, NACK (acknowledgement, and a NACK goes back) or REWIND
        ack_like = named(
            m, self.ctl_valid & ((self.ctl_kind == 1) | (self.ctl_kind == 2)), "ack_like"
        )
        acked1 = [Signal(INDEX_BITS, name=f"acked1_{r}") for r in self.receivers]
        k = Signal(INDEX_BITS)
        mine = Signal()
        for i, r in enumerate(self.receivers):
            hit = self.ctl_src == r
            with m.If(hit):
                m.d.comb += [k.eq(absolute(self.ctl_seq, acked[i])), mine.eq(1)]
        stale = Signal()
        idx = Signal(range(len(self.receivers)))
        for i, r in enumerate(self.receivers):
            with m.If(self.ctl_src == r):
                m.d.comb += [idx.eq(i), stale.eq(k < acked[i])]
        take = named(m, ack_like & mine & ~stale & ~(k > high), "take")
        m.d.comb += self.error.eq(ack_like & (~mine | (~stale & (k > high))))
        for i in range(len(self.receivers)):
            m.d.comb += acked1[i].eq(Mux(take & (idx == i), k, acked[i]))
        base1 = Signal(INDEX_BITS)
        m.d.comb += base1.eq(least(acked1, "base1"))
        progress = named(m, take & (base1 > base0), "progress")
        nxt1 = Signal(INDEX_BITS)
        m.d.comb += nxt1.eq(Mux(progress & (nxt < base1), base1, nxt))
        nack_back = named(m, take & (self.ctl_kind == 2) & (k < nxt1), "nack_back")
        rk = Signal(INDEX_BITS)
        m.d.comb += rk.eq(absolute(self.ctl_seq, base0))
        rewind = named(
            m, self.ctl_valid & (self.ctl_kind == 3) & (rk >= base0) & (rk < nxt1), "rewind"
        )
        nxt2 = Signal(INDEX_BITS)
        m.d.comb += nxt2.eq(Mux(nack_back, k, Mux(rewind, rk, nxt1)))
        since1 = named(m, Mux(progress | nack_back | rewind, self.now, since), "since1")
        # -- tick: no progress for ``timeout`` cycles with packets outstanding
        expired = named(
            m, (nxt2 > base1) & ((self.now - since1)[:TIME_BITS] >= self.timeout), "expired"
        )
        nxt3 = Signal(INDEX_BITS)
        since2 = Signal(TIME_BITS)
        m.d.comb += [
            nxt3.eq(Mux(expired, base1, nxt2)),
            since2.eq(Mux(expired, self.now, since1)),
        ]
        # -- the release of messages (traffic.Messages.tick), after the timeout
        limit1 = Signal(INDEX_BITS)
        m.d.comb += limit1.eq(limit)
        if self.messages is not None:
            seed, size_bits, gap_bits = self.messages
            m.submodules.draws = draws = XorShift64(seed)
            resume = Signal(TIME_BITS)
            waiting = Signal()
            started = Signal()  # the first message released (the model's ``start``)
            d = draws.value
            with m.If(~started):
                first = 1 + d[:size_bits]
                m.d.comb += [limit1.eq(Mux(first > n, n, first)), draws.advance.eq(1)]
                m.d.sync += started.eq(1)
            with m.Elif((limit < n) & ~(base1 < limit)):
                at = Mux(waiting, resume, self.now + d[32 : 32 + gap_bits])
                with m.If(~waiting):
                    m.d.sync += [resume.eq(at), waiting.eq(1)]
                with m.If(self.now >= at):
                    grown = limit + 1 + d[:size_bits]
                    m.d.comb += [limit1.eq(Mux(grown > n, n, grown)), draws.advance.eq(1)]
                    m.d.sync += waiting.eq(0)
        # -- what may be sent now, and the send
        m.d.comb += [
            self.can.eq((nxt3 < n) & (nxt3 < limit1) & (nxt3 < base1 + self.window)),
            self.next.eq(nxt3),
            self.base.eq(base1),
            self.done.eq(base1 >= n),
        ]
        nxt4 = named(m, Mux(self.sent, nxt3 + 1, nxt3), "nxt4")
        m.d.sync += [
            *(a.eq(b) for a, b in zip(acked, acked1, strict=True)),
            nxt.eq(nxt4),
            high.eq(Mux(nxt4 > high, nxt4, high)),
            since.eq(Mux(self.sent & (nxt3 == base1), self.now, since2)),
            limit.eq(limit1),
            self.sent_count.eq(self.sent_count + self.sent),
            self.rewinds.eq(self.rewinds + (nack_back | rewind)),
            self.timeouts.eq(self.timeouts + expired),
        ]
        return m


class GbnReceiver(Elaboratable):
    """One stream's receiver. Inputs (this cycle): ``now``; a data packet of the stream
    (``pkt_valid``, ``pkt_seq``, ``pkt_ok``). Outputs: ``delivered`` (the packet is taken
    now), ``expected`` (its index), ``answer_valid``/``answer_kind``/``answer_seq`` (an
    ACK or NACK produced this cycle: the latest of the packet's and the timeout's),
    ``complete``."""

    def __init__(self, n_packets: int, timeout: int, ack_every: int) -> None:
        if ack_every & (ack_every - 1):
            raise InputError(f"ack_every must be a power of two here, got {ack_every}")
        self.n_packets, self.timeout, self.ack_every = n_packets, timeout, ack_every
        self.now = Signal(TIME_BITS)
        self.pkt_valid = Signal()
        self.pkt_seq = Signal(SEQ_BITS)
        self.pkt_ok = Signal()
        self.delivered = Signal()
        self.expected = Signal(INDEX_BITS)
        self.answer_valid = Signal()
        self.answer_kind = Signal(2)
        self.answer_seq = Signal(SEQ_BITS)
        self.complete = Signal()
        self.discarded = Signal(INDEX_BITS)

    def elaborate(self, platform) -> Module:
        m = Module()
        n = self.n_packets
        expected = self.expected
        nacked = Signal(INDEX_BITS)
        nacked_valid = Signal()
        since = Signal(TIME_BITS)
        since_valid = Signal()
        seen = Signal(INDEX_BITS)
        complete0 = named(m, expected >= n, "complete0")
        k = named(m, absolute(self.pkt_seq, expected), "k")
        deliver = named(m, self.pkt_valid & self.pkt_ok & (k == expected) & ~complete0, "deliver")
        exp1 = Signal(INDEX_BITS)
        m.d.comb += [exp1.eq(Mux(deliver, expected + 1, expected)), self.delivered.eq(deliver)]
        complete1 = named(m, exp1 >= n, "complete1")
        dup = named(m, self.pkt_valid & ~deliver & self.pkt_ok & (k < expected), "dup")
        quiet = named(m, complete0 | (nacked_valid & (nacked == expected)), "quiet_now")
        nack = named(m, self.pkt_valid & ~deliver & ~dup & ~quiet, "nack")
        ack_due = named(
            m, deliver & ((exp1[: (self.ack_every - 1).bit_length()] == 0) | complete1), "ack_due"
        )
        # -- tick, after the packet
        fresh = ~since_valid | (seen != exp1)
        since1 = named(m, Mux(fresh, self.now, since), "since1")
        timed = named(m, (self.now - since1)[:TIME_BITS] >= self.timeout, "timed")
        kind = Signal(2)
        with m.If(timed):
            m.d.comb += kind.eq(Mux(complete1, 1, 2))
        with m.Elif(nack):
            m.d.comb += kind.eq(2)
        with m.Elif(ack_due | dup):
            m.d.comb += kind.eq(1)
        m.d.comb += [
            self.answer_valid.eq(kind != 0),
            self.answer_kind.eq(kind),
            self.answer_seq.eq(exp1[:SEQ_BITS]),
            self.complete.eq(complete0),
        ]
        nacked_now = nack | (timed & ~complete1)
        m.d.sync += [
            expected.eq(exp1),
            since.eq(Mux(timed, self.now, since1)),
            since_valid.eq(1),
            seen.eq(exp1),
            self.discarded.eq(self.discarded + (self.pkt_valid & ~deliver)),
        ]
        with m.If(deliver):
            m.d.sync += nacked_valid.eq(0)
        with m.If(nacked_now):
            m.d.sync += [nacked.eq(exp1), nacked_valid.eq(1)]
        return m
