"""Link framing and the reader's repair rules: exact without faults; under random drops and
corruption, one packet out per packet in, good packets exact, and every credit returned."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from fredfab.model.packet.faults import LinkFaults
from fredfab.model.packet.format import (
    DATA_VCS,
    KIND_ACK,
    KIND_NACK,
    N_VCS,
    STOMP,
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
)

BITS = 64  # CRC-8 0x07 detects every 1..3-bit error up to 127 bits (test_faults.py)
FMT = PacketFormat(packet_flits=4, data_depth=3, ctrl_depth=2)


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
    return replace(flit, crc=flit.crc ^ STOMP)


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
    assert all(f.crc_ok for f in flits)
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
    events = _push_all(LinkReceiver(FMT), _stream(headers, payloads)[0])
    assert events == [
        Packet(VC_DP, headers[0], [(d, False) for d in payloads[0]]),
        Credit(VC_DP, 1),
    ]


def test_packet_lost_whole_returns_its_credit_at_the_next_head() -> None:
    headers, payloads = _packets(4)
    a, _, _, d = _stream(headers, payloads)
    rx = LinkReceiver(FMT)
    events = _push_all(rx, a) + rx.push(d[0])
    assert events[-1] == Credit(VC_DP, 2)  # packets 1 and 2 were lost whole
    assert [e.header.seq for e in events if isinstance(e, Packet)] == [0]


def test_lost_head_drops_the_body_and_pkt_returns_the_credit() -> None:
    headers, payloads = _packets(2)
    a, b = _stream(headers, payloads)
    rx = LinkReceiver(FMT)
    events = _push_all(rx, a[1:] + b)
    assert events[:4] == [Dropped(VC_DP, DROP_ORPHAN)] * 4
    assert events[4] == Credit(VC_DP, 1)
    intact = Packet(VC_DP, headers[1], [(x, False) for x in payloads[1]])
    assert events[5:] == [intact, Credit(VC_DP, 1)]


def test_early_last_pads_the_packet_bad() -> None:
    headers, payloads = _packets(1)
    [a] = _stream(headers, payloads)
    events = _push_all(LinkReceiver(FMT), [a[0], a[1], a[4]])
    p = payloads[0]
    assert events == [
        Packet(VC_DP, headers[0], [(p[0], False), (p[3], False), (0, True), (0, True)]),
        Credit(VC_DP, 1),
    ]


def test_head_met_early_ends_the_packet_then_starts_its_own() -> None:
    headers, payloads = _packets(2)
    a, b = _stream(headers, payloads)
    events = _push_all(LinkReceiver(FMT), a[:3] + b)
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
    [packet, credit] = _push_all(LinkReceiver(FMT), a)
    assert isinstance(packet, Packet) and credit == Credit(VC_DP, 1)
    assert packet.flits[1] == (payloads[0][1] ^ 1, True)
    assert [bad for _, bad in packet.flits] == [False, True, False, False] and not packet.ok


def test_bad_head_drops_its_packet_but_its_pkt_counts() -> None:
    headers, payloads = _packets(3)
    a, b, c = _stream(headers, payloads)
    rx = LinkReceiver(FMT)
    events = _push_all(rx, [_bad_crc(a[0]), *a[1:], *c])
    # Packet 0 is dropped when it ends; the gap before packet 2 is packet 1 alone.
    assert events[:3] == [Dropped(VC_DP, DROP_BAD_HEAD), Credit(VC_DP, 1), Credit(VC_DP, 1)]
    assert [e.header.seq for e in events if isinstance(e, Packet)] == [2]


def test_flit_past_the_count_without_last_marks_the_final_flit_bad() -> None:
    headers, payloads = _packets(1)
    [a] = _stream(headers, payloads)
    a[4] = replace(a[4], last=False)
    extra = replace(a[4], data=0)
    events = _push_all(LinkReceiver(FMT), [*a, extra])
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
    events = _push_all(LinkReceiver(FMT), [f0, _bad_crc(f1), f3])  # f2 lost whole
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

    Two kinds of packet cross intact: each VC's final one, so that its end is known, and one
    that spends the sender's last credit. The reader returns the credits of packets lost
    whole only at the next head of their VC, and ends a packet whose tail was lost only then,
    so a window lost entirely would leave the sender without credits for good
    (test_a_window_lost_whole_stalls_the_vc)."""
    rng = random.Random(seed)
    tx, rx = LinkSender(fmt, BITS), LinkReceiver(fmt)
    faults = LinkFaults(drop, corrupt, seed=seed, data_bits=BITS)
    sent: dict[int, list[tuple[Header, list[int]]]] = {v: [] for v in range(N_VCS)}
    in_flight: dict[int, list[LinkFlit]] = {v: [] for v in range(N_VCS)}
    events: list[LinkEvent] = []
    credits_back = dict.fromkeys(range(N_VCS), 0)
    lost: set[tuple[int, int, int]] = set()
    intact = dict.fromkeys(range(N_VCS), False)
    while True:
        ready = [
            v
            for v in range(N_VCS)
            if in_flight[v] or (len(sent[v]) < counts[v] and tx.can_start(v))
        ]
        if not ready:
            break
        v = rng.choice(ready)
        if not in_flight[v]:
            i = len(sent[v])
            if v == VC_CTRL:
                header = Header(vc=rng.choice(DATA_VCS), kind=KIND_ACK, seq=i, src=1, dst=2)
                payload: list[int] = []
            else:
                header, payload = Header(vc=v, seq=i, src=4, dst=1), _payload(rng, fmt)
            sent[v].append((header, payload))
            intact[v] = len(sent[v]) == counts[v] or tx.credits[v] == 1
            in_flight[v] = tx.packet_flits(header, payload)
        index = (fmt.packet_flits + 1 if v != VC_CTRL else 1) - len(in_flight[v])
        flit = in_flight[v].pop(0)
        seen = flit if intact[v] else faults.apply(flit)
        if seen is None:
            lost.add((v, len(sent[v]) - 1, index))
            continue
        for e in rx.push(seen):
            events.append(e)
            if isinstance(e, Credit):
                tx.credit(e.vc, e.n)  # raises if more come back than were spent
                credits_back[e.vc] += e.n
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


