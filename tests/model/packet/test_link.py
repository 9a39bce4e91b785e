"""Link framing and the reader's repair rules: exact without faults; under random drops and
corruption, one packet out per packet in, good packets exact, and every credit returned
(syncs bring back the credits of whatever was lost); headless packets counted, the tail
timeout, and syncs."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from fredfab.model.packet.faults import FaultRates, LinkFaults
from fredfab.model.packet.format import (
    DATA_VCS,
    KIND_ACK,
    KIND_NACK,
    N_VCS,
    VC_CTRL,
    VC_DP,
    VC_MP,
    VC_PP,
    Header,
    LinkFlit,
    PacketFormat,
)
from fredfab.model.packet.link import (
    DROP_BAD_CONTROL,
    DROP_BAD_HEAD,
    DROP_ORPHAN,
    Control,
    Credit,
    Dropped,
    LinkEvent,
    LinkReceiver,
    LinkSender,
    Packet,
    sync_interval,
    tail_timeout,
)

BITS = 64  # CRC-8 0x07 detects every 1..3-bit error up to 119 bits (test_crc.py)
FMT = PacketFormat(packet_flits=4, data_depth=3, ctrl_depth=2)
LINK = FMT.link(BITS)


def _payload(rng: random.Random, fmt: PacketFormat = FMT) -> list[int]:
    return [rng.getrandbits(BITS) for _ in range(fmt.packet_flits)]


def _credits(events: list[LinkEvent]) -> dict[int, int]:
    out = dict.fromkeys(range(N_VCS), 0)
    for e in events:
        if isinstance(e, Credit):
            out[e.vc] += e.n
    return out


def _push_all(rx: LinkReceiver, flits: list[LinkFlit]) -> list[LinkEvent]:
    return [e for f in flits for e in rx.push(f)]


def _bad_crc(flit: LinkFlit) -> LinkFlit:
    """The flit with one bit of its CRC flipped: the check fails."""
    return replace(flit, crc=flit.crc ^ 1)


# --- the sender -------------------------------------------------------------------------


def test_data_packet_framing() -> None:
    tx = LinkSender(FMT, BITS)
    header = Header(vc=VC_PP, seq=7, src=3, dst=5)
    payload = _payload(random.Random(0))
    flits = tx.packet_flits(header, payload)
    assert len(flits) == FMT.data_packet_flits
    assert [f.head for f in flits] == [True] + [False] * FMT.packet_flits
    assert [f.last for f in flits] == [False] * FMT.packet_flits + [True]
    assert {(f.vc, f.pkt) for f in flits} == {(VC_PP, 0)}
    assert flits[0].header == header and [f.data for f in flits[1:]] == payload
    assert all(LINK.ok(f) for f in flits)
    assert tx.credits == [3, 3, 2, 2] and tx.pkt == [0, 0, 1, 0]


def test_control_packet_is_one_flit_on_the_control_vc() -> None:
    tx = LinkSender(FMT, BITS)
    [flit] = tx.packet_flits(Header(vc=VC_DP, kind=KIND_ACK, seq=9), [])
    assert (flit.head, flit.last, flit.vc, flit.header.vc) == (True, True, VC_CTRL, VC_DP)
    assert tx.credits[VC_CTRL] == FMT.ctrl_depth - 1


def test_credits_and_packet_counter_wrap() -> None:
    tx = LinkSender(PacketFormat(packet_flits=1, data_depth=1), BITS)
    for i in range(20):
        assert tx.can_start(VC_MP)
        [head, _] = tx.packet_flits(Header(vc=VC_MP, seq=i), [i])
        assert head.pkt == i % 16
        assert not tx.can_start(VC_MP)
        with pytest.raises(ValueError, match="no credit left on VC 0"):
            tx.packet_flits(Header(vc=VC_MP), [0])
        tx.credit(VC_MP)
    with pytest.raises(ValueError, match="exceed the buffer's 1 slots"):
        tx.credit(VC_MP)


def test_sender_rejects_short_payloads_and_control_vc_data() -> None:
    tx = LinkSender(FMT, BITS)
    with pytest.raises(ValueError, match="exactly 4 payload flits"):
        tx.packet_flits(Header(vc=VC_MP), [1, 2])
    with pytest.raises(ValueError, match="needs a data VC"):
        tx.packet_flits(Header(vc=VC_CTRL), [0] * 4)
    with pytest.raises(ValueError, match="does not fit in 64 bits"):
        tx.packet_flits(Header(vc=VC_MP), [1 << 64, 0, 0, 0])


# --- the reader's rules, one at a time --------------------------------------------------


def _packets(n: int, vc: int = VC_DP, seed: int = 0) -> tuple[list[Header], list[list[int]]]:
    rng = random.Random(seed)
    return [Header(vc=vc, seq=i, src=1) for i in range(n)], [_payload(rng) for _ in range(n)]


def _stream(headers: list[Header], payloads: list[list[int]]) -> list[list[LinkFlit]]:
    tx = LinkSender(PacketFormat(4, data_depth=15), BITS)
    return [tx.packet_flits(h, p) for h, p in zip(headers, payloads, strict=True)]


def test_intact_packet() -> None:
    headers, payloads = _packets(1)
    events = _push_all(LinkReceiver(FMT, BITS), _stream(headers, payloads)[0])
    assert events == [
        Packet(VC_DP, headers[0], [(d, False) for d in payloads[0]]),
        Credit(VC_DP, 1),
    ]


def test_packet_lost_whole_returns_its_credit_at_the_next_head() -> None:
    headers, payloads = _packets(4)
    a, _, _, d = _stream(headers, payloads)
    rx = LinkReceiver(FMT, BITS)
    events = _push_all(rx, a) + rx.push(d[0])
    assert events[-1] == Credit(VC_DP, 2)  # packets 1 and 2 were lost whole
    assert [e.header.seq for e in events if isinstance(e, Packet)] == [0]


def test_lost_head_drops_the_body_and_returns_the_credit_at_its_last() -> None:
    """Packet 0's body carries the next pkt: it is packet 0 without its head, credited when
    its ``last`` is read; packet 1's head then counts nothing again."""
    headers, payloads = _packets(2)
    a, b = _stream(headers, payloads)
    rx = LinkReceiver(FMT, BITS)
    assert _push_all(rx, a[1:-1]) == [Dropped(VC_DP, DROP_ORPHAN)] * 3  # no credit yet
    events = rx.push(a[-1]) + _push_all(rx, b)
    assert events[:2] == [Dropped(VC_DP, DROP_ORPHAN), Credit(VC_DP, 1)]
    intact = Packet(VC_DP, headers[1], [(x, False) for x in payloads[1]])
    assert events[2:] == [intact, Credit(VC_DP, 1)]


