"""The packet control unit alone, in the Amaranth simulator: the testbench plays the input
ports (queues of headers per VC, busy for a while after each commit) and checks which packets
start, when, and where control packets go."""

from __future__ import annotations

import numpy as np
from amaranth.sim import Simulator

from fredfab.hw.packet.control import PacketControl
from fredfab.hw.packet.params import PacketParams
from fredfab.hw.params import SwitchParams
from fredfab.model.packet.flow_tables import inputs_of_input, inputs_of_output, shift_flows
from fredfab.model.packet.format import (
    KIND_ACK,
    KIND_NACK,
    KIND_REWIND,
    VC_DP,
    VC_MP,
    VC_PP,
    Header,
)
from fredfab.model.packet.slot_check import with_check
from fredfab.model.switch.flow import Flow
from fredfab.model.switch.router import route

P = 4
PARAMS = PacketParams(SwitchParams(P, lanes=4, dtype="int16", slots=4))
STREAM_CYCLES = 5  # how long a committed packet keeps its port busy


class Ports:
    """Header queues per (port, VC) and a record of what the control unit did."""

    def __init__(self) -> None:
        self.queues = {(p, v): [] for p in range(P) for v in range(3)}
        self.commits: list[tuple[int, int, int, Header]] = []  # (cycle, port, vc, header)
        self.discards: list[tuple[int, int, Header]] = []
        self.busy_until = [0] * P
        self.active: list[int] = []  # the interconnect's configuration at each commit
        #: per output port, bit v: it can take a packet of VC v (all, unless a test says)
        self.out_credit = [0b111] * P
        self.reserved: list[tuple[int, int, int]] = []  # (cycle, output port, reserve bits)


def _run(setup_slots, ports: Ports, cycles: int, ctrl=(), on_cycle=None, rng=None, corrupt=()):
    """Load ``setup_slots`` ({slot: flows}; a slot in ``corrupt`` gets a wrong check word),
    then run ``cycles`` cycles; return the phase changes and the control packets out."""
    dut = PacketControl(PARAMS)
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    phases: list[tuple[int, int, int]] = []  # (cycle, vc, index) when a phase starts
    ctrl_out: list[tuple[int, int]] = []  # (cycle of delivery, output port, header)

    async def tb(ctx):
        # Configuration: each slot's words and flow-table rows.
        width = PARAMS.switch.word_width
        for slot, flows in setup_slots.items():
            words = with_check(route(flows, P, PARAMS.switch.m).config.to_words(width), width)
            if slot in corrupt:
                words[-1] ^= 1
            for addr, word in enumerate(words):
                ctx.set(dut.cfg.valid, 1)
                ctx.set(dut.cfg.payload, {"slot": slot, "addr": addr, "data": word})
                await ctx.tick()
            ctx.set(dut.cfg.valid, 0)
            for table, masks in ((0, inputs_of_input(flows, P)), (1, inputs_of_output(flows, P))):
                for port, mask in enumerate(masks):
                    ctx.set(dut.flows.valid, 1)
                    ctx.set(
                        dut.flows.payload,
                        {"table": table, "slot": slot, "port": port, "mask": mask},
                    )
                    await ctx.tick()
            ctx.set(dut.flows.valid, 0)
        pending_ctrl = list(ctrl)
        was_vc = None
        for cycle in range(cycles):
            if on_cycle:
                on_cycle(cycle, ports)
            for p in range(P):
                for v in range(3):
                    # Like an input port: the next head shows once the packet streaming
                    # ahead of it has left the port's buffer (its last cycle of busy).
                    q = ports.queues[(p, v)] if ports.busy_until[p] <= cycle + 1 else []
                    ctx.set(dut.head[p][v].valid, bool(q))
                    if q:
                        ctx.set(dut.head[p][v].header, q[0].__dict__)
            ctx.set(dut.in_busy, sum(1 << p for p in range(P) if ports.busy_until[p] > cycle))
            for q in range(P):
                ctx.set(dut.out_credit[q], ports.out_credit[q])
            for p in range(P):
                ctx.set(dut.ctrl_out[p].ready, 1)
            c_now = [c for c in pending_ctrl if c[0] <= cycle]
            for p in range(P):
                mine = [c for c in c_now if c[1] == p]
                ctx.set(dut.ctrl_in[p].valid, bool(mine))
                if mine:
                    ctx.set(dut.ctrl_in[p].payload, mine[0][2].__dict__)
            # Sample the combinational decisions of this cycle.
            for p in range(P):
                for v in range(3):
                    if ctx.get(dut.commit[p][v]):
                        assert ctx.get(dut.reconfiguring) == 0
                        ports.commits.append((cycle, p, v, ports.queues[(p, v)].pop(0)))
                        ports.active.append(ctx.get(dut.active).as_bits())
                        ports.busy_until[p] = cycle + 1 + STREAM_CYCLES
                    if ctx.get(dut.discard[p][v]):
                        ports.discards.append((cycle, p, ports.queues[(p, v)].pop(0)))
                if ctx.get(dut.reserve[p]):
                    ports.reserved.append((cycle, p, ctx.get(dut.reserve[p])))
                if ctx.get(dut.ctrl_in[p].ready):
                    pending_ctrl.remove([c for c in c_now if c[1] == p][0])
                if ctx.get(dut.ctrl_out[p].valid):
                    bits = ctx.get(dut.ctrl_out[p].payload).as_bits()
                    ctrl_out.append((cycle, p, Header.from_bits(bits)))
            vc = (ctx.get(dut.phase_vc), ctx.get(dut.phase_index))
            if ctx.get(dut.phase_valid) and not ctx.get(dut.reconfiguring) and vc != was_vc:
                phases.append((cycle, *vc))
                was_vc = vc
            await ctx.tick()

        ports.slot_error = ctx.get(dut.slot_error)

    sim.add_testbench(tb)
    sim.run()
    return phases, ctrl_out


