"""The packet-mode control unit: which phase the interconnect serves, which packets start,
and where ACK/NACK go (docs/switch-rtl.md, "Control unit").

Storage. Configuration slots with their check words and the P read-only unicast rounds
(round r routes p -> p + r mod P, routed at generation time) are in the slot store
(hw/packet/slot_store.py), which verifies a slot while it copies it. Flow tables
(``flows``) and the expected sequence numbers ``E`` are registers, read by every port each
cycle (packet mode bounds ports and slots for that reason: hw/packet/params.py).

Phases. A phase is (VC, slot). A flow of the running phase commits its next packet when all
its inputs show a head of that VC and slot whose ``seq`` equals ``E`` and every output it
goes to can take the packet whole (``out_credit``: a credit of the VC not yet spent); all
its inputs commit in the same cycle, ``reserve`` spends a credit on each of its outputs,
so a sum only ever adds packets of one sequence number, a forked packet never waits for a
credit on one output while it streams on another, and ``E`` advances. A phase is *ready*
when at least one of its flows has its heads (credits aside: a phase whose receivers are
slow keeps the switch). The paper moves to a higher-priority phase once every port holds a
packet of it; here that is asked of every input of one flow, not of every flow of the slot:
the flows of a phase finish their messages at different times, and a phase whose finished
flows had to send again before the others could resume would never resume.

The switch moves to the most urgent ready phase (MP > PP > DP, then the lowest slot) when
it is more urgent than the running one, or when the running one can commit nothing and
has nothing in flight. Moving: stop committing, wait until nothing committed is left in the
input ports, the interconnect and the output ports (so packets are never cut, and the
output ports' headers name the phase their packets belong to), copy the slot and check it
(``n_words + check_words + 1`` cycles), run. A slot that fails its check is marked bad
(``slot_error``, until it is written again), nothing of it is committed and its heads are
discarded; the switch goes on with the other phases. A preempted phase keeps its heads and
``E``: it resumes where it stopped.

Unicast (index 0): the running round serves every port whose unicast head is for p + r
(and whose destination can take it); when none is and nothing is in flight, the next round
with a waiting packet (cyclically after r) is loaded. Unicast packets are numbered per
(VC, source, destination) stream: the switch keeps no ``E`` for them, a receiver sees a
gap in its own stream and NACKs it to the sender (``dst``).

Stale packets. A head whose ``seq`` is not ``E`` (a sender's copy from before a rewind, or
one past a lost packet), whose index names no slot or a bad one, whose header VC is not its
buffer's, or that comes to a port its slot does not use, is discarded: its buffer space
goes back to the sender. ``E`` of a slot and port starts at 0 when the loader writes the
port's flow-table row. A head past ``E`` is a gap: the senders are told (loss_notices.py).

Control network. One control packet per cycle: a REWIND (loss_notices.py) first, else round
robin over the ports: an ACK/NACK that receiver q sends for slot s goes to every input of
q's flow (``inputs_of_output``), for unicast to ``dst``, through a queue per output port. A
NACK for ``k`` sets ``E := k`` on those inputs when k comes before E (serial-number order),
and goes on as a NACK (the senders go back to k); so does a NACK for E itself that the
flow's senders were not yet told of; any other NACK of a configured flow goes on as an ACK
of k (the senders already go back, or are told): one loss, one rewind.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from fredfab.hw.config_layout import config_data_layout
from fredfab.hw.control import default_config
from fredfab.hw.named import named
from fredfab.hw.packet.layouts import head_layout, header_layout
from fredfab.hw.packet.loss_notices import LossNotices
from fredfab.hw.packet.params import PacketParams
from fredfab.hw.packet.slot_store import SlotStore, cfg_layout
from fredfab.model.packet.format import (
    DATA_VCS,
    HEADER_FIELDS,
    KIND_ACK,
    KIND_NACK,
    KIND_REWIND,
    PRIORITY,
    SEQ_MOD,
    UNICAST_INDEX,
)

assert tuple(range(len(DATA_VCS))) == DATA_VCS  # a data VC's number is its index here

#: Control packets waiting per output port for its link.
CTRL_QUEUE_DEPTH = 4
#: Packets' worth of cycles a unicast round may run while another round has packets
#: waiting: it bounds how long one destination pattern keeps the others waiting, and keeps
#: the switch-over (a drain and a slot copy, about 10 to 20 cycles) a small share of it.
ROUND_QUANTUM_PACKETS = 8

INDEX_BITS = dict(HEADER_FIELDS)["index"]
SEQ_BITS = dict(HEADER_FIELDS)["seq"]


def flows_layout(params: PacketParams) -> data.StructLayout:
    """A flow-table row: ``table`` 0 = inputs of input ``port``'s flow, 1 = inputs of output
    ``port``'s flow; ``mask`` bit p = input port p."""
    s = params.switch
    return data.StructLayout(
        {
            "mask": s.ports,
            "port": max(1, (s.ports - 1).bit_length()),
            "slot": max(1, (s.slots - 1).bit_length()),
            "table": 1,
        }
    )