def test_a_headless_packet_ends_at_the_next_packets_flit() -> None:
    """Packet 0 loses its head and its last flit; packet 1 its head too: packet 1's first
    body flit ends packet 0's run (its credit) and starts its own."""
    headers, payloads = _packets(2)
    a, b = _stream(headers, payloads)
    events = _push_all(LinkReceiver(FMT, BITS), a[1:-1] + b[1:])
    assert _credits(events)[VC_DP] == 2
    assert events[3] == Credit(VC_DP, 1)  # before any of packet 1's flits is dropped
    assert events[-1] == Credit(VC_DP, 1)
    assert [e for e in events if isinstance(e, Packet)] == []


def test_an_orphan_with_a_later_pkt_is_not_counted() -> None:
    """Packet 0 lost whole, packet 1 its head: packet 1's body flits carry pkt 1, not the
    next expected 0, so they are dropped uncounted; packet 2's head counts both."""
    headers, payloads = _packets(3)
    _, b, c = _stream(headers, payloads)
    rx = LinkReceiver(FMT, BITS)
    assert _push_all(rx, b[1:]) == [Dropped(VC_DP, DROP_ORPHAN)] * FMT.packet_flits
    events = _push_all(rx, c)
    assert events[0] == Credit(VC_DP, 2) and _credits(events)[VC_DP] == 3


def test_every_head_of_a_window_lost_the_sender_goes_on() -> None:
    fmt = PacketFormat(packet_flits=2, data_depth=2)
    tx, rx = LinkSender(fmt, BITS), LinkReceiver(fmt, BITS)
    for seq in range(6):
        assert tx.can_start(VC_MP)
        flits = tx.packet_flits(Header(vc=VC_MP, seq=seq), [seq, seq])
        for e in _push_all(rx, flits[1:]):  # every head lost
            if isinstance(e, Credit):
                tx.credit(e.vc, e.n)  # raises if a packet were counted twice
    assert tx.credits[VC_MP] == fmt.data_depth


# --- the tail timeout -------------------------------------------------------------------