MP_SLOT, DP_SLOT = 1, 2
PAIRS = [Flow([0, 1], [0, 1]), Flow([2, 3], [2, 3])]  # two All-Reduce flows
ALL = [Flow([0, 1, 2, 3], [0, 1, 2, 3])]


def _fill(ports: Ports, vc: int, slot: int, ports_used, n: int, first_seq: int = 0) -> None:
    for p in ports_used:
        ports.queues[(p, vc)] += [
            Header(vc=vc, index=slot, seq=first_seq + i, src=p) for i in range(n)
        ]


def test_flows_commit_together_in_sequence():
    ports = Ports()
    _fill(ports, VC_MP, MP_SLOT, range(P), 6)
    _run({MP_SLOT: PAIRS}, ports, 200)
    assert not ports.discards
    for flow in PAIRS:
        mine = [c for c in ports.commits if c[1] in flow.ips]
        # Every packet of the flow starts on all its inputs in one cycle, in seq order.
        by_seq = {}
        for cycle, p, _, h in mine:
            by_seq.setdefault(h.seq, set()).add((cycle, p))
        assert sorted(by_seq) == list(range(6))
        for seq, starts in by_seq.items():
            assert {p for _, p in starts} == set(flow.ips)
            assert len({c for c, _ in starts}) == 1, f"seq {seq} started apart"


def test_stale_and_misaddressed_heads_are_discarded():
    ports = Ports()
    _fill(ports, VC_MP, MP_SLOT, range(P), 3)
    ports.queues[(0, 0)].insert(1, Header(vc=VC_MP, index=MP_SLOT, seq=7, src=0))  # stale
    ports.queues[(1, 0)].append(Header(vc=VC_DP, index=MP_SLOT, seq=3, src=1))  # wrong VC
    ports.queues[(2, 0)].append(Header(vc=VC_MP, index=3, seq=3, src=2))  # empty slot
    _run({MP_SLOT: PAIRS}, ports, 200)
    assert sorted((p, h.seq) for _, p, h in ports.discards) == [(0, 7), (1, 3), (2, 3)]
    assert len(ports.commits) == 12


