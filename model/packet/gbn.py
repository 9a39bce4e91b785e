"""Go-Back-N endpoints of packet mode, driven by an integer cycle count (``tick(now)``).

The switch never drops a packet for lack of space, but a link can lose or damage one, so the
NPUs recover end to end: the receiver delivers only the next packet in order and answers with
cumulative ACKs and NACKs on the control VC; the sender rewinds to a NACKed packet or, after a
timeout without progress, to the oldest unacknowledged one. A flow may have several receivers
(multicast: the sender waits for the slowest) and several senders (reduction: the switch sums
packets of equal sequence number, so every sender runs the same protocol against the same
receivers).

Sequence numbers travel mod 2**16 (model/packet/format.py); the endpoints keep absolute
packet indices and map a received number to the absolute index nearest their own position
(serial-number arithmetic), which is exact because the window stays below 2**15.

The switch speeds recovery up for configured flows (docs/switch-rtl.md, "Loss recovery"):
it sends the senders a REWIND when it sees a gap in their sequence numbers (a packet lost
on the way to it), and passes a receiver's NACK on as a NACK only when the senders must go
back for it (otherwise as an ACK of the same number), so one loss costs one rewind. A
sender rewinds on a NACK and on a REWIND alike.

A receiver that is complete repeats its final cumulative ACK every ``timeout`` cycles
(``GoBackNReceiver.tick``): a reduction sender that lost the final ACK cannot get it back
any other way (its lone resend cannot form a sum once the other senders are done).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fredfab.model.packet.format import (
    DATA_VCS,
    KIND_ACK,
    KIND_DATA,
    KIND_NACK,
    SEQ_MOD,
    UNICAST_INDEX,
    VC_DP,
    Header,
)


def _absolute(seq: int, near: int) -> int:
    """The absolute index whose sequence number is ``seq``, closest to ``near``."""
    delta = (seq - near) % SEQ_MOD
    return near + delta if delta < SEQ_MOD // 2 else near + delta - SEQ_MOD


@dataclass
class GoBackNSender:
    """One sender of a flow: ``n_packets`` packets, at most ``window`` past the slowest
    receiver, rewound by a NACK or a REWIND or after ``timeout`` cycles without
    acknowledgement progress.

    acked[r] -- receiver r has every packet before this absolute index.
    next     -- absolute index of the next packet to send.
    limit    -- packets before this index may be sent (the traffic's messages release
                them: fredfab.sim.verify.packet.traffic); ``n_packets`` unless set."""

    n_packets: int
    window: int
    timeout: int
    receivers: frozenset[int]
    next: int = field(default=0, init=False)
    acked: dict[int, int] = field(init=False)
    limit: int = field(init=False)
    sent_count: int = field(default=0, init=False)
    rewinds: int = field(default=0, init=False)
    timeouts: int = field(default=0, init=False)
    _high: int = field(default=0, init=False)  # one past the highest index ever sent
    _now: int = field(default=0, init=False)
    _since: int = field(default=0, init=False)  # cycle of the last progress or rewind

    def __post_init__(self) -> None:
        if self.n_packets < 0:
            raise ValueError(f"n_packets must be >= 0, got {self.n_packets}")
        if not 1 <= self.window < SEQ_MOD // 2:
            raise ValueError(f"window must be 1..{SEQ_MOD // 2 - 1}, got {self.window}")
        if self.timeout < 1:
            raise ValueError(f"timeout must be >= 1 cycle, got {self.timeout}")
        if not self.receivers:
            raise ValueError("a sender needs at least one receiver")
        self.acked = dict.fromkeys(self.receivers, 0)
        self.limit = self.n_packets

    @property
    def base(self) -> int:
        """The oldest packet some receiver still lacks."""
        return min(self.acked.values())

    @property
    def done(self) -> bool:
        return self.base >= self.n_packets

    def next_seq(self) -> int | None:
        """The sequence number to send now, or None (window full, or all sent)."""
        if self.next >= min(self.n_packets, self.limit) or self.next >= self.base + self.window:
            return None
        return self.next % SEQ_MOD

    def sent(self, seq: int) -> None:
        """The packet ``next_seq()`` named went out."""
        if seq != self.next_seq():
            raise ValueError(f"sent seq {seq}, but the next to send is {self.next_seq()}")
        if self.next == self.base:  # nothing was outstanding: the timeout starts now
            self._since = self._now
        self.next += 1
        self._high = max(self._high, self.next)
        self.sent_count += 1

    def clock(self, now: int) -> None:
        """The cycle the next events happen in (ACKs, NACKs and REWINDs restart the timeout
        from it); ``tick`` sets it too."""
        self._now = now

    def on_ack(self, src: int, seq: int) -> None:
        """Receiver ``src`` has every packet before ``seq``."""
        self._advance(src, seq)

    def on_nack(self, src: int, seq: int) -> None:
        """Receiver ``src`` has every packet before ``seq`` and wants ``seq`` again."""
        k = self._advance(src, seq)
        if k is not None and k < self.next:
            self.next = k
            self.rewinds += 1
            self._since = self._now

    def on_rewind(self, seq: int) -> None:
        """The switch saw packet ``seq`` missing from one of the flow's senders: go back to
        it, unless already behind it (it is never before ``base``: the switch's expected
        number does not fall below what every receiver has acknowledged)."""
        k = _absolute(seq, self.base)
        if self.base <= k < self.next:
            self.next = k
            self.rewinds += 1
            self._since = self._now

    def _advance(self, src: int, seq: int) -> int | None:
        """Take a cumulative acknowledgement; its absolute index, None when it is stale."""
        if src not in self.acked:
            raise ValueError(f"port {src} is not a receiver of this flow {sorted(self.receivers)}")
        k = _absolute(seq, self.acked[src])
        if k < self.acked[src]:
            return None  # overtaken by a later ACK/NACK
        if k > self._high:
            raise ValueError(f"receiver {src} acknowledged seq {seq}, never sent")
        base = self.base
        self.acked[src] = k
        if self.base > base:
            self._since = self._now
            # Every receiver has the packets before base: resending them is useless.
            self.next = max(self.next, self.base)
        return k

    def tick(self, now: int) -> None:
        """Cycle ``now``: with packets outstanding and no progress for ``timeout`` cycles,
        go back to the oldest packet some receiver lacks."""
        self._now = now
        if self.next > self.base and now - self._since >= self.timeout:
            self.next = self.base
            self.timeouts += 1
            self._since = now


#: Go-Back-N (paper §5.4): a receiver sends a cumulative ACK every 16 data packets. A
#: sender's window must exceed it, or a sender whose window is full waits for an ACK its
#: receiver only sends after more packets: each window would then cost a timeout.
ACK_EVERY = 16


@dataclass
class GoBackNReceiver:
    """One receiver of a flow: delivers packets 0..n_packets-1 once each, in order.

    port  -- this receiver's switch port (``src`` of its ACK/NACKs).
    vc, index -- the flow's data VC and configuration slot, named by its ACK/NACKs.
    dst   -- where its ACK/NACKs go for unicast (the sender's port); the switch sends those
             of a configured flow to all of the flow's inputs."""

    n_packets: int
    ack_every: int = ACK_EVERY
    timeout: int = 256
    port: int = 0
    vc: int = VC_DP
    index: int = UNICAST_INDEX
    dst: int = 0
    expected: int = field(default=0, init=False)
    delivered: list[int] = field(default_factory=list, init=False)
    discarded: int = field(default=0, init=False)
    _nacked: int | None = field(default=None, init=False)  # expected when last NACKed
    _since: int | None = field(default=None, init=False)  # cycle of the last delivery seen
    _seen: int = field(default=0, init=False)  # deliveries when ``tick`` last looked

    def __post_init__(self) -> None:
        if self.n_packets < 0:
            raise ValueError(f"n_packets must be >= 0, got {self.n_packets}")
        if self.ack_every < 1:
            raise ValueError(f"ack_every must be >= 1, got {self.ack_every}")
        if self.timeout < 1:
            raise ValueError(f"timeout must be >= 1 cycle, got {self.timeout}")
        if self.vc not in DATA_VCS:
            raise ValueError(f"vc must be a data VC {DATA_VCS}, got {self.vc}")

    @property
    def complete(self) -> bool:
        return self.expected >= self.n_packets

    def _control(self, kind: int) -> Header:
        return Header(
            vc=self.vc,
            kind=kind,
            index=self.index,
            seq=self.expected % SEQ_MOD,
            src=self.port,
            dst=self.dst,
        )

    def on_packet(self, header: Header, ok: bool) -> list[Header]:
        """Read one data packet (``ok``: no bad flit); the ACK/NACKs to send back. A packet
        delivered is appended to ``delivered``."""
        if header.kind != KIND_DATA:
            raise ValueError(f"not a data packet: {header}")
        if (header.vc, header.index) != (self.vc, self.index):
            raise ValueError(
                f"packet of VC {header.vc} slot {header.index} at the receiver of "
                f"VC {self.vc} slot {self.index}"
            )
        k = _absolute(header.seq, self.expected)
        if ok and k == self.expected and not self.complete:
            self.delivered.append(k)
            self.expected += 1
            self._nacked = None
            if self.expected % self.ack_every == 0 or self.complete:
                return [self._control(KIND_ACK)]
            return []
        self.discarded += 1
        if ok and k < self.expected:
            # A duplicate: the sender went back further than needed, or our ACK was lost.
            return [self._control(KIND_ACK)]
        if self.complete or self._nacked == self.expected:
            return []
        self._nacked = self.expected
        return [self._control(KIND_NACK)]

    def tick(self, now: int) -> list[Header]:
        """Cycle ``now``: nothing delivered for ``timeout`` cycles -> NACK the expected
        packet again (this also repairs lost ACKs and NACKs); once complete, repeat the final
        ACK every ``timeout`` cycles instead. A reduction sender that lost the final ACK
        cannot get it back any other way: its retransmission is stale at the switch, which
        has summed that packet already, and the flow's other senders are done."""
        if self._since is None or len(self.delivered) != self._seen:
            self._since, self._seen = now, len(self.delivered)
        if now - self._since < self.timeout:
            return []
        self._since = now
        if self.complete:
            return [self._control(KIND_ACK)]
        self._nacked = self.expected
        return [self._control(KIND_NACK)]