def _clocked(rx: LinkReceiver, timed: list[tuple[int, LinkFlit]], until: int) -> list[LinkEvent]:
    """Tick every cycle from the first flit's up to ``until``, pushing each flit in its
    cycle."""
    at = dict(timed)
    events: list[LinkEvent] = []
    for now in range(timed[0][0], until + 1):
        events += rx.tick(now)
        if now in at:
            events += rx.push(at[now])
    return events


def test_tail_timeout_ends_the_packet_and_drops_its_late_flits() -> None:
    """Packet 0's last two flits come ``tail_timeout`` cycles late: it ends, padded, when
    its VC has been quiet that long; the late flits are dropped (not counted as a packet
    either), and packet 1 is whole and counts nothing again."""
    t = tail_timeout(FMT)
    headers, payloads = _packets(2)
    a, b = _stream(headers, payloads)
    rx = LinkReceiver(FMT, BITS)
    early = _clocked(rx, list(enumerate(a[:3])), 2 + t)
    assert early == []  # quiet for tail_timeout cycles: not yet
    [packet, credit] = rx.tick(3 + t)
    p = payloads[0]
    assert packet == Packet(VC_DP, headers[0], [(p[0], False), (p[1], False), (0, True), (0, True)])
    assert credit == Credit(VC_DP, 1)
    late = list(enumerate(a[3:] + b, start=4 + t))
    events = _clocked(rx, late, 4 + t + len(late))
    intact = Packet(VC_DP, headers[1], [(x, False) for x in payloads[1]])
    assert events == [Dropped(VC_DP, DROP_ORPHAN)] * 2 + [intact, Credit(VC_DP, 1)]


def test_without_a_clock_there_is_no_timeout() -> None:
    """A receiver that is never ticked (an NPU's) keeps a packet open until the next flit
    of its VC shows where it ended."""
    headers, payloads = _packets(2)
    a, b = _stream(headers, payloads)
    rx = LinkReceiver(FMT, BITS)
    assert _push_all(rx, a[:3]) == []
    events = _push_all(rx, a[3:] + b)
    assert [type(e) for e in events] == [Packet, Credit, Packet, Credit]
    assert events[0].ok


def test_the_clock_only_runs_forward() -> None:
    rx = LinkReceiver(FMT, BITS)
    rx.tick(5)
    with pytest.raises(ValueError, match="cycle 4 after 5"):
        rx.tick(4)


def test_early_last_pads_the_packet_bad() -> None:
    headers, payloads = _packets(1)
    [a] = _stream(headers, payloads)
    events = _push_all(LinkReceiver(FMT, BITS), [a[0], a[1], a[4]])
    p = payloads[0]
    assert events == [
        Packet(VC_DP, headers[0], [(p[0], False), (p[3], False), (0, True), (0, True)]),
        Credit(VC_DP, 1),
    ]


def test_head_met_early_ends_the_packet_then_starts_its_own() -> None:
    headers, payloads = _packets(2)
    a, b = _stream(headers, payloads)
    events = _push_all(LinkReceiver(FMT, BITS), a[:3] + b)
    p = payloads[0]
    assert events == [
        Packet(VC_DP, headers[0], [(p[0], False), (p[1], False), (0, True), (0, True)]),
        Credit(VC_DP, 1),
        Packet(VC_DP, headers[1], [(x, False) for x in payloads[1]]),
        Credit(VC_DP, 1),
    ]


def test_bad_body_flit_is_kept_marked_bad() -> None:
    headers, payloads = _packets(1)
    [a] = _stream(headers, payloads)
    a[2] = replace(a[2], data=a[2].data ^ 1)
    [packet, credit] = _push_all(LinkReceiver(FMT, BITS), a)
    assert isinstance(packet, Packet) and credit == Credit(VC_DP, 1)
    assert packet.flits[1] == (payloads[0][1] ^ 1, True)
    assert [bad for _, bad in packet.flits] == [False, True, False, False] and not packet.ok


def test_bad_head_drops_its_packet_but_its_pkt_counts() -> None:
    headers, payloads = _packets(3)
    a, b, c = _stream(headers, payloads)
    rx = LinkReceiver(FMT, BITS)
    events = _push_all(rx, [_bad_crc(a[0]), *a[1:], *c])
    # Packet 0 is dropped when it ends; the gap before packet 2 is packet 1 alone.
    assert events[:3] == [Dropped(VC_DP, DROP_BAD_HEAD), Credit(VC_DP, 1), Credit(VC_DP, 1)]
    assert [e.header.seq for e in events if isinstance(e, Packet)] == [2]