class PacketControl(wiring.Component):
    def __init__(self, params: PacketParams) -> None:
        self.params = params
        s = params.switch
        self.topology = s.topology
        self.store = SlotStore(s)
        layout = config_data_layout(self.topology.config_layout)
        P, V = s.ports, len(DATA_VCS)
        # E[k][p]: the sequence number slot k's flow expects next at input p (module
        # docstring). Made here, not in elaborate, so that a proof can name it.
        self.expected = [
            [Signal(SEQ_BITS, name=f"E_s{k}_p{p}") for p in range(P)] for k in range(s.slots)
        ]
        super().__init__(
            {
                "cfg": In(stream.Signature(cfg_layout(s))),
                "flows": In(stream.Signature(flows_layout(params))),
                # From the input ports: the packet at the head of each data VC.
                "head": In(head_layout(params)).array(P, V),
                "commit": Out(V).array(P),
                "discard": Out(V).array(P),
                # From the output ports: bit v = a credit of data VC v not yet spent; and
                # back to them: spend one now, a packet of v was committed for the output.
                "out_credit": In(V).array(P),
                "reserve": Out(V).array(P),
                # Something committed is still on its way: per input port, inside the
                # interconnect, per output port.
                "in_busy": In(P),
                "ic_busy": In(1),
                "out_busy": In(P),
                "active": Out(layout, init=layout.from_bits(default_config(s).to_bits())),
                "phase_valid": Out(1),  # a phase is loaded (none after reset)
                "phase_vc": Out(2),
                "phase_index": Out(INDEX_BITS),
                "reconfiguring": Out(1),
                "slot_error": Out(s.slots),  # bit k: slot k failed its check
                # Control packets in from the ports, out to the ports' links.
                "ctrl_in": In(stream.Signature(header_layout)).array(P),
                "ctrl_out": Out(stream.Signature(header_layout)).array(P),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        pp, s = self.params, self.params.switch
        P, K, V = s.ports, s.slots, len(DATA_VCS)

        # -- storage ---------------------------------------------------------------
        m.submodules.store = store = self.store
        wiring.connect(m, wiring.flipped(self.cfg), store.cfg)
        m.d.comb += [self.active.eq(store.active), self.slot_error.eq(store.bad)]
        bad = store.bad
        in_of_in = [[Signal(P, name=f"in_of_in_s{k}_p{p}") for p in range(P)] for k in range(K)]
        in_of_out = [[Signal(P, name=f"in_of_out_s{k}_q{q}") for q in range(P)] for k in range(K)]
        E = self.expected
        row = self.flows.payload
        m.d.comb += self.flows.ready.eq(1)
        written = [[Signal(name=f"flow_row_s{k}_p{p}") for p in range(P)] for k in range(K)]
        for k in range(1, K):
            for p in range(P):
                hit = self.flows.valid & (row.slot == k) & (row.port == p)
                m.d.comb += written[k][p].eq(hit & (row.table == 0))
                with m.If(hit & (row.table == 0)):
                    m.d.sync += in_of_in[k][p].eq(row.mask)
                with m.If(hit & (row.table == 1)):
                    m.d.sync += in_of_out[k][p].eq(row.mask)
        # Inputs a slot uses: input p belongs to its own flow; none while the slot is bad.
        slot_inputs = [Cat(in_of_in[k][p][p] & ~bad[k] for p in range(P)) for k in range(K)]

        # -- heads -------------------------------------------------------------------
        hd = [[self.head[p][v] for v in range(V)] for p in range(P)]
        # match[p][v]: the head's seq is E of its slot at port p (slot 0: always);
        # ahead[p][v]: it comes after E (a gap: packets lost on the way).
        match = [[Signal(name=f"match_p{p}_v{v}") for v in range(V)] for p in range(P)]
        ahead = [[Signal(name=f"ahead_p{p}_v{v}") for v in range(V)] for p in range(P)]
        for p in range(P):
            for v in range(V):
                h = hd[p][v].header
                with m.Switch(h.index):
                    for k in range(1, K):
                        with m.Case(k):
                            m.d.comb += [
                                match[p][v].eq((h.seq == E[k][p]) & slot_inputs[k][p]),
                                ahead[p][v].eq(_before(E[k][p], h.seq) & slot_inputs[k][p]),
                            ]
                    with m.Case(UNICAST_INDEX):
                        m.d.comb += match[p][v].eq(h.dst < P)
        # good[p][v][k]: a head of VC v, slot k, that may be committed. A signal each (as
        # are can's terms below): every port's test reads every other port's, and repeated
        # Python expressions are copied into the Verilog once per use.
        good = [
            [
                [
                    named(
                        m,
                        hd[p][v].valid
                        & (hd[p][v].header.index == k)
                        & (hd[p][v].header.vc == DATA_VCS[v])
                        & match[p][v],
                        f"good_p{p}_v{v}_s{k}",
                    )
                    for k in range(K)
                ]
                for v in range(V)
            ]
            for p in range(P)
        ]
        for p in range(P):
            for v in range(V):
                h = hd[p][v].header
                fits = Cat(
                    (h.index == k) & (h.vc == DATA_VCS[v]) & match[p][v] for k in range(K)
                ).any()
                m.d.comb += self.discard[p][v].eq(hd[p][v].valid & ~fits)
        # gap[k][p]: a head of slot k discarded at p for coming after E; gap_vc[k] its VC.
        gap = [[Signal(name=f"gap_s{k}_p{p}") for p in range(P)] for k in range(K)]
        gap_vc = [Signal(2, name=f"gap_vc_s{k}") for k in range(K)]
        for k in range(1, K):
            for p in range(P):
                hits = [
                    hd[p][v].valid
                    & (hd[p][v].header.index == k)
                    & (hd[p][v].header.vc == DATA_VCS[v])
                    & ahead[p][v]
                    for v in range(V)
                ]
                m.d.comb += gap[k][p].eq(Cat(hits).any())
                for v in reversed(range(V)):
                    with m.If(hits[v]):
                        m.d.comb += gap_vc[k].eq(DATA_VCS[v])

        # outs_free[v][k][p]: every output of input p's flow in slot k can take a packet of
        # VC v whole. can_heads: the flow's heads are all there; can: and it may commit.
        out_credit = [[self.out_credit[q][v] for v in range(V)] for q in range(P)]
        can_heads = [[[Const(0)] * P for _ in range(K)] for _ in range(V)]
        can = [[[Const(0)] * P for _ in range(K)] for _ in range(V)]
        for v in range(V):
            for k in range(1, K):
                for p in range(P):
                    others = Cat(~in_of_in[k][p][q] | good[q][v][k] for q in range(P)).all()
                    outs_free = Cat(~in_of_out[k][q][p] | out_credit[q][v] for q in range(P)).all()
                    can_heads[v][k][p] = named(
                        m, good[p][v][k] & others, f"can_heads_v{v}_s{k}_p{p}"
                    )
                    can[v][k][p] = named(m, can_heads[v][k][p] & outs_free, f"can_v{v}_s{k}_p{p}")
        # Unicast: the round each unicast head needs.
        port_bits = max(1, (P - 1).bit_length())
        uround = [[Signal(port_bits, name=f"uround_p{p}_v{v}") for v in range(V)] for p in range(P)]
        for p in range(P):
            for v in range(V):
                dst = hd[p][v].header.dst
                # Port 0's round is its destination (a `dst >= 0` test would be constant).
                r = dst if p == 0 else Mux(dst >= p, dst - p, dst + P - p)
                m.d.comb += uround[p][v].eq(r)
        # rounds_waiting[v]: bit r = some port has a unicast head of VC v for round r.
        rounds_waiting = [Signal(P, name=f"rounds_waiting_v{v}") for v in range(V)]
        for v in range(V):
            for r in range(P):
                m.d.comb += rounds_waiting[v][r].eq(
                    Cat(good[p][v][UNICAST_INDEX] & (uround[p][v] == r) for p in range(P)).any()
                )
        ready = [
            [
                (rounds_waiting[v].any() if k == UNICAST_INDEX else Cat(can_heads[v][k]).any())
                for k in range(K)
            ]
            for v in range(V)
        ]

        # -- the running phase ----------------------------------------------------------
        run_v = Signal(range(V))  # index into DATA_VCS
        run_k = Signal(range(K))
        run_r = Signal(range(P))
        running = Signal()  # a phase is loaded
        stopping = Signal()  # a move is decided: commit nothing more
        m.d.comb += [
            self.phase_valid.eq(running),
            self.phase_vc.eq(run_v),  # DATA_VCS[v] == v
            self.phase_index.eq(run_k),
        ]

        # Commits of the running phase, and the outputs each input's packet goes to.
        go = Signal(P)
        dests = [Signal(P, name=f"dests_p{p}") for p in range(P)]
        for p in range(P):
            with m.Switch(run_k):
                for k in range(K):
                    with m.Case(k):
                        if k == UNICAST_INDEX:
                            with m.Switch(run_r):
                                for r in range(P):
                                    with m.Case(r):
                                        m.d.comb += dests[p].eq(1 << ((p + r) % P))
                        else:
                            m.d.comb += dests[p].eq(Cat(in_of_out[k][q][p] for q in range(P)))
            with m.Switch(run_v):
                for v in range(V):
                    with m.Case(v):
                        with m.Switch(run_k):
                            for k in range(K):
                                with m.Case(k):
                                    if k == UNICAST_INDEX:
                                        credit = Cat(out_credit[q][v] for q in range(P))
                                        cond = (
                                            good[p][v][k]
                                            & (uround[p][v] == run_r)
                                            & (credit & dests[p]).any()
                                        )
                                    else:
                                        cond = can[v][k][p]
                                    m.d.comb += go[p].eq(cond)
        may_commit = running & ~stopping
        for p in range(P):
            for v in range(V):
                m.d.comb += self.commit[p][v].eq(may_commit & (run_v == v) & go[p])
        for q in range(P):
            fed = Cat(go[p] & dests[p][q] for p in range(P)).any()
            for v in range(V):
                m.d.comb += self.reserve[q][v].eq(may_commit & (run_v == v) & fed)
        in_flight = self.in_busy.any() | self.ic_busy | self.out_busy.any()
        idle = ~go.any() & ~in_flight

        # The most urgent ready phase (priority order, then the lowest slot).
        best_found = Signal()
        best_v = Signal(range(V))
        best_k = Signal(range(K))
        best_rank = Signal(range(V + 1))
        rank_of = {DATA_VCS.index(vc): i for i, vc in enumerate(PRIORITY)}
        first = True
        for vc in PRIORITY:
            v = DATA_VCS.index(vc)
            for k in range(K):
                stmt = m.If if first else m.Elif
                first = False
                with stmt(ready[v][k]):
                    m.d.comb += [
                        best_found.eq(1),
                        best_v.eq(v),
                        best_k.eq(k),
                        best_rank.eq(rank_of[v]),
                    ]
        run_rank = Signal(range(V + 1))
        with m.Switch(run_v):
            for v in range(V):
                with m.Case(v):
                    m.d.comb += run_rank.eq(rank_of[v])
        # The next unicast round with a waiting packet, cyclically after the running one.
        next_round = Signal(range(P))
        waiting_run = Signal(P)
        with m.Switch(run_v):
            for v in range(V):
                with m.Case(v):
                    m.d.comb += waiting_run.eq(rounds_waiting[v])
        with m.Switch(run_r):
            for r in range(P):
                with m.Case(r):
                    order = [(r + 1 + i) % P for i in range(P)]
                    for rr in reversed(order):
                        with m.If(waiting_run[rr]):
                            m.d.comb += next_round.eq(rr)
        best_round = Signal(range(P))
        best_waiting = Signal(P)
        with m.Switch(best_v):
            for v in range(V):
                with m.Case(v):
                    m.d.comb += best_waiting.eq(rounds_waiting[v])
        for rr in reversed(range(P)):
            with m.If(best_waiting[rr]):
                m.d.comb += best_round.eq(rr)

        tgt_v = Signal.like(run_v)
        tgt_k = Signal.like(run_k)
        tgt_r = Signal.like(run_r)
        # Cycles the running phase has run (saturating): a unicast round's quantum.
        quantum = ROUND_QUANTUM_PACKETS * (pp.fmt.packet_flits + 1)
        round_age = Signal(range(quantum + 1))
        with m.If(self.reconfiguring):
            m.d.sync += round_age.eq(0)
        with m.Elif(round_age != quantum):
            m.d.sync += round_age.eq(round_age + 1)
        m.d.comb += store.load_slot.eq(Mux(tgt_k == UNICAST_INDEX, K + tgt_r, tgt_k))
        with m.FSM():
            with m.State("RUN"):
                same_unicast = running & (run_k == UNICAST_INDEX)
                urgent = best_found & (~running | (best_rank < run_rank))
                other = best_found & idle & ((best_v != run_v) | (best_k != run_k))
                others = waiting_run & ~(Const(1, P) << run_r)
                expired = round_age >= ROUND_QUANTUM_PACKETS * (pp.fmt.packet_flits + 1)
                next_r = (
                    same_unicast
                    & ((idle & waiting_run.any()) | (expired & others.any()))
                    & ~urgent
                    & ~other
                )
                with m.If(urgent | other):
                    m.d.sync += [
                        tgt_v.eq(best_v),
                        tgt_k.eq(best_k),
                        tgt_r.eq(best_round),
                        stopping.eq(1),
                    ]
                    m.next = "DRAIN"
                with m.Elif(next_r):
                    m.d.sync += [
                        tgt_v.eq(run_v),
                        tgt_k.eq(run_k),
                        tgt_r.eq(next_round),
                        stopping.eq(1),
                    ]
                    m.next = "DRAIN"
            with m.State("DRAIN"):
                m.d.comb += self.reconfiguring.eq(1)
                with m.If(~in_flight):
                    m.d.comb += store.load.eq(1)
                    m.next = "LOAD"
            with m.State("LOAD"):
                m.d.comb += self.reconfiguring.eq(1)
                with m.If(store.done):
                    # A slot that fails its check runs nothing: the next choice skips it.
                    m.d.sync += [
                        run_v.eq(tgt_v),
                        run_k.eq(tgt_k),
                        run_r.eq(tgt_r),
                        running.eq(store.ok),
                        stopping.eq(0),
                    ]
                    m.next = "RUN"

        # -- control network ----------------------------------------------------------------
        queues = []
        for q in range(P):
            fifo = SyncFIFOBuffered(width=header_layout.size, depth=CTRL_QUEUE_DEPTH)
            m.submodules[f"ctrl_queue_{q}"] = fifo
            queues.append(fifo)
            out = self.ctrl_out[q]
            m.d.comb += [
                out.payload.eq(fifo.r_data),
                out.valid.eq(fifo.r_rdy),
                fifo.r_en.eq(out.ready),
            ]

        def room(mask) -> Signal:
            return Cat(~mask[q] | queues[q].w_rdy for q in range(P)).all()

        # Where each port's control packet goes: unicast by dst; a slot's to the inputs of
        # the flow the receiver's output belongs to. A packet naming nothing is dropped.
        tgts = [Signal(P, name=f"ctrl_targets_{p}") for p in range(P)]
        can_go = Signal(P)
        for p in range(P):
            h = self.ctrl_in[p].payload
            with m.If(h.index == UNICAST_INDEX):
                with m.If(h.dst < P):
                    m.d.comb += tgts[p].eq(Const(1, P) << h.dst[:port_bits])
            with m.Else():
                with m.Switch(h.index):
                    for k in range(1, K):
                        with m.Case(k):
                            m.d.comb += tgts[p].eq(in_of_out[k][p])
            m.d.comb += can_go[p].eq(self.ctrl_in[p].valid & room(tgts[p]))

        # Loss notices: REWINDs for gaps, and the hold that decides how NACKs go on.
        advanced = [[may_commit & (run_k == k) & go[p] for p in range(P)] for k in range(K)]
        told = [[Signal(name=f"told_s{k}_p{p}") for p in range(P)] for k in range(K)]
        rewind_fire = Signal()
        notices = m.submodules.notices = LossNotices(
            pp, E, in_of_in, gap, gap_vc, advanced, written, told, rewind_fire
        )
        m.d.comb += rewind_fire.eq(notices.req_valid & room(notices.req_targets))

        # Round robin among the packets that can go now (one waiting for a full queue does
        # not hold up the others): the first after the last one served. A REWIND goes first.
        ctrl_hdr = Signal(header_layout)
        ctrl_port = Signal(range(P))
        targets = Signal(P)
        ctrl_fire = Signal()
        last_served = Signal(range(P))
        with m.Switch(last_served):
            for r in range(P):
                with m.Case(r):
                    for p in reversed([(r + 1 + i) % P for i in range(P)]):
                        with m.If(can_go[p]):
                            m.d.comb += ctrl_port.eq(p)
        with m.Switch(ctrl_port):
            for p in range(P):
                with m.Case(p):
                    m.d.comb += [ctrl_hdr.eq(self.ctrl_in[p].payload), targets.eq(tgts[p])]
        m.d.comb += ctrl_fire.eq(can_go.any() & ~rewind_fire)
        with m.If(ctrl_fire):
            m.d.sync += last_served.eq(ctrl_port)
        for p in range(P):
            m.d.comb += self.ctrl_in[p].ready.eq(ctrl_fire & (ctrl_port == p))

        # -- expected sequence numbers ----------------------------------------------------
        # acked[s][q]: what the receiver at output q of slot s last said it has (every
        # packet before it), from the ACK/NACKs passing by. floor: the least of those over
        # the flow's receivers, which every sender of the flow has been told; no sender will
        # ever send a packet before it again, so E never stays below it.
        acked = [[Signal(SEQ_BITS, name=f"acked_s{k}_q{q}") for q in range(P)] for k in range(K)]
        fr = self.flows.payload
        said = (
            ctrl_fire
            & ((ctrl_hdr.kind == KIND_ACK) | (ctrl_hdr.kind == KIND_NACK))
            & (ctrl_hdr.index != UNICAST_INDEX)
        )
        nack = said & (ctrl_hdr.kind == KIND_NACK)
        floor = [Signal(SEQ_BITS, name=f"floor_s{k}") for k in range(K)]
        for k in range(1, K):
            fresh = []
            for q in range(P):
                now = said & (ctrl_hdr.index == k) & (ctrl_port == q)
                f = Signal(SEQ_BITS, name=f"acked_next_s{k}_q{q}")
                m.d.comb += f.eq(
                    Mux(now & _before(acked[k][q], ctrl_hdr.seq), ctrl_hdr.seq, acked[k][q])
                )
                fresh.append(f)
                rewrite = self.flows.valid & (fr.slot == k) & (fr.port == q) & (fr.table == 1)
                m.d.sync += acked[k][q].eq(Mux(rewrite, 0, f))
            # The least over the receivers of the packet's flow: the outputs whose flow has
            # the same inputs (``targets``). Each step's running minimum is a signal of its
            # own: as a Python expression it would appear twice in the next step (compared
            # and selected), and the Verilog would double with every port (2^P copies).
            pick, have = Const(0, SEQ_BITS), Const(0)
            for q in range(P):
                member = in_of_out[k][q] == targets
                take = member & (~have | _before(fresh[q], pick))
                pick = named(m, Mux(take, fresh[q], pick), f"floor_s{k}_upto_q{q}")
                have = named(m, have | member, f"floor_s{k}_any_q{q}")
            m.d.comb += floor[k].eq(pick)
        # A NACK goes on as a NACK (the senders go back) when it rewinds E, or names E while
        # the senders were not told to go back to it; otherwise as an ACK of the same seq.
        rewinds = Signal()
        wanted = Signal()
        for k in range(1, K):
            for p in range(P):
                after = Signal(SEQ_BITS, name=f"E_next_s{k}_p{p}")
                m.d.comb += after.eq(Mux(advanced[k][p], E[k][p] + 1, E[k][p]))
                mine = said & (ctrl_hdr.index == k) & targets[p]
                back = nack & mine & _before(ctrl_hdr.seq, after)
                due = nack & mine & (ctrl_hdr.seq == after) & ~notices.notified[k][p]
                with m.If(back):
                    m.d.comb += rewinds.eq(1)
                with m.If(due):
                    m.d.comb += wanted.eq(1)
                rewound = Mux(back, ctrl_hdr.seq, after)
                lifted = Mux(_before(rewound, floor[k]), floor[k], rewound)
                with m.If(written[k][p]):
                    m.d.sync += E[k][p].eq(0)
                with m.Elif(mine):
                    m.d.sync += E[k][p].eq(lifted)
                with m.Else():
                    m.d.sync += E[k][p].eq(after)
        passes_on = rewinds | wanted
        for k in range(1, K):
            for p in range(P):
                m.d.comb += told[k][p].eq(nack & passes_on & (ctrl_hdr.index == k) & targets[p])
        # What the queues take: the REWIND, or the port's packet (a NACK of a configured
        # flow that need not go on as one goes on as an ACK).
        sent = Signal(header_layout)
        sent_to = Signal(P)
        with m.If(rewind_fire):
            m.d.comb += [
                sent.vc.eq(notices.req_vc),
                sent.kind.eq(KIND_REWIND),
                sent.index.eq(notices.req_slot),
                sent.seq.eq(notices.req_seq),
                sent.src.eq(notices.req_port),
                sent_to.eq(notices.req_targets),
            ]
        with m.Else():
            m.d.comb += [sent.eq(ctrl_hdr), sent_to.eq(Mux(ctrl_fire, targets, 0))]
            with m.If(nack & ~passes_on):
                m.d.comb += sent.kind.eq(KIND_ACK)
        for q in range(P):
            m.d.comb += [
                queues[q].w_data.eq(sent.as_value()),
                queues[q].w_en.eq(sent_to[q]),
            ]
        return m


def _before(a, b):
    """``a`` comes strictly before ``b`` in serial-number order (model/packet/format.py
    ``seq_before``), on SEQ_BITS-bit values."""
    diff = (b - a)[:SEQ_BITS]
    return (diff != 0) & (diff < SEQ_MOD // 2)