def test_mp_preempts_dp_at_packet_boundaries_and_dp_resumes():
    ports = Ports()
    _fill(ports, VC_DP, DP_SLOT, range(P), 30)

    def arrive(cycle, ps):
        if cycle == 60:
            _fill(ps, VC_MP, MP_SLOT, range(P), 4)

    phases, _ = _run({MP_SLOT: PAIRS, DP_SLOT: ALL}, ports, 700, on_cycle=arrive)
    order = [(vc, idx) for _, vc, idx in phases]
    assert order == [(VC_DP, DP_SLOT), (VC_MP, MP_SLOT), (VC_DP, DP_SLOT)], phases
    mp = [c for c in ports.commits if c[2] == VC_MP]
    dp = [c for c in ports.commits if c[2] == VC_DP]
    assert len(mp) == 16 and len(dp) == 120
    # No DP packet starts between the first and the last MP packet.
    first_mp, last_mp = min(c[0] for c in mp), max(c[0] for c in mp)
    assert not [c for c in dp if first_mp <= c[0] <= last_mp]
    # DP resumes in sequence: seq per port strictly increasing over the whole run.
    for p in range(P):
        seqs = [h.seq for _, q, v, h in ports.commits if q == p and v == VC_DP]
        assert seqs == list(range(30))


def test_pp_outranks_dp_and_mp_outranks_pp():
    ports = Ports()
    _fill(ports, VC_DP, DP_SLOT, range(P), 4)
    _fill(ports, VC_PP, 3, range(P), 4)
    _fill(ports, VC_MP, MP_SLOT, range(P), 4)
    phases, _ = _run({MP_SLOT: PAIRS, DP_SLOT: ALL, 3: PAIRS}, ports, 500)
    assert [(vc, idx) for _, vc, idx in phases] == [
        (VC_MP, MP_SLOT),
        (VC_PP, 3),
        (VC_DP, DP_SLOT),
    ]


def test_nack_goes_to_the_flows_inputs_and_rewinds_expected_seq():
    ports = Ports()
    _fill(ports, VC_MP, MP_SLOT, range(P), 5)
    nack = Header(vc=VC_MP, kind=KIND_NACK, index=MP_SLOT, seq=1, src=3)
    ack = Header(vc=VC_MP, kind=KIND_ACK, index=MP_SLOT, seq=2, src=0)

    def resend(cycle, ps):
        # The senders of flow {2, 3} rewind to 1 after the NACK (cycle 150).
        if cycle == 160:
            _fill(ps, VC_MP, MP_SLOT, [2, 3], 4, first_seq=1)

    _, ctrl_out = _run(
        {MP_SLOT: PAIRS}, ports, 400, ctrl=[(150, 3, nack), (150, 0, ack)], on_cycle=resend
    )
    assert sorted((q, h.kind) for _, q, h in ctrl_out) == [
        (0, KIND_ACK),
        (1, KIND_ACK),
        (2, KIND_NACK),
        (3, KIND_NACK),
    ]
    for p in (2, 3):
        seqs = [h.seq for _, q, _, h in ports.commits if q == p]
        assert seqs == [0, 1, 2, 3, 4, 1, 2, 3, 4]
    for p in (0, 1):
        assert [h.seq for _, q, _, h in ports.commits if q == p] == [0, 1, 2, 3, 4]


def test_unicast_rounds_serve_every_destination():
    ports = Ports()
    rng = np.random.default_rng(1)
    sent = []
    for p in range(P):
        for i in range(6):
            d = int(rng.integers(P))
            ports.queues[(p, 2)].append(Header(vc=VC_PP, index=0, seq=i, src=p, dst=d))
            sent.append((p, i, d))
    phases, _ = _run({}, ports, 900)
    got = sorted((p, h.seq, h.dst) for _, p, _, h in ports.commits)
    assert got == sorted(sent)
    assert not ports.discards
    # Every packet starts while the interconnect runs the round that carries it.
    rounds = {r: route(shift_flows(P, r), P, PARAMS.switch.m).config.to_bits() for r in range(P)}
    for (_, p, _, h), active in zip(ports.commits, ports.active, strict=True):
        assert active == rounds[(h.dst - p) % P]


