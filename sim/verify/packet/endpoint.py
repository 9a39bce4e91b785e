"""An NPU at one switch port, cycle by cycle: Go-Back-N senders and receivers for its
streams over one credit-based link (model/packet/link.py, model/packet/gbn.py).

Each cycle the loop (loop.py) hands it what the switch put on its link (after the link's
faults) and the credits the switch returned, and takes the flit it sends and the credits
it returns. What it sends, in order of preference: a waiting ACK/NACK (control credit
held), the next flit of the data packet it is sending, a new data packet of a stream whose
Go-Back-N window and VC credits allow one (streams taken in turn). With probability
``idle`` it sends nothing in a cycle; with probability ``stall`` per cycle it holds a freed
buffer slot before returning the credit (backpressure).

Everything it receives is checked: a data packet for no stream of this NPU, or a stream
delivering other data than expected, is an error (``errors``), so misrouting, a wrong sum
and a reordering all fail the scenario; a stream must deliver its packets exactly once, in
order (the receivers deliver only the next packet in sequence).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from fredfab.model.packet.format import (
    KIND_ACK,
    KIND_DATA,
    N_VCS,
    UNICAST_INDEX,
    VC_CTRL,
    Header,
    LinkFlit,
    PacketFormat,
)
from fredfab.model.packet.gbn import GoBackNReceiver, GoBackNSender
from fredfab.model.packet.link import Control, Credit, LinkReceiver, LinkSender, Packet
from fredfab.sim.verify.packet.traffic import RecvStream, SendStream


@dataclass
class EndpointStats:
    data_packets_sent: int = 0
    control_sent: int = 0
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
        rng: np.random.Generator,
    ) -> None:
        self.port = port
        self.link_out = LinkSender(fmt, data_bits)
        self.link_in = LinkReceiver(fmt)
        self.idle, self.stall, self.rng = idle, stall, rng
        self.senders = {
            s.key: _Sender(s, GoBackNSender(len(s.packets), window, sender_timeout, s.receivers))
            for s in sends
        }
        self.receivers = {
            r.key: _Receiver(
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
        }
        self.control: deque[Header] = deque()
        self.sending: deque[LinkFlit] = deque()
        self.credits_due = [0] * N_VCS
        self.turn = 0
        self.errors: list[str] = []
        self.stats = EndpointStats()
        self.first_delivery: dict[tuple, int] = {}
        self.last_delivery: dict[tuple, int] = {}
        # Credit round trips: when each packet's head left, per VC in order, and the cycles
        # until its credit came back (meaningful on a link without faults).
        self._sent_at: list[deque[int]] = [deque() for _ in range(N_VCS)]
        self.credit_rtts: list[tuple[int, int]] = []  # (vc, cycles)

    @property
    def done(self) -> bool:
        return all(s.gbn.done for s in self.senders.values()) and all(
            r.gbn.complete for r in self.receivers.values()
        )

    def cycle(self, now: int, rx: LinkFlit | None, rx_credits: int) -> tuple[LinkFlit | None, int]:
        """One clock: take the switch's flit and credit pulses, return ours."""
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
        for s in self.senders.values():
            before = s.gbn.timeouts
            s.gbn.tick(now)
            self.stats.timeouts += s.gbn.timeouts - before
        for r in self.receivers.values():
            self.control.extend(r.gbn.tick(now))
        return self._send(now), self._return_credits()

    def _event(self, now: int, event) -> None:
        if isinstance(event, Credit):
            self.credits_due[event.vc] += event.n
        elif isinstance(event, Control):
            h = event.header
            key = (h.vc, h.index, h.src if h.index == UNICAST_INDEX else 0)
            s = self.senders.get(key)
            if s is None:
                self.errors.append(f"port {self.port}: ACK/NACK for no stream of mine: {h}")
                return
            (s.gbn.on_ack if h.kind == KIND_ACK else s.gbn.on_nack)(h.src, h.seq)
        elif isinstance(event, Packet):
            self._data(now, event)

    def _data(self, now: int, packet: Packet) -> None:
        h = packet.header
        if not packet.ok:
            self.stats.bad_packets += 1
        key = (h.vc, h.index, h.src if h.index == UNICAST_INDEX else 0)
        r = self.receivers.get(key)
        if r is None or h.kind != KIND_DATA:
            if packet.ok:
                self.errors.append(f"port {self.port}: data packet for no stream of mine: {h}")
            return
        before = len(r.gbn.delivered)
        self.control.extend(r.gbn.on_packet(h, packet.ok))
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

    def _send(self, now: int) -> LinkFlit | None:
        flit = self._next_flit(now)
        if flit is not None and flit.head:  # the packet's credit is spent with its head
            self._sent_at[flit.vc].append(now)
        return flit

    def _next_flit(self, now: int) -> LinkFlit | None:
        if self.control and self.link_out.can_start(VC_CTRL):
            self.stats.control_sent += 1
            return self.link_out.packet_flits(self.control.popleft(), [])[0]
        if self.idle and self.rng.random() < self.idle:
            return None
        if self.sending:
            return self.sending.popleft()
        senders = list(self.senders.values())
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
            if self.credits_due[vc] and not (self.stall and self.rng.random() < self.stall):
                self.credits_due[vc] -= 1
                bits |= 1 << vc
        return bits

    @property
    def retransmissions(self) -> int:
        """Data packets sent more than once (Go-Back-N rewinds and timeouts)."""
        return sum(s.gbn.sent_count - len(s.stream.packets) for s in self.senders.values())