def test_flit_past_the_count_without_last_marks_the_final_flit_bad() -> None:
    headers, payloads = _packets(1)
    [a] = _stream(headers, payloads)
    a[4] = replace(a[4], last=False)
    extra = replace(a[4], data=0)
    events = _push_all(LinkReceiver(FMT, BITS), [*a, extra])
    p = payloads[0]
    assert events == [
        Packet(VC_DP, headers[0], [(p[0], False), (p[1], False), (p[2], False), (p[3], True)]),
        Credit(VC_DP, 1),
        Dropped(VC_DP, DROP_ORPHAN),
    ]


def test_control_flits_good_bad_and_lost() -> None:
    tx = LinkSender(PacketFormat(4, ctrl_depth=15), BITS)
    acks = [Header(vc=VC_PP, kind=KIND_NACK, seq=i, src=2, dst=6) for i in range(4)]
    f0, f1, f2, f3 = (tx.packet_flits(h, [])[0] for h in acks)
    events = _push_all(LinkReceiver(FMT, BITS), [f0, _bad_crc(f1), f3])  # f2 lost whole
    assert events == [
        Control(acks[0]),
        Credit(VC_CTRL, 1),
        Dropped(VC_CTRL, DROP_BAD_CONTROL),
        Credit(VC_CTRL, 1),
        Credit(VC_CTRL, 1),
        Control(acks[3]),
        Credit(VC_CTRL, 1),
    ]


# --- random streams on interleaved VCs --------------------------------------------------


@dataclass
class _Run:
    sent: dict[int, list[tuple[Header, list[int]]]]  # per VC, in order
    events: list[LinkEvent]
    credits_back: dict[int, int]
    sender: LinkSender
    lost: set[tuple[int, int, int]]  # (vc, seq, flit index) of every flit the link dropped


def _run(seed: int, fmt: PacketFormat, drop: float, corrupt: float, counts: list[int]) -> _Run:
    """Send counts[v] packets on each VC, interleaving flits of different VCs at random,
    through faults, returning credits to the sender as the reader frees them.

    Each VC's final packet crosses intact, so that its end is known (the receiver has no
    clock here, so no tail timeout). Any other flit may be lost, a whole credit window
    included: a VC whose sender is out of credits with packets to send sends a sync
    (through the same faults) whenever nothing else can go, as a sender out of credits for
    ``sync_interval`` cycles does."""
    rng = random.Random(seed)
    tx, rx = LinkSender(fmt, BITS), LinkReceiver(fmt, BITS)
    faults = LinkFaults(FaultRates(drop, corrupt), seed, fmt.link(BITS))
    sent: dict[int, list[tuple[Header, list[int]]]] = {v: [] for v in range(N_VCS)}
    in_flight: dict[int, list[LinkFlit]] = {v: [] for v in range(N_VCS)}
    events: list[LinkEvent] = []
    credits_back = dict.fromkeys(range(N_VCS), 0)
    lost: set[tuple[int, int, int]] = set()
    intact = dict.fromkeys(range(N_VCS), False)

    def push(flit: LinkFlit) -> None:
        for e in rx.push(flit):
            events.append(e)
            if isinstance(e, Credit):
                tx.credit(e.vc, e.n)  # raises if more come back than were spent
                credits_back[e.vc] += e.n

    while True:
        ready = [
            v
            for v in range(N_VCS)
            if in_flight[v] or (len(sent[v]) < counts[v] and tx.can_start(v))
        ]
        if not ready:
            stalled = [v for v in range(N_VCS) if len(sent[v]) < counts[v]]
            if not stalled:
                break
            seen = faults.step(tx.sync_flit(rng.choice(stalled)))
            if seen is not None:
                push(seen)
            continue
        v = rng.choice(ready)
        if not in_flight[v]:
            i = len(sent[v])
            if v == VC_CTRL:
                header = Header(vc=rng.choice(DATA_VCS), kind=KIND_ACK, seq=i, src=1, dst=2)
                payload: list[int] = []
            else:
                header, payload = Header(vc=v, seq=i, src=4, dst=1), _payload(rng, fmt)
            sent[v].append((header, payload))
            intact[v] = len(sent[v]) == counts[v]
            in_flight[v] = tx.packet_flits(header, payload)
        index = (fmt.packet_flits + 1 if v != VC_CTRL else 1) - len(in_flight[v])
        flit = in_flight[v].pop(0)
        seen = flit if intact[v] else faults.step(flit)
        if seen is None:
            lost.add((v, len(sent[v]) - 1, index))
            continue
        push(seen)
    return _Run(sent, events, credits_back, tx, lost)