def test_a_flow_commits_only_when_every_output_can_take_the_packet():
    """The All-Reduce over all ports forks every packet to four outputs: while output 2 has
    no DP credit nothing starts; once it has, all inputs commit together and every output
    of the flow spends a credit in that very cycle."""
    ports = Ports()
    _fill(ports, VC_DP, DP_SLOT, range(P), 2)
    ports.out_credit[2] = 0b111 & ~(1 << VC_DP)

    def credit(cycle, ps):
        if cycle == 80:
            ps.out_credit[2] = 0b111

    _run({DP_SLOT: ALL}, ports, 200, on_cycle=credit)
    first = min(c for c, *_ in ports.commits)
    assert first >= 80
    for cycle in sorted({c for c, *_ in ports.commits}):
        assert sorted(p for c, p, *_ in ports.commits if c == cycle) == list(range(P))
        assert sorted(q for c, q, bits in ports.reserved if c == cycle) == list(range(P))
        assert {bits for c, _, bits in ports.reserved if c == cycle} == {1 << VC_DP}
    assert len(ports.reserved) == P * 2


def test_a_gap_sends_one_rewind_to_the_flows_inputs():
    """Port 1's packet 1 never arrives (lost on its link): its packet 2 is a gap, so the
    switch discards it and sends one REWIND for 1 to both inputs of the pair; packet 3, a
    gap too, sends none (the senders were told). After the resend, both go on from 1."""
    ports = Ports()
    _fill(ports, VC_MP, MP_SLOT, [0], 4)
    ports.queues[(1, VC_MP)] += [Header(vc=VC_MP, index=MP_SLOT, seq=k, src=1) for k in (0, 2, 3)]

    def resend(cycle, ps):
        if cycle == 120:
            _fill(ps, VC_MP, MP_SLOT, [1], 3, first_seq=1)

    _, ctrl_out = _run({MP_SLOT: PAIRS}, ports, 300, on_cycle=resend)
    rewinds = [(q, h) for _, q, h in ctrl_out if h.kind == KIND_REWIND]
    assert sorted(q for q, _ in rewinds) == [0, 1]
    assert {(h.seq, h.index, h.vc, h.src) for _, h in rewinds} == {(1, MP_SLOT, VC_MP, 1)}
    assert sorted(h.seq for _, p, h in ports.discards if p == 1) == [2, 3]
    for p in (0, 1):
        assert [h.seq for _, q, _, h in ports.commits if q == p] == [0, 1, 2, 3]


def test_a_nack_goes_on_as_a_nack_once_then_as_acks():
    """Both receivers of an MP pair NACK packet 1 (it arrived damaged): the first NACK
    rewinds E and goes to both senders as a NACK; the second, for what the senders were
    just told, goes on as an ACK of 1."""
    ports = Ports()
    _fill(ports, VC_MP, MP_SLOT, [0, 1], 3)
    nacks = [
        (100, 0, Header(vc=VC_MP, kind=KIND_NACK, index=MP_SLOT, seq=1, src=0)),
        (101, 1, Header(vc=VC_MP, kind=KIND_NACK, index=MP_SLOT, seq=1, src=1)),
    ]
    _, ctrl_out = _run({MP_SLOT: PAIRS}, ports, 200, ctrl=nacks)
    got = sorted((c, q, h.kind, h.src) for c, q, h in ctrl_out)
    kinds = {(q, src): kind for _, q, kind, src in got}
    assert kinds == {
        (0, 0): KIND_NACK,
        (1, 0): KIND_NACK,
        (0, 1): KIND_ACK,
        (1, 1): KIND_ACK,
    }


def test_a_slot_that_fails_its_check_is_contained():
    """DP's slot has a wrong check word: the switch loads it, finds it bad, never runs it
    and discards its heads; MP, in a good slot, runs meanwhile, and ``slot_error`` names
    the bad slot."""
    ports = Ports()
    _fill(ports, VC_DP, DP_SLOT, range(P), 4)

    def mp_later(cycle, ps):
        if cycle == 60:
            _fill(ps, VC_MP, MP_SLOT, range(P), 3)

    phases, _ = _run(
        {MP_SLOT: PAIRS, DP_SLOT: ALL}, ports, 300, on_cycle=mp_later, corrupt={DP_SLOT}
    )
    assert [idx for _, _, idx in phases] == [MP_SLOT]
    assert not [c for c in ports.commits if c[2] == VC_DP]
    assert len([c for c in ports.commits if c[2] == VC_MP]) == 3 * P
    assert sorted(h.seq for _, p, h in ports.discards if p == 0) == [0, 1, 2, 3]
    assert ports.slot_error == 1 << DP_SLOT