def test_a_window_lost_whole_stalls_the_vc() -> None:
    # The rules return a lost packet's credit at the next head of its VC: when every packet
    # the credits allow is lost whole, no head can follow, and the VC waits for good.
    fmt = PacketFormat(packet_flits=2, data_depth=2)
    tx, rx = LinkSender(fmt, BITS), LinkReceiver(fmt)
    for seq in range(fmt.data_depth):
        tx.packet_flits(Header(vc=VC_MP, seq=seq), [0, 0])  # all flits lost
    assert not tx.can_start(VC_MP)
    [ctrl] = tx.packet_flits(Header(vc=VC_MP, kind=KIND_ACK), [])
    assert rx.push(ctrl)[-1] == Credit(VC_CTRL, 1)  # other VCs do not help
    assert not tx.can_start(VC_MP)


def test_a_headless_packets_body_never_fills_the_packet_before_it():
    """Packet 0 loses its last flit, packet 1 its head and first flit: packet 1's remaining
    flits would fill packet 0 exactly, but they carry packet 1's ``pkt``."""
    fmt = PacketFormat(packet_flits=4)
    tx, rx = LinkSender(fmt, BITS), LinkReceiver(fmt)
    p0 = tx.packet_flits(Header(vc=VC_DP, seq=0), [1, 2, 3, 4])
    p1 = tx.packet_flits(Header(vc=VC_DP, seq=1), [5, 6, 7, 8])
    events = []
    for flit in p0[:-1] + p1[2:]:
        events += rx.push(flit)
    out = [e for e in events if isinstance(e, Packet)]
    assert len(out) == 1 and not out[0].ok
    assert [d for d, _ in out[0].flits[:3]] == [1, 2, 3]
    assert sum(isinstance(e, Dropped) for e in events) == 3  # packet 1's orphan body flits