@given(
    seed=st.integers(0, 2**32 - 1),
    packet_flits=st.integers(1, 5),
    depth=st.integers(2, 4),
    drop=st.floats(0, 0.2),
    corrupt=st.floats(0, 0.2),
    counts=st.lists(st.integers(1, 12), min_size=N_VCS, max_size=N_VCS),
)
@settings(max_examples=300, deadline=None)
def test_random_faults_keep_one_packet_out_per_packet_in(
    seed: int, packet_flits: int, depth: int, drop: float, corrupt: float, counts: list[int]
) -> None:
    fmt = PacketFormat(packet_flits, data_depth=depth, ctrl_depth=depth)
    run = _run(seed, fmt, drop, corrupt, counts)
    for v in range(N_VCS):
        assert len(run.sent[v]) == counts[v]
        # Every credit spent came back: the buffers are empty at the end.
        assert run.credits_back[v] == counts[v]
        assert run.sender.credits[v] == (fmt.ctrl_depth if v == VC_CTRL else fmt.data_depth)
    for v in DATA_VCS:
        out = [e for e in run.events if isinstance(e, Packet) and e.vc == v]
        assert all(len(p.flits) == packet_flits for p in out)
        # The sent packets are numbered by seq: emitted ones come in order, each once.
        seqs = [p.header.seq for p in out]
        assert seqs == sorted(set(seqs))
        for p in out:
            header, payload = run.sent[v][p.header.seq]
            assert p.header == header
            data = [d for d, _ in p.flits]
            # Every flit carries its packet's pkt, so no other packet's flits can fill one.
            assert not p.ok or data == payload
        assert seqs[-1] == counts[v] - 1 and out[-1].ok  # the protected final packet
    controls = [e.header for e in run.events if isinstance(e, Control)]
    assert controls == [h for h, _ in run.sent[VC_CTRL] if h in controls]
    assert controls[-1] == run.sent[VC_CTRL][-1][0]


def test_random_faults_exercise_every_repair_rule() -> None:
    # The property above must not pass by never meeting a fault: over a few seeds, every
    # kind of drop and every padded packet occurs.
    fmt = PacketFormat(4, data_depth=3, ctrl_depth=3)
    events = [e for seed in range(20) for e in _run(seed, fmt, 0.15, 0.15, [12] * N_VCS).events]
    reasons = {e.reason for e in events if isinstance(e, Dropped)}
    assert reasons == {DROP_BAD_HEAD, DROP_ORPHAN, DROP_BAD_CONTROL}
    packets = [e for e in events if isinstance(e, Packet)]
    assert any(p.flits[-1] == (0, True) for p in packets)  # padded
    assert any(not p.ok and p.flits[-1][1] is False for p in packets)  # a bad body flit
    assert any(isinstance(e, Credit) and e.n > 1 for e in events)  # packets lost whole


@pytest.mark.parametrize("seed", range(5))
def test_no_faults_every_packet_comes_out_exactly(seed: int) -> None:
    run = _run(seed, FMT, 0.0, 0.0, [10, 7, 12, 9])
    for v in DATA_VCS:
        out = [e for e in run.events if isinstance(e, Packet) and e.vc == v]
        assert [(p.header, [d for d, _ in p.flits]) for p in out] == run.sent[v]
        assert all(p.ok for p in out)
    assert [e for e in run.events if isinstance(e, Dropped)] == []
    assert [e.header for e in run.events if isinstance(e, Control)] == [
        h for h, _ in run.sent[VC_CTRL]
    ]


