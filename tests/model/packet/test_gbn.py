"""Go-Back-N endpoints: unit rules, and end to end over a lossy, delaying channel for
unicast, multicast and reductions (several senders summed by a switch-like stage)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from fredfab.model.packet.format import (
    KIND_ACK,
    KIND_DATA,
    KIND_NACK,
    SEQ_MOD,
    VC_MP,
    VC_PP,
    Header,
)
from fredfab.model.packet.gbn import GoBackNReceiver, GoBackNSender


def _data(seq: int, vc: int = VC_PP, index: int = 3, src: int = 1) -> Header:
    return Header(vc=vc, kind=KIND_DATA, index=index, seq=seq % SEQ_MOD, src=src)


def _rx(n: int, **kw: int) -> GoBackNReceiver:
    return GoBackNReceiver(n, port=5, vc=VC_PP, index=3, dst=1, **kw)


# --- receiver ---------------------------------------------------------------------------


def test_receiver_acks_every_few_and_the_last() -> None:
    rx = _rx(10, ack_every=4)
    replies = [rx.on_packet(_data(i), ok=True) for i in range(10)]
    assert rx.delivered == list(range(10)) and rx.complete
    acked = {i: r for i, r in enumerate(replies) if r}
    assert sorted(acked) == [3, 7, 9]
    assert acked[9] == [Header(vc=VC_PP, kind=KIND_ACK, index=3, seq=10, src=5, dst=1)]


def test_receiver_nacks_once_per_expected_value() -> None:
    rx = _rx(10)
    rx.on_packet(_data(0), ok=True)
    nack = Header(vc=VC_PP, kind=KIND_NACK, index=3, seq=1, src=5, dst=1)
    assert rx.on_packet(_data(2), ok=True) == [nack]  # packet 1 was lost
    assert rx.on_packet(_data(3), ok=True) == []
    assert rx.on_packet(_data(1), ok=False) == []  # damaged: still the same expected
    assert rx.on_packet(_data(1), ok=True) == []
    assert rx.delivered == [0, 1]
    assert [(h.kind, h.seq) for h in rx.on_packet(_data(3), ok=True)] == [(KIND_NACK, 2)]


def test_receiver_nack_rearms_when_expected_moves() -> None:
    rx = _rx(10)
    assert [h.seq for h in rx.on_packet(_data(1), ok=True)] == [0]
    assert rx.on_packet(_data(0), ok=True) == []
    assert [(h.kind, h.seq) for h in rx.on_packet(_data(0), ok=False)] == [(KIND_NACK, 1)]


def test_receiver_reacks_duplicates() -> None:
    rx = _rx(10)
    for i in range(3):
        rx.on_packet(_data(i), ok=True)
    assert [(h.kind, h.seq) for h in rx.on_packet(_data(1), ok=True)] == [(KIND_ACK, 3)]
    assert rx.delivered == [0, 1, 2] and rx.discarded == 1


def test_receiver_timeout_nacks_until_complete() -> None:
    rx = _rx(2, timeout=10)
    assert rx.tick(0) == [] and rx.tick(9) == []
    assert [(h.kind, h.seq) for h in rx.tick(10)] == [(KIND_NACK, 0)]
    rx.on_packet(_data(0), ok=True)
    assert rx.tick(15) == []  # a delivery restarts the wait
    assert rx.tick(24) == []
    assert [(h.kind, h.seq) for h in rx.tick(25)] == [(KIND_NACK, 1)]
    rx.on_packet(_data(1), ok=True)
    assert rx.tick(30) == []
    # Complete: the final ACK again every timeout (a reduction sender may have lost it).
    assert [(h.kind, h.seq) for h in rx.tick(40)] == [(KIND_ACK, 2)]
    assert rx.tick(45) == []
    assert [(h.kind, h.seq) for h in rx.tick(50)] == [(KIND_ACK, 2)]


def test_receiver_rejects_packets_of_another_flow() -> None:
    with pytest.raises(ValueError, match="VC 0 slot 3 at the receiver of VC 2 slot 3"):
        _rx(4).on_packet(_data(0, vc=VC_MP), ok=True)


# --- sender -----------------------------------------------------------------------------


def _send_all(tx: GoBackNSender) -> list[int]:
    out = []
    while (seq := tx.next_seq()) is not None:
        tx.sent(seq)
        out.append(seq)
    return out


def test_sender_window_and_cumulative_acks() -> None:
    tx = GoBackNSender(10, window=4, timeout=100, receivers=frozenset({5}))
    assert _send_all(tx) == [0, 1, 2, 3]
    tx.on_ack(5, 2)
    assert _send_all(tx) == [4, 5]
    tx.on_ack(5, 1)  # stale: overtaken by the ACK of 2
    assert tx.base == 2 and not tx.done
    tx.on_ack(5, 6)
    assert _send_all(tx) == [6, 7, 8, 9] and tx.next_seq() is None
    tx.on_ack(5, 10)
    assert tx.done
    with pytest.raises(ValueError, match="never sent"):
        GoBackNSender(10, 4, 100, frozenset({5})).on_ack(5, 1)


def test_sender_nack_rewinds_and_timeout_goes_back_to_base() -> None:
    tx = GoBackNSender(20, window=8, timeout=50, receivers=frozenset({5}))
    tx.tick(0)
    assert _send_all(tx) == list(range(8))
    tx.on_nack(5, 3)
    assert tx.base == 3 and tx.rewinds == 1 and _send_all(tx) == list(range(3, 11))
    tx.tick(49)
    assert tx.next_seq() is None
    tx.tick(50)  # 50 cycles since the NACK without progress
    assert tx.timeouts == 1 and _send_all(tx) == list(range(3, 11))


def test_rewind_goes_back_without_acknowledging() -> None:
    """A REWIND from the switch moves ``next`` back (never before ``base``, never forward)
    and says nothing about what receivers have."""
    tx = GoBackNSender(20, window=8, timeout=50, receivers=frozenset({1, 2}))
    assert _send_all(tx) == list(range(8))
    tx.on_ack(1, 4)
    tx.on_ack(2, 2)
    tx.on_rewind(5)
    assert (tx.base, tx.next, tx.rewinds, dict(tx.acked)) == (2, 5, 1, {1: 4, 2: 2})
    tx.on_rewind(1)  # before base: every receiver has it
    tx.on_rewind(9)  # not sent yet: nothing to go back to
    assert (tx.next, tx.rewinds) == (5, 1)
    assert _send_all(tx) == [5, 6, 7, 8, 9]


def test_messages_release_packets_after_their_acknowledgement() -> None:
    from fredfab.sim.verify.packet.traffic import Messages

    tx = GoBackNSender(100, window=32, timeout=10**6, receivers=frozenset({1}))
    release = Messages(seed=5, size_bits=3, gap_bits=4)
    release.start(tx)
    first = tx.limit
    assert 1 <= first <= 8 and _send_all(tx) == list(range(first))
    release.tick(tx, 0)
    assert tx.limit == first  # not acknowledged yet
    tx.on_ack(1, first)
    starts = []
    for now in range(1, 40):
        before = tx.limit
        release.tick(tx, now)
        if tx.limit != before:
            starts.append(now)
    assert len(starts) == 1 and 1 <= starts[0] <= 16 and first < tx.limit <= first + 8
    # The same seed, the same messages: a flow's inputs release alike.
    again = GoBackNSender(100, window=32, timeout=10**6, receivers=frozenset({1}))
    Messages(seed=5, size_bits=3, gap_bits=4).start(again)
    assert again.limit == first


def test_multicast_sender_waits_for_the_slowest_receiver() -> None:
    tx = GoBackNSender(6, window=3, timeout=100, receivers=frozenset({1, 2}))
    assert _send_all(tx) == [0, 1, 2]
    tx.on_ack(1, 3)
    assert tx.base == 0 and _send_all(tx) == []
    tx.on_nack(2, 1)
    assert tx.base == 1 and _send_all(tx) == [1, 2, 3]
    tx.on_nack(2, 1)  # again: back to 1
    tx.on_ack(2, 3)  # both have 0..2 now: no need to resend them
    assert tx.base == 3 and _send_all(tx) == [3, 4, 5]
    with pytest.raises(ValueError, match="port 7 is not a receiver"):
        tx.on_ack(7, 0)


def test_sequence_numbers_wrap() -> None:
    n = SEQ_MOD + 100
    tx = GoBackNSender(n, window=64, timeout=10**9, receivers=frozenset({5}))
    rx = _rx(n, ack_every=32)
    while not tx.done:
        for seq in _send_all(tx):
            for h in rx.on_packet(_data(seq), ok=True):
                tx.on_ack(h.src, h.seq)
    assert rx.delivered == list(range(n)) and rx.discarded == 0


def test_window_must_leave_half_the_sequence_space() -> None:
    with pytest.raises(ValueError, match="window must be"):
        GoBackNSender(10, window=SEQ_MOD // 2, timeout=10, receivers=frozenset({1}))


# --- end to end -------------------------------------------------------------------------


@dataclass
class Channel:
    """A link in one direction: drops or damages an item with the given rates and delays
    it 1..max_delay cycles; with ``reorder`` each item has its own delay, else the link
    keeps order (delivery times never decrease), as a physical link and the switch do."""

    rng: random.Random
    drop: float
    corrupt: float
    max_delay: int
    reorder: bool = False
    queue: list[tuple[int, int, object, bool]] = field(default_factory=list)
    _order: int = 0
    _last_time: int = 0

    def send(self, now: int, item: object, ok: bool = True) -> None:
        """``ok`` False: the item was already damaged upstream."""
        if self.rng.random() < self.drop:
            return
        ok = ok and self.rng.random() >= self.corrupt
        t = now + self.rng.randint(1, self.max_delay)
        if not self.reorder:
            t = self._last_time = max(t, self._last_time)
        self._order += 1
        self.queue.append((t, self._order, item, ok))

    def due(self, now: int) -> list[tuple[object, bool]]:
        self.queue.sort(key=lambda e: (e[0], e[1]))
        out = [(item, ok) for t, _, item, ok in self.queue if t <= now]
        self.queue = [e for e in self.queue if e[0] > now]
        return out


def _payload(sender: int, seq: int) -> int:
    return (sender + 1) * 1000003 + seq * 7919


@dataclass
class Net:
    """Senders -> (input links) -> a summing stage -> (output links) -> receivers, and
    ACK/NACKs back through the stage to every sender. The stage pairs packets of equal
    sequence number: once every sender's copy of seq k has arrived (the newest copy of
    each, damaged or not), it sends their sum, damaged if any part was. With one sender it
    forwards."""

    senders: list[GoBackNSender]
    receivers: list[GoBackNReceiver]
    up: list[Channel]  # per sender
    down: list[Channel]  # per receiver
    ctrl_up: list[Channel]  # per receiver, to the stage
    ctrl_down: list[Channel]  # per sender
    pending: dict[int, dict[int, tuple[int, bool]]] = field(default_factory=dict)
    got: dict[int, list[int]] = field(default_factory=dict)

    def run(self, cycles: int) -> int:
        """Step until the receivers are complete and the senders done; the cycle it
        stopped at."""
        self.got = {r.port: [] for r in self.receivers}
        for now in range(cycles):
            if all(r.complete for r in self.receivers) and all(s.done for s in self.senders):
                return now
            self._step(now)
        raise AssertionError(f"not complete after {cycles} cycles")

    def _step(self, now: int) -> None:
        for i, (s, link) in enumerate(zip(self.senders, self.up, strict=True)):
            s.tick(now)
            seq = s.next_seq()
            if seq is not None:
                s.sent(seq)
                link.send(now, (_data(seq, src=i), _payload(i, seq)))
            for (header, value), ok in link.due(now):
                self._pair(now, i, header.seq, value if ok else value ^ 1, ok)
        for r, link, back in zip(self.receivers, self.down, self.ctrl_up, strict=True):
            for (header, value), ok in link.due(now):
                value = value if ok else value ^ 1  # damaged data: a wrong delivery shows
                before = len(r.delivered)
                replies = r.on_packet(header, ok)
                if len(r.delivered) > before:
                    self.got[r.port].append(value)
                for h in replies:
                    back.send(now, h)
            for h in r.tick(now):
                back.send(now, h)
        for back in self.ctrl_up:
            for h, ok in back.due(now):
                if not ok:
                    continue  # a damaged control flit fails its CRC and is dropped
                for link in self.ctrl_down:
                    link.send(now, h)
        for s, link in zip(self.senders, self.ctrl_down, strict=True):
            for h, ok in link.due(now):
                if ok:
                    (s.on_ack if h.kind == KIND_ACK else s.on_nack)(h.src, h.seq)

    def _pair(self, now: int, sender: int, seq: int, value: int, ok: bool) -> None:
        parts = self.pending.setdefault(seq, {})
        parts[sender] = (value, ok)
        if len(parts) == len(self.senders):
            del self.pending[seq]
            total = sum(v for v, _ in parts.values())
            for link in self.down:
                link.send(now, (_data(seq), total), all(k for _, k in parts.values()))


def _net(seed: int, n_senders: int, n_receivers: int, rate: float, reorder: bool, n: int) -> Net:
    rng = random.Random(seed)

    def ch(may_reorder: bool = True) -> Channel:
        return Channel(rng, rng.uniform(0, rate), rng.uniform(0, rate), 6, reorder and may_reorder)

    ports = [8 + k for k in range(n_receivers)]
    senders = [
        GoBackNSender(n, window=8, timeout=60, receivers=frozenset(ports)) for _ in range(n_senders)
    ]
    receivers = [
        GoBackNReceiver(n, ack_every=4, timeout=80, port=p, vc=VC_PP, index=3, dst=1) for p in ports
    ]
    return Net(
        senders,
        receivers,
        up=[ch(may_reorder=False) for _ in senders],  # the stage reads in order
        down=[ch() for _ in receivers],
        ctrl_up=[ch() for _ in receivers],
        ctrl_down=[ch() for _ in senders],
    )


@pytest.mark.parametrize(
    ("n_senders", "n_receivers", "reorder"),
    [(1, 1, False), (1, 1, True), (1, 3, False), (1, 3, True), (3, 1, False), (4, 3, False)],
    ids=["unicast", "unicast-reorder", "multicast", "multicast-reorder", "reduce", "allreduce"],
)
@pytest.mark.parametrize("seed", range(6))
def test_every_receiver_gets_every_packet_once_in_order(
    n_senders: int, n_receivers: int, reorder: bool, seed: int
) -> None:
    n = 40
    net = _net(seed, n_senders, n_receivers, rate=0.2, reorder=reorder, n=n)
    net.run(50_000)
    for r in net.receivers:
        assert r.delivered == list(range(n))
        expected = [sum(_payload(i, k) for i in range(n_senders)) for k in range(n)]
        assert net.got[r.port] == expected
    # A sender that missed the final ACK gets it again: the complete receiver repeats it.
    assert all(s.done for s in net.senders)


def test_lossless_channel_needs_no_rewind() -> None:
    net = _net(0, 2, 2, rate=0.0, reorder=False, n=50)
    cycles = net.run(10_000)
    assert all(s.rewinds == 0 and s.timeouts == 0 and s.sent_count == 50 for s in net.senders)
    assert all(r.discarded == 0 for r in net.receivers)
    assert cycles < 50 * 3  # the window keeps the link busy
