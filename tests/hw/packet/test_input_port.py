"""The packet-mode input port (hw/packet/input_port.py) in the Amaranth simulator: clean
traffic bit-exact under random VC interleaving, commits, discards and backpressure; one
directed test per repair rule; credits, overflow and throughput; syncs; and random drops
and corruption, after which every committed packet is still exactly one packet, an un-bad
one is what was sent, and every credit comes back. Link-level retry is off here: these are
the packet layer's rules for what gets past the link (test_link_retry.py tests the retry,
tests/hw/packet/test_packet_switch.py both together)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from amaranth.back import verilog
from amaranth.hdl import Const, Value

from fredfab.hw.packet.input_port import InputPort
from fredfab.hw.packet.params import PacketParams
from fredfab.hw.params import SwitchParams
from fredfab.model.packet.format import (
    DATA_VCS,
    VC_CTRL,
    VC_DP,
    VC_MP,
    VC_PP,
    Header,
    LinkFlit,
    PacketFormat,
)
from fredfab.model.packet.link import tail_timeout
from tests.hw.adder_harness import lint_verilog
from tests.hw.packet.port_bench import (
    LINK,
    Controller,
    CreditSender,
    OutFlit,
    Packet,
    Record,
    ScriptSender,
    WindowSender,
    corrupt,
    ctrl_packet,
    data_packet,
    link_flits,
    run_port,
)

SWITCH = SwitchParams(ports=4, m=2, lanes=4, dtype="int16")  # 64-bit flits
PARAMS = PacketParams(
    SWITCH, PacketFormat(packet_flits=4, data_depth=3, ctrl_depth=2, link_retry=False)
)
PF = PARAMS.fmt.packet_flits
#: The directed tests' format (control FIFO of 2), a shallow one (of 1), and the default
#: packet size (of 3): each FIFO depth that is built differently.
VARIANTS = [
    PARAMS,
    PacketParams(
        SWITCH, PacketFormat(packet_flits=2, data_depth=2, ctrl_depth=1, link_retry=False)
    ),
    PacketParams(SWITCH, PacketFormat(ctrl_depth=3, link_retry=False)),
]
RANDOM_CASES = [(params, seed) for params in VARIANTS for seed in range(3)]


def _id(value) -> str:
    return value.name if isinstance(value, PacketParams) else str(value)


def clean_out(packet: Packet) -> list[OutFlit]:
    """What ``o`` carries for an intact committed packet."""
    h, n = packet.header, len(packet.payload)
    return [OutFlit(w, int(k == n - 1), 0, h.seq, h.src) for k, w in enumerate(packet.payload)]


def packets(rng, vc: int, n: int, params: PacketParams = PARAMS) -> list[Packet]:
    if vc == VC_CTRL:
        return [ctrl_packet(rng, seq) for seq in range(n)]
    return [data_packet(rng, params, vc, seq) for seq in range(n)]


def committed(rec: Record) -> list[tuple[int, Header]]:
    return [(vc, h) for vc, h, what in rec.decided if what == "commit"]


def commit_all() -> Controller:
    return Controller(np.random.default_rng(0), p_commit=1.0)


# -- clean traffic ----------------------------------------------------------------------


@pytest.mark.parametrize("params,seed", RANDOM_CASES, ids=_id)
def test_clean_traffic_is_bit_exact(params, seed):
    """Random interleaving of all four VCs under credits, random commits and discards,
    backpressure on ``o`` and ``ctrl``: every packet's head shows once, in order; every
    committed packet comes out exactly as sent, in commit order; every control packet is
    offered; every credit returns."""
    rng = np.random.default_rng(seed)
    queues = {vc: packets(rng, vc, 16, params) for vc in (*DATA_VCS, VC_CTRL)}
    sender = CreditSender(params, queues, rng.spawn(1)[0], idle=0.2)
    control = Controller(rng.spawn(1)[0], p_commit=0.5, p_discard=0.2)
    rec = run_port(params, sender, control, seed=seed, stall=0.3, ctrl_stall=0.3)

    assert sender.done
    for vc in DATA_VCS:
        assert [h for v, h, _ in rec.decided if v == vc] == [p.header for p in queues[vc]]
    by_key = {(p.vc, p.header.seq): p for q in queues.values() for p in q}
    want = [f for vc, h in committed(rec) for f in clean_out(by_key[vc, h.seq])]
    assert rec.out == want
    assert 0 < len(committed(rec)) < 3 * 16  # both commits and discards happened
    assert rec.ctrl == [p.header for p in queues[VC_CTRL]]
    for vc, q in queues.items():
        assert rec.credits_of(vc) == len(q), f"vc {vc}"
    assert not rec.overflow


def test_one_packet_per_packet_flits_plus_one_cycles():
    """A VC committed at once, with a sender at full rate and no backpressure, moves one
    packet every ``packet_flits + 1`` cycles (the link rate); the head drops after its
    commit and the next one shows as soon as it is read."""
    for params in (PARAMS, PacketParams(SWITCH, PacketFormat(link_retry=False))):
        pf = params.fmt.packet_flits
        rng = np.random.default_rng(1)
        queue = packets(rng, VC_PP, 12, params)
        rec = run_port(params, CreditSender(params, {VC_PP: queue}, rng), commit_all())
        assert rec.out == [f for p in queue for f in clean_out(p)]
        starts = rec.out_cycles[::pf]
        assert np.diff(starts[2:]).tolist() == [pf + 1] * (len(queue) - 3)
        assert np.diff([c for c, _ in rec.commits]).min() == pf + 1


def test_busy_from_the_commit_until_the_last_flit_leaves():
    (a,) = _two(VC_DP, 1)
    rec = run_port(PARAMS, ScriptSender(link_flits(a, 0)), commit_all(), stall=0.5)
    assert rec.out == clean_out(a)
    ((commit, _),) = rec.commits
    last = rec.out_cycles[-1]
    assert rec.busy == [False] * (commit + 1) + [True] * (last - commit) + [False] * (
        rec.cycles - last - 1
    )
    assert VC_DP in rec.shown[commit] and VC_DP not in rec.shown[commit + 1]


# -- directed repair rules --------------------------------------------------------------


def _two(vc: int = VC_MP, n: int = 2) -> list[Packet]:
    return packets(np.random.default_rng(7), vc, n)


def _run_script(flits: list[LinkFlit | None], control: Controller | None = None) -> Record:
    return run_port(PARAMS, ScriptSender(flits), control or commit_all())


def test_pkt_gap_returns_the_credits_of_packets_lost_whole():
    a, b, c = _two(VC_DP, 3)
    # pkt 0, then pkt 3: two packets were lost whole in between; then pkt 4, no gap.
    rec = _run_script(link_flits(a, 0) + link_flits(b, 3) + link_flits(c, 4))
    assert rec.out == clean_out(a) + clean_out(b) + clean_out(c)
    assert rec.credits_of(VC_DP) == 2 + 3
    assert rec.credits_of(VC_MP) == rec.credits_of(VC_PP) == 0
    cycles = [c for c, vc in rec.credits if vc == VC_DP]
    assert len(set(cycles)) == len(cycles)  # one pulse per cycle


def test_early_head_ends_the_packet_padded_bad():
    a, b = _two()
    rec = _run_script(link_flits(a, 0)[:-2] + link_flits(b, 1))
    pad = [OutFlit(0, 0, 1, a.header.seq, a.header.src)] * 2
    want_a = clean_out(a)[: PF - 2] + pad
    want_a[-1] = OutFlit(0, 1, 1, a.header.seq, a.header.src)
    assert rec.out == want_a + clean_out(b)
    assert rec.credits_of(VC_MP) == 2


def test_early_last_ends_the_packet_padded_bad():
    """A's payload flit 1 is lost, so its last flit comes one slot early: that ends A at
    once (nothing after it is needed), and B's body flits after B's lost head stay
    orphans rather than filling A."""
    a, b, c = _two(VC_MP, 3)
    flits = link_flits(a, 0)
    del flits[2]
    h = a.header
    taken = [a.payload[0], *a.payload[2:]]
    want_a = [OutFlit(w, 0, 0, h.seq, h.src) for w in taken] + [OutFlit(0, 1, 1, h.seq, h.src)]
    alone = _run_script(flits)
    assert alone.out == want_a
    assert alone.credits_of(VC_MP) == 1
    rec = _run_script(flits + link_flits(b, 1)[1:] + link_flits(c, 2))
    assert rec.out == want_a + clean_out(c)
    assert rec.credits_of(VC_MP) == 3


def test_over_long_packet_marks_its_final_flit_bad():
    """A's sender framed one body flit too many (``last`` on the extra one): the final slot
    holds a flit without ``last``, marked bad, and the extra flit is an orphan."""
    a, b = _two()
    flits = link_flits(a, 0)
    f = flits[-1]
    flits[-1] = LinkFlit(f.data, f.head, False, f.vc, f.pkt, f.crc)
    extra = 0x1234_5678_9ABC
    flits.append(LINK.flit(extra, last=True, vc=f.vc, pkt=f.pkt))
    rec = _run_script(flits + link_flits(b, 1))
    h = a.header
    want_a = clean_out(a)[:-1] + [OutFlit(a.payload[-1], 1, 1, h.seq, h.src)]
    assert rec.out == want_a + clean_out(b)
    assert rec.credits_of(VC_MP) == 2


@pytest.mark.parametrize("kept", [PF - 1, 0])
def test_a_body_flit_of_another_packet_ends_the_packet_padded_bad(kept):
    """A keeps ``kept`` of its body flits, then B's head is lost: B's first body flit
    carries B's ``pkt``, so it ends A (padded) instead of filling it, and B's body flits
    are orphans; C is whole."""
    a, b, c = _two(VC_MP, 3)
    flits = link_flits(a, 0)[: 1 + kept] + link_flits(b, 1)[1:] + link_flits(c, 2)
    rec = _run_script(flits)
    h = a.header
    pads = [OutFlit(0, int(k == PF - 1), 1, h.seq, h.src) for k in range(kept, PF)]
    assert rec.out == clean_out(a)[:kept] + pads + clean_out(c)
    assert [hh for _, hh, _ in rec.decided] == [a.header, c.header]
    assert rec.credits_of(VC_MP) == 3  # A, C, and B through C's pkt gap


def test_orphan_body_flits_are_dropped():
    a, b = _two(VC_PP)
    rec = _run_script(link_flits(a, 0)[1:] + link_flits(b, 1))
    assert rec.out == clean_out(b)
    assert [h for _, h, _ in rec.decided] == [b.header]
    assert rec.credits_of(VC_PP) == 2


@pytest.mark.parametrize(
    "params", [PARAMS, PacketParams(SWITCH, PacketFormat(2, 1, link_retry=False))], ids=_id
)
def test_every_head_of_a_credit_window_lost_the_credits_still_come_back(params):
    """The sender spends every credit of DP on packets whose heads are all lost. Each
    headless packet's first body flit carries the next ``pkt``: it is counted, dropped, and
    its credit comes back once its ``last`` has been read (never before), so the sender can
    send D (and D's head counts no packet twice). Counted only by a later head, as before,
    these packets' credits would never come back: no head could follow."""
    depth = params.fmt.data_depth
    *window, d = packets(np.random.default_rng(8), VC_DP, depth + 1, params)
    script = [(VC_DP, link_flits(p, k)[1:]) for k, p in enumerate(window)]
    sender = WindowSender([*script, (VC_DP, link_flits(d, depth))])
    rec = run_port(params, sender, commit_all())
    assert sender.done
    assert rec.out == clean_out(d)
    assert [h for _, h, _ in rec.decided] == [d.header]
    assert rec.credits_of(VC_DP) == depth + 1
    lasts = [c for c, f in rec.rx if f.last][:depth]
    assert all(credit > last for (credit, _), last in zip(rec.credits, lasts, strict=False))


def test_a_packet_without_head_or_tail_frees_a_one_packet_window():
    """With one credit, A loses its head and its last flit: its body is counted as A, and
    the timeout ends it, so its credit comes back and B goes out."""
    params = PacketParams(SWITCH, PacketFormat(packet_flits=2, data_depth=1, link_retry=False))
    a, b = packets(np.random.default_rng(9), VC_PP, 2, params)
    sender = WindowSender([(VC_PP, link_flits(a, 0)[1:-1]), (VC_PP, link_flits(b, 1))])
    rec = run_port(params, sender, commit_all())
    assert sender.done
    assert rec.out == clean_out(b) and [h for _, h, _ in rec.decided] == [b.header]
    assert rec.credits_of(VC_PP) == 2
    assert rec.credits[0][0] > rec.rx[0][0] + tail_timeout(params.fmt)


def _late_tail(idle: int) -> tuple[Record, Packet, Packet, int]:
    """A (on MP) sends its head and two payload flits, goes quiet for ``idle`` cycles, then
    sends the rest; B follows at once."""
    a, b = _two()
    flits = link_flits(a, 0)
    rec = _run_script(flits[:3] + [None] * idle + flits[3:] + link_flits(b, 1))
    return rec, a, b, 2  # the cycle of A's last flit before the silence


@pytest.mark.parametrize("cut", [False, True])
def test_the_timeout_is_tail_timeout_quiet_cycles(cut):
    """``tail_timeout - 1`` quiet cycles inside a packet keep it whole; ``tail_timeout``
    end it where the silence began, and its late flits are dropped."""
    rec, a, b, _ = _late_tail(tail_timeout(PARAMS.fmt) - 1 + cut)
    h = a.header
    pads = [OutFlit(0, int(k == PF - 1), 1, h.seq, h.src) for k in range(2, PF)]
    assert rec.out == (clean_out(a)[:2] + pads if cut else clean_out(a)) + clean_out(b)
    assert rec.credits_of(VC_MP) == 2


def test_a_lost_tail_releases_the_port_after_the_timeout():
    """A's tail comes only after ``tail_timeout`` quiet cycles: A, committed at once, ends
    padded bad after the timeout (``busy`` falls, its credit comes back), and its late flits
    are dropped: they neither fill nor end B, nor count as a packet."""
    timeout = tail_timeout(PARAMS.fmt)
    rec, a, b, last = _late_tail(2 * timeout)
    h = a.header
    pads = [OutFlit(0, int(k == PF - 1), 1, h.seq, h.src) for k in range(2, PF)]
    assert rec.out == clean_out(a)[:2] + pads + clean_out(b)
    assert [hh for _, hh, _ in rec.decided] == [a.header, b.header]
    assert rec.credits_of(VC_MP) == 2 and not rec.overflow
    late = min(c for c, f in rec.rx if c > last)
    # A's padding leaves, busy falls and A's credit returns a few cycles after the timeout,
    # long before its late flits arrive: nothing waited for them.
    released = rec.busy.index(False, rec.commits[0][0] + 1)
    assert last + timeout < released <= last + timeout + 6 < late
    assert rec.out_cycles[PF - 1] < released
    assert last + timeout < rec.credits[0][0] < released


def test_a_lost_tail_ends_a_packet_committed_after_the_timeout():
    """The timeout counts from the link, not from the commit: A, committed only once its
    VC has long been quiet and its late flits have come, still ends where the silence
    began, and B is whole."""
    timeout = tail_timeout(PARAMS.fmt)
    a, b = _two()
    flits = link_flits(a, 0)

    class Late(Controller):
        def decide(self, shown, busy):
            self.cycle = getattr(self, "cycle", -1) + 1
            hold = self.cycle <= 3 * timeout
            return super().decide({vc: s and not hold for vc, s in shown.items()}, busy)

    late = Late(np.random.default_rng(0))
    rec = _run_script(flits[:3] + [None] * timeout + flits[3:] + link_flits(b, 1), late)
    h = a.header
    pads = [OutFlit(0, int(k == PF - 1), 1, h.seq, h.src) for k in range(2, PF)]
    assert rec.out == clean_out(a)[:2] + pads + clean_out(b)
    assert rec.commits[0][0] > 3 * timeout
    assert rec.credits_of(VC_MP) == 2


def test_bad_crc_head_drops_its_packet_and_returns_its_credit():
    a, b = _two()
    flits = link_flits(a, 0)
    flits[0] = corrupt(flits[0], 5)
    alone = _run_script(flits)
    assert alone.out == [] and alone.decided == []
    assert alone.credits_of(VC_MP) == 1  # at once, not at the next head
    # Its pkt still counts: the next head returns no second credit for it.
    rec = _run_script(flits + link_flits(b, 1))
    assert rec.out == clean_out(b)
    assert rec.credits_of(VC_MP) == 2


def test_bad_crc_body_flit_is_forwarded_marked_bad():
    """A flipped bit, and a stomped CRC (an upstream switch forwarding a flit it knew was
    bad): both go on as received, marked bad."""
    (a,) = _two(VC_DP, 1)
    flits = link_flits(a, 0)
    flits[3] = corrupt(flits[3], 63)
    f = flits[4]
    flits[4] = replace(f, bad=True)
    rec = _run_script(flits)
    h = a.header
    want = clean_out(a)
    want[2] = OutFlit(a.payload[2] ^ (1 << 63), 0, 1, h.seq, h.src)
    want[3] = OutFlit(a.payload[3], 1, 1, h.seq, h.src)
    assert rec.out == want


def test_discarded_packets_leave_nothing_and_return_their_credits():
    a, b = _two(VC_PP)
    discard_all = Controller(np.random.default_rng(0), p_commit=0.0, p_discard=1.0)
    rec = _run_script(link_flits(a, 0) + [None] * 3 + link_flits(b, 1), discard_all)
    assert rec.out == []
    assert rec.decided == [(VC_PP, a.header, "discard"), (VC_PP, b.header, "discard")]
    assert rec.credits_of(VC_PP) == 2


def test_control_packets_good_offered_bad_dropped_each_one_credit():
    rng = np.random.default_rng(3)
    a, b, c, d = packets(rng, VC_CTRL, 4)
    bad_b = corrupt(link_flits(b, 1)[0], 17)
    # c's pkt is 3 although it is the third flit sent: one control packet was lost whole.
    flits = link_flits(a, 0) + [bad_b] + link_flits(c, 3) + link_flits(d, 4)
    rec = run_port(PARAMS, ScriptSender(flits), commit_all())
    assert rec.ctrl == [a.header, c.header, d.header]
    assert rec.credits_of(VC_CTRL) == 5
    assert rec.out == [] and not rec.overflow


def test_a_data_head_carrying_last_is_a_packet_of_padding():
    """No conforming sender makes one (a data packet has ``packet_flits >= 1`` payload
    flits); the port keeps one packet in, one packet out all the same."""
    a, b = _two()
    head = link_flits(a, 0)[0]
    lone = LinkFlit(head.data, True, True, head.vc, head.pkt, head.crc)
    rec = _run_script([lone, *link_flits(b, 1)])
    h = a.header
    assert rec.out == [OutFlit(0, int(k == PF - 1), 1, h.seq, h.src) for k in range(PF)] + (
        clean_out(b)
    )
    assert rec.credits_of(VC_MP) == 2


# -- credits and overflow ---------------------------------------------------------------


@pytest.mark.parametrize("params", VARIANTS, ids=_id)
def test_a_full_credit_window_does_not_overflow(params):
    """Nothing is committed and no control packet is taken: the sender spends every
    credit on every VC at full rate, and all of it fits."""
    rng = np.random.default_rng(4)
    fmt = params.fmt
    queues = {vc: packets(rng, vc, 6, params) for vc in (*DATA_VCS, VC_CTRL)}
    sender = CreditSender(params, queues, rng)
    never = Controller(rng, p_commit=0.0)
    rec = run_port(params, sender, never, ctrl_stall=1.0, max_cycles=200)
    left = [6 - fmt.data_depth] * len(DATA_VCS) + [6 - fmt.ctrl_depth]
    assert [len(sender.queues[vc]) for vc in (*DATA_VCS, VC_CTRL)] == left  # out of credits
    assert not rec.overflow


@pytest.mark.parametrize("params", VARIANTS, ids=_id)
@pytest.mark.parametrize("vc", [VC_MP, VC_CTRL])
def test_a_flit_beyond_the_credits_overflows(params, vc):
    """The FIFO holds exactly the credits' worth of flits and the spare entry of a sync
    (plus, on a data VC, the first head, which leaves it for ``head[vc]``); one flit more
    raises ``overflow``."""
    fmt = params.fmt
    depth = fmt.ctrl_depth if vc == VC_CTRL else fmt.data_depth
    queue = packets(np.random.default_rng(5), vc, depth + 2, params)
    flits = [f for k, p in enumerate(queue) for f in link_flits(p, k)]
    room = depth + 1 if vc == VC_CTRL else depth * fmt.data_packet_flits + 2
    for n, overflow in ((room, False), (room + 1, True)):
        never = Controller(np.random.default_rng(0), p_commit=0.0)
        rec = run_port(params, ScriptSender(flits[:n]), never, ctrl_stall=1.0, max_cycles=80)
        assert rec.overflow == overflow, f"{n} flits"


# -- random faults ----------------------------------------------------------------------


@pytest.mark.parametrize("params,seed", RANDOM_CASES, ids=_id)
def test_random_drops_and_corruption_keep_packets_whole(params, seed):
    pf = params.fmt.packet_flits
    rng = np.random.default_rng(100 + seed)
    queues = {vc: packets(rng, vc, 40, params) for vc in (*DATA_VCS, VC_CTRL)}
    sender = CreditSender(
        params, queues, rng.spawn(1)[0], idle=0.2, drop=0.05, flip=0.05, late=0.03
    )
    control = Controller(rng.spawn(1)[0], p_commit=0.6, p_discard=0.15)
    rec = run_port(params, sender, control, seed=seed, stall=0.3, ctrl_stall=0.3)
    assert sender.done
    sent = {(s.packet.vc, s.packet.header.seq): s for s in sender.sent}
    assert any(not s.intact for s in sent.values())

    # Every committed packet yields exactly packet_flits flits, in commit order.
    commits = committed(rec)
    assert len(rec.out) == pf * len(commits)
    for (vc, h), out in zip(commits, rec.packets(pf), strict=True):
        assert [f.last for f in out] == [0] * (pf - 1) + [1]
        assert {(f.seq, f.src) for f in out} == {(h.seq, h.src)}
        if not any(f.bad for f in out):  # an un-bad packet is what was sent
            assert [f.data for f in out] == list(sent[vc, h.seq].packet.payload)
        if sent[vc, h.seq].intact:  # and an intact one is never damaged
            assert out == clean_out(sent[vc, h.seq].packet)

    # Heads shown are real headers, each once, in order; every intact packet's shows.
    for vc in DATA_VCS:
        shown = [h for v, h, _ in rec.decided if v == vc]
        assert all(sent[vc, h.seq].packet.header == h for h in shown)
        assert [h.seq for h in shown] == sorted({h.seq for h in shown})
        intact = [s.packet.header for s in sender.sent if s.packet.vc == vc and s.intact]
        assert set(intact) <= set(shown)

    assert rec.ctrl == [s.packet.header for s in sender.sent if s.packet.vc == VC_CTRL and s.intact]
    # Each VC's stream ends with an intact packet: every credit came back.
    for vc, q in queues.items():
        assert rec.credits_of(vc) == len(q), f"vc {vc}"
    assert not rec.overflow


# -- Verilog ----------------------------------------------------------------------------


@pytest.mark.needs("verilator")
@pytest.mark.parametrize(
    "params",
    [
        *VARIANTS,
        PacketParams(SWITCH, PacketFormat(packet_flits=1, data_depth=1, ctrl_depth=4)),
    ],
    ids=_id,
)
def test_verilog_converts_and_lints_clean(params, tmp_path):
    """verilator --lint-only -Wall finds nothing beyond the project's waivers. ``rx`` is
    always ready, a constant that cannot be a Verilog port, so the ports are listed."""
    dut = InputPort(params)
    ports = [Value.cast(v) for _, _, v in dut.signature.flatten(dut) if not isinstance(v, Const)]
    text = verilog.convert(dut, name="input_port", ports=ports)
    assert "rx__ready" not in text and "module input_port(" in text
    problems = lint_verilog(text, tmp_path)
    assert not problems, "\n".join(problems)


# -- against the reference reader -------------------------------------------------------


@pytest.mark.parametrize("params,seed", RANDOM_CASES, ids=_id)
def test_same_packets_and_credits_as_the_reference_reader(params, seed):
    """model/packet/link.py's ``LinkReceiver`` reading the same flits finds, per VC, the
    same packets (header, data, bad flags), the same control packets and the same credit
    counts; every head is committed, so every packet comes out."""
    from fredfab.model.packet import link

    rng = np.random.default_rng(1000 + seed)
    queues = {vc: packets(rng, vc, 30, params) for vc in (*DATA_VCS, VC_CTRL)}
    sender = CreditSender(
        params, queues, rng.spawn(1)[0], idle=0.2, drop=0.08, flip=0.08, late=0.03
    )
    rec = run_port(params, sender, commit_all(), seed=seed, stall=0.3, ctrl_stall=0.3)

    reader = link.LinkReceiver(params.fmt, params.switch.data_width)
    # The same flits in the same cycles, so that the tail timeout ends the same packets.
    events, arrivals = [], dict(rec.rx)
    for cycle in range(rec.cycles):
        events += reader.tick(cycle)
        if cycle in arrivals:
            events += reader.push(arrivals[cycle])
    assert any(isinstance(e, link.Dropped) for e in events)
    pairs = list(zip(committed(rec), rec.packets(params.fmt.packet_flits), strict=True))
    for vc in DATA_VCS:
        want = [(e.header, e.flits) for e in events if isinstance(e, link.Packet) and e.vc == vc]
        got = [(h, [(f.data, bool(f.bad)) for f in out]) for (v, h), out in pairs if v == vc]
        assert got == want, f"vc {vc}"
    assert rec.ctrl == [e.header for e in events if isinstance(e, link.Control)]
    for vc in (*DATA_VCS, VC_CTRL):
        n = sum(e.n for e in events if isinstance(e, link.Credit) and e.vc == vc)
        assert rec.credits_of(vc) == n, f"vc {vc}"