def test_the_worst_window_comes_back_with_one_sync() -> None:
    """The pattern no later flit can repair: the first packet not yet counted is lost whole
    and every later one of the credit window loses its head and its tail (its middle is
    not the next ``pkt`` expected, so nothing counts it). Other VCs' flits do not help; one
    sync of the VC, sent once the sender has been out of credits and quiet for
    ``sync_interval`` cycles, returns the whole window."""
    fmt = PacketFormat(packet_flits=3, data_depth=4)
    tx, rx = LinkSender(fmt, BITS), LinkReceiver(fmt, BITS)
    events: list[LinkEvent] = []
    for seq in range(fmt.data_depth):
        flits = tx.packet_flits(Header(vc=VC_MP, seq=seq), [seq] * 3)
        kept = [] if seq == 0 else flits[1:-1]  # lost whole, then head and tail lost
        for now, flit in enumerate(kept, start=4 * seq):
            tx.sent(flit, now)
            events += rx.push(flit)
    assert not tx.can_start(VC_MP) and _credits(events)[VC_MP] == 0
    [ctrl] = tx.packet_flits(Header(vc=VC_MP, kind=KIND_ACK), [])
    assert rx.push(ctrl)[-1] == Credit(VC_CTRL, 1)  # other VCs do not help
    last = 4 * (fmt.data_depth - 1) + 1
    assert not tx.sync_due(VC_MP, last + sync_interval(fmt) - 1)
    assert tx.sync_due(VC_MP, last + sync_interval(fmt))
    sync = tx.sync_flit(VC_MP)
    assert (sync.sync, sync.vc, sync.pkt, sync.head, sync.last) == (True, VC_MP, 4, False, False)
    assert rx.push(sync) == [Credit(VC_MP, fmt.data_depth)]
    tx.credit(VC_MP, fmt.data_depth)
    # The VC goes on: the next packet is read whole, and counts nothing again.
    flits = tx.packet_flits(Header(vc=VC_MP, seq=4), [7] * 3)
    assert _push_all(rx, flits) == [
        Packet(VC_MP, Header(vc=VC_MP, seq=4), [(7, False)] * 3),
        Credit(VC_MP, 1),
    ]


def test_a_sync_ends_the_open_packet_and_costs_no_credit() -> None:
    """A sync after a packet that lost its tail ends that packet, padded; with nothing lost
    it returns no credit, and a sync is never itself a packet."""
    headers, payloads = _packets(1)
    [a] = _stream(headers, payloads)
    rx = LinkReceiver(FMT, BITS)
    assert _push_all(rx, a[:3]) == []
    sync = LINK.flit(0, vc=VC_DP, pkt=1, sync=True)
    p = payloads[0]
    assert rx.push(sync) == [
        Packet(VC_DP, headers[0], [(p[0], False), (p[1], False), (0, True), (0, True)]),
        Credit(VC_DP, 1),
    ]
    assert rx.push(sync) == []
    assert rx.push(LINK.flit(0, vc=VC_CTRL, pkt=0, sync=True)) == []


def test_syncs_wait_for_the_interval_and_for_a_whole_packet() -> None:
    """No sync while the sender holds a credit, while a packet of the VC is half sent, or
    before ``sync_interval`` quiet cycles."""
    fmt = PacketFormat(packet_flits=2, data_depth=1)
    tx = LinkSender(fmt, BITS)
    assert not tx.sync_due(VC_DP, 1000)  # a credit held
    flits = tx.packet_flits(Header(vc=VC_DP), [1, 2])
    tx.sent(flits[0], 10)
    assert not tx.sync_due(VC_DP, 10 + sync_interval(fmt))  # inside a packet
    tx.sent(flits[1], 11)
    tx.sent(flits[2], 12)
    assert not tx.sync_due(VC_DP, 11 + sync_interval(fmt))
    assert tx.sync_due(VC_DP, 12 + sync_interval(fmt))
    tx.sent(tx.sync_flit(VC_DP), 200)
    assert not tx.sync_due(VC_DP, 200 + sync_interval(fmt) - 1)
    assert tx.sync_due(VC_DP, 200 + sync_interval(fmt))


def test_a_headless_packets_body_never_fills_the_packet_before_it():
    """Packet 0 loses its last flit, packet 1 its head and first flit: packet 1's remaining
    flits would fill packet 0 exactly, but they carry packet 1's ``pkt``."""
    fmt = PacketFormat(packet_flits=4)
    tx, rx = LinkSender(fmt, BITS), LinkReceiver(fmt, BITS)
    p0 = tx.packet_flits(Header(vc=VC_DP, seq=0), [1, 2, 3, 4])
    p1 = tx.packet_flits(Header(vc=VC_DP, seq=1), [5, 6, 7, 8])
    events = []
    for flit in p0[:-1] + p1[2:]:
        events += rx.push(flit)
    out = [e for e in events if isinstance(e, Packet)]
    assert len(out) == 1 and not out[0].ok
    assert [d for d, _ in out[0].flits[:3]] == [1, 2, 3]
    assert sum(isinstance(e, Dropped) for e in events) == 3  # packet 1's orphan body flits
