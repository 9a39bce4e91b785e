"""An NPU at one switch port, cycle by cycle: Go-Back-N senders and receivers for its
streams over one credit-based link (model/packet/link.py, model/packet/gbn.py). It is the
reference of the hardware endpoint (fredfab.sim.verify.packet.hw_endpoint), which does the
same in the same cycles: the order of every step below is part of its definition.

Each cycle the loop (loop.py) hands it what the switch put on its link (after the link's
faults) and the credits the switch returned, and takes the flit it sends and the credits it
returns:

1. link-level retry (model/packet/link_retry.py): the sending end takes what the switch's
   receiving end shows; the receiving end takes the switch's flit (or drops it, lost or
   damaged, to be replayed); credits in: each pulse gives the link sender one credit back;
2. the link receiver ticks (its tail timeout, ``npu_tail_timeout``: longer than any gap the
   switch leaves inside a packet) and reads the flit: credits to return, control packets
   (ACK, NACK, REWIND) to the sender of their stream, data packets to the receiver of their
   stream, whose answer (an ACK or NACK) replaces any not yet sent for that stream (they
   are cumulative, so the latest says all);
3. every sender and receiver ticks (timeouts; a receiver's timeout answer likewise);
4. what it sends, in order of preference: an answer waiting (control credit held; streams
   taken in turn), then, unless the cycle is idle, the next flit of the data packet it is
   sending, a credit sync (LinkSender.sync_due, the lowest VC first), a new data packet of a
   stream whose Go-Back-N window, message release and VC credits allow one (streams taken in
   turn); all of it only when the retry sender is ready, which otherwise sends a replayed
   flit or nothing;
5. credits out: per VC, one freed buffer slot is returned unless the cycle stalls it (or
   the scenario holds this NPU's credits back now: a slow receiver); and the retry
   receiver's (expect, nak) goes back with them.

Idle and stall come from one xorshift64 sequence stepped every cycle (model/prng.py): the
cycle is idle when bits [0, 12) are below ``idle * 2**12``, VC v's credit stalls when bits
[12 + 12 v, 24 + 12 v) are below ``stall * 2**12``.

Everything it receives is checked: a data packet for no stream of this NPU, or a stream
delivering other data than expected, is an error (``errors``), so misrouting, a wrong sum
and a reordering all fail the scenario; a stream must deliver its packets exactly once, in
order (the receivers deliver only the next packet in sequence).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from fredfab.model.packet.format import (
    KIND_ACK,
    KIND_DATA,
    KIND_NACK,
    N_VCS,
    UNICAST_INDEX,
    VC_CTRL,
    Header,
    LinkFlit,
    PacketFormat,
)
from fredfab.model.packet.gbn import GoBackNReceiver, GoBackNSender
from fredfab.model.packet.link import Control, Credit, LinkReceiver, LinkSender, Packet
from fredfab.model.packet.link_retry import RetryReceiver, RetrySender
from fredfab.model.packet.recovery import npu_tail_timeout
from fredfab.model.prng import XorShift, seed, threshold
from fredfab.sim.verify.packet.traffic import RecvStream, SendStream

#: Width of the idle and stall draws (rates resolve to 2**-12).
DRAW_BITS = 12


def npu_seed(scenario_seed: int, port: int) -> int:
    """The seed of the idle and stall sequence of the NPU at ``port``."""
    return seed(f"npu:{scenario_seed}", port)


@dataclass
class EndpointStats:
    data_packets_sent: int = 0
    control_sent: int = 0
    syncs_sent: int = 0
    bad_packets: int = 0  # received with a bad flit (damaged on a link), discarded
    timeouts: int = 0


@dataclass
class _Sender:
    stream: SendStream
    gbn: GoBackNSender


@dataclass
class _Receiver:
    stream: RecvStream
    gbn: GoBackNReceiver
    got: list[list[int]] = field(default_factory=list)
    answer: Header | None = None  # an ACK/NACK not yet sent


class Npu:
    def __init__(
        self,
        port: int,
        fmt: PacketFormat,
        data_bits: int,
        sends: list[SendStream],
        recvs: list[RecvStream],
        *,
        window: int,
        sender_timeout: int,
        receiver_timeout: int,
        idle: float,
        stall: float,
        draws_seed: int,
        credit_holds: tuple[tuple[int, int], ...] = (),
    ) -> None:
        self.port = port
        self.credit_holds = credit_holds  # (first, end) cycles it returns no credit in
        self.link_out = LinkSender(fmt, data_bits)
        self.link_in = LinkReceiver(fmt, data_bits, npu_tail_timeout(fmt))
        self.retry_out = RetrySender(fmt.link_retry)
        self.retry_in = RetryReceiver(fmt.link(data_bits), fmt.link_retry)
        self.draws = XorShift(draws_seed)
        self.idle_t = threshold(idle, DRAW_BITS)
        self.stall_t = threshold(stall, DRAW_BITS)
        self.senders = [
            _Sender(s, GoBackNSender(len(s.packets), window, sender_timeout, s.receivers))
            for s in sends
        ]
        for s in self.senders:
            s.stream.release.start(s.gbn)
        self.by_key = {s.stream.key: s for s in self.senders}
        self.receivers = [
            _Receiver(
                r,
                GoBackNReceiver(
                    len(r.expect),
                    timeout=receiver_timeout,
                    port=port,
                    vc=r.vc,
                    index=r.index,
                    dst=r.src if r.index == UNICAST_INDEX else 0,
                ),
            )
            for r in recvs
        ]
        self.rx_by_key = {r.stream.key: r for r in self.receivers}
        self.sending: deque[LinkFlit] = deque()
        self.credits_due = [0] * N_VCS
        self.turn = 0
        self.answer_turn = 0
        self.errors: list[str] = []
        self.stats = EndpointStats()
        self.first_delivery: dict[tuple, int] = {}
        self.last_delivery: dict[tuple, int] = {}
        #: When a list: per cycle, what came in (rx flit, credit bits, retry state) and
        #: what went out (flit, credit bits, retry state): the hardware endpoint's lockstep.
        self.io_log: list[tuple] | None = None
        # Credit round trips: when each packet's head left, per VC in order, and the cycles
        # until its credit came back (meaningful on a link without faults).
        self._sent_at: list[deque[int]] = [deque() for _ in range(N_VCS)]
        self.credit_rtts: list[tuple[int, int]] = []  # (vc, cycles)

    @property
    def done(self) -> bool:
        return all(s.gbn.done for s in self.senders) and all(r.gbn.complete for r in self.receivers)

    def cycle(
        self, now: int, rx: LinkFlit | None, rx_credits: int, rx_ack: tuple[int, bool]
    ) -> tuple[LinkFlit | None, int, tuple[int, bool]]:
        """One clock: take the switch's flit, credit pulses and retry state (expect, nak),
        return ours."""
        for s in self.senders:
            s.gbn.clock(now)
        rx_in = rx
        self.retry_out.ack(*rx_ack)
        rx = self.retry_in.take(rx)
        for vc in range(N_VCS):
            if (rx_credits >> vc) & 1:
                self.link_out.credit(vc)
                if self._sent_at[vc]:
                    self.credit_rtts.append((vc, now - self._sent_at[vc].popleft()))
        # The clock first, so that a packet whose tail was lost ends after the link's tail
        # timeout (model/packet/link.py) even when no flit follows it.
        for event in self.link_in.tick(now):
            self._event(now, event)
        if rx is not None:
            for event in self.link_in.push(rx):
                self._event(now, event)
        for s in self.senders:
            before = s.gbn.timeouts
            s.gbn.tick(now)
            self.stats.timeouts += s.gbn.timeouts - before
            s.stream.release.tick(s.gbn, now)
        for r in self.receivers:
            for h in r.gbn.tick(now):
                r.answer = h
        flit = self.retry_out.send(self._send(now) if self.retry_out.ready else None)
        held = any(first <= now < end for first, end in self.credit_holds)
        credits = 0 if held else self._return_credits()
        self.draws.step()
        if self.io_log is not None:
            self.io_log.append((rx_in, rx_credits, rx_ack, flit, credits, self.retry_in.ack))
        return flit, credits, self.retry_in.ack

    def _event(self, now: int, event) -> None:
        if isinstance(event, Credit):
            self.credits_due[event.vc] += event.n
        elif isinstance(event, Control):
            h = event.header
            s = self.by_key.get((h.vc, h.index, h.src if h.index == UNICAST_INDEX else 0))
            if s is None or h.kind == KIND_DATA:
                self.errors.append(f"port {self.port}: control packet for no stream of mine: {h}")
                return
            if h.kind == KIND_ACK:
                s.gbn.on_ack(h.src, h.seq)
            elif h.kind == KIND_NACK:
                s.gbn.on_nack(h.src, h.seq)
            elif h.index == UNICAST_INDEX:
                self.errors.append(f"port {self.port}: a REWIND of unicast: {h}")
            else:
                s.gbn.on_rewind(h.seq)
        elif isinstance(event, Packet):
            self._data(now, event)

    def _data(self, now: int, packet: Packet) -> None:
        h = packet.header
        if not packet.ok:
            self.stats.bad_packets += 1
        key = (h.vc, h.index, h.src if h.index == UNICAST_INDEX else 0)
        r = self.rx_by_key.get(key)
        if r is None or h.kind != KIND_DATA:
            if packet.ok:
                self.errors.append(f"port {self.port}: data packet for no stream of mine: {h}")
            return
        before = len(r.gbn.delivered)
        for answer in r.gbn.on_packet(h, packet.ok):
            r.answer = answer
        if len(r.gbn.delivered) > before:
            k = r.gbn.delivered[-1]
            data = [d for d, _ in packet.flits]
            if data != r.stream.expect[k]:
                self.errors.append(
                    f"port {self.port}: {key} packet {k} differs from the expected "
                    f"(first flit {data[0]:#x}, expected {r.stream.expect[k][0]:#x})"
                )
            r.got.append(data)
            self.first_delivery.setdefault(key, now)
            self.last_delivery[key] = now

    def _draw(self, k: int) -> int:
        return self.draws.bits(DRAW_BITS * k, DRAW_BITS)

    def _send(self, now: int) -> LinkFlit | None:
        flit = self._next_flit(now)
        if flit is not None:
            self.link_out.sent(flit, now)
            if flit.head and not flit.sync:  # the packet's credit is spent with its head
                self._sent_at[flit.vc].append(now)
        return flit

    def _next_flit(self, now: int) -> LinkFlit | None:
        n = len(self.receivers)
        if self.link_out.can_start(VC_CTRL):
            for i in range(n):
                r = self.receivers[(self.answer_turn + i) % n]
                if r.answer is not None:
                    self.answer_turn = (self.answer_turn + i + 1) % n
                    header, r.answer = r.answer, None
                    self.stats.control_sent += 1
                    return self.link_out.packet_flits(header, [])[0]
        if self._draw(0) < self.idle_t:
            return None
        if self.sending:
            return self.sending.popleft()
        for vc in range(N_VCS):
            if self.link_out.sync_due(vc, now):
                self.stats.syncs_sent += 1
                return self.link_out.sync_flit(vc)
        senders = self.senders
        for i in range(len(senders)):
            s = senders[(self.turn + i) % len(senders)]
            st = s.stream
            if now < st.start or not self.link_out.can_start(st.vc):
                continue
            seq = s.gbn.next_seq()
            if seq is None:
                continue
            index = s.gbn.next  # the absolute packet number behind ``seq``
            s.gbn.sent(seq)
            self.turn = (self.turn + i + 1) % len(senders)
            self.stats.data_packets_sent += 1
            header = Header(
                vc=st.vc, kind=KIND_DATA, index=st.index, seq=seq, src=self.port, dst=st.dst
            )
            self.sending.extend(self.link_out.packet_flits(header, st.packets[index]))
            return self.sending.popleft()
        return None

    def _return_credits(self) -> int:
        bits = 0
        for vc in range(N_VCS):
            if self.credits_due[vc] and not self._draw(1 + vc) < self.stall_t:
                self.credits_due[vc] -= 1
                bits |= 1 << vc
        return bits

    @property
    def retransmissions(self) -> int:
        """Data packets sent more than once (Go-Back-N rewinds and timeouts)."""
        return sum(s.gbn.sent_count - len(s.stream.packets) for s in self.senders)
