"""The NPU endpoint in RTL: sim/verify/packet/endpoint.py ``Npu`` (its reference, which the
lockstep test compares it with, flit for flit and cycle for cycle) as an Amaranth
component, so a soak of the packet switch runs with no Python per cycle
(fredfab.sim.verify.packet.hw_soak).

It does what the Python endpoint does, in the same order within a cycle (endpoint.py's
module docstring): link-level retry at both ends (hw/packet/link_retry.py), the link
reader (hw_link_rx.py), Go-Back-N senders and receivers (hw_gbn.py), answers waiting per
stream, the choice of what to send, syncs, credits. Its traffic is regenerated, not
stored (model/packet/payload.py): a sender's packet k is its payload hash at k, and a
receiver checks every flit of the packet it would deliver next against the lane-wise
sum of its flow's inputs' hashes, as the flit arrives. It supports one send and one
receive stream per data VC (the soak's MP, DP and PP), integer element types (sums in any
order), and counts, rather than raises, what the model would raise on.

``EnableInserter(run)`` freezes it until the harness has loaded the switch; ``tx`` (the
link, registered by the retry sender) and ``tx_credit`` / ``tx_ack`` are what the model's
``cycle`` returns, shown from the next cycle on as the bench's loop drives them."""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import C, Cat, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fredfab.hw.named import named
from fredfab.hw.packet.crc import crc_of
from fredfab.hw.packet.layouts import CREDIT_BITS, header_layout, link_signature
from fredfab.hw.packet.link_retry import RetryReceiver, RetrySender, ack_layout, offer_layout
from fredfab.hw.packet.params import PacketParams
from fredfab.model.errors import InputError
from fredfab.model.packet.format import (
    DATA_VCS,
    KIND_DATA,
    KIND_REWIND,
    N_VCS,
    SEQ_BITS,
    UNICAST_INDEX,
    VC_CTRL,
)
from fredfab.model.packet.gbn import ACK_EVERY
from fredfab.model.packet.link import sync_interval
from fredfab.model.packet.payload import F_SHIFT, J_SHIFT, K_SHIFT
from fredfab.model.packet.recovery import npu_tail_timeout
from fredfab.model.prng import threshold
from fredfab.sim.verify.packet.endpoint import DRAW_BITS
from fredfab.sim.verify.packet.hw_gbn import TIME_BITS, GbnReceiver, GbnSender
from fredfab.sim.verify.packet.hw_link_rx import HwLinkReceiver
from fredfab.sim.verify.soak_harness import XorShift64

COUNT_BITS = 32


@dataclass(frozen=True)
class HwSend:
    """A send stream: packets of ``vc`` for slot ``index`` (unicast: to ``dst``), payload
    hashes of ``seed``, to ``receivers``, from cycle ``start``; ``messages`` (seed,
    size_bits, gap_bits) as traffic.Messages, or None (all at once)."""

    vc: int
    index: int
    dst: int
    receivers: tuple[int, ...]
    seed: int
    start: int
    n_packets: int
    messages: tuple[int, int, int] | None


@dataclass(frozen=True)
class HwRecv:
    """A receive stream: packets of ``vc`` for slot ``index`` (unicast: from ``src``), each
    flit the lane-wise sum of the payload hashes of ``seeds`` (its flow's inputs)."""

    vc: int
    index: int
    src: int
    seeds: tuple[int, ...]
    n_packets: int


@dataclass(frozen=True)
class EndpointKnobs:
    window: int
    sender_timeout: int
    receiver_timeout: int
    idle: float
    stall: float
    draws_seed: int
    ack_every: int = ACK_EVERY


def _shl64(x: Value, k: int) -> Value:
    return Cat(C(0, k), x[: 64 - k])


def xorshift(x: Value) -> Value:
    """One xorshift64 step of ``x`` (model/prng.py ``xorshift64``), combinationally."""
    t1 = x ^ _shl64(x, 13)
    t2 = t1 ^ t1[7:]
    return t2 ^ _shl64(t2, 17)


def payload_word(
    m: Module, seed: int | Value, k: Value, f: Value, data_bits: int, name: str
) -> Signal:
    """model/packet/payload.py ``payload_word`` of (seed, k, f), combinationally."""
    chunks = []
    for j in range(-(-data_bits // 64)):
        x = Signal(64, name=f"{name}_x{j}")
        a, b = Signal(64, name=f"{name}_a{j}"), Signal(64, name=f"{name}_b{j}")
        m.d.comb += [
            x.eq(seed + (j << J_SHIFT) + (k << K_SHIFT) + (f << F_SHIFT)),
            a.eq(xorshift(x)),
            b.eq(xorshift(a)),
        ]
        chunks.append(b)
    out = Signal(data_bits, name=name)
    m.d.comb += out.eq(Cat(*chunks)[:data_bits])
    return out


class NpuEndpoint(wiring.Component):
    def __init__(
        self,
        params: PacketParams,
        port: int,
        sends: list[HwSend],
        recvs: list[HwRecv],
        knobs: EndpointKnobs,
    ) -> None:
        for kind, streams in (("send", sends), ("receive", recvs)):
            vcs = [s.vc for s in streams]
            if len(set(vcs)) != len(vcs):
                raise ValueError(f"one {kind} stream per VC, got VCs {vcs}")
        if params.switch.element.is_float and any(len(r.seeds) > 1 for r in recvs):
            raise InputError("the hardware endpoint checks sums of integer element types only")
        self.params, self.port = params, port
        self.sends, self.recvs, self.knobs = sends, recvs, knobs
        super().__init__(
            {
                "rx": In(link_signature(params)),
                "rx_credit": In(CREDIT_BITS),
                "rx_ack": In(ack_layout),
                "tx": Out(link_signature(params)),
                "tx_credit": Out(CREDIT_BITS),
                "tx_ack": Out(ack_layout),
                "done": Out(1),
                "delivered": Out(COUNT_BITS).array(len(recvs)),
                "data_errors": Out(COUNT_BITS),
                "protocol_errors": Out(COUNT_BITS),
                "data_sent": Out(COUNT_BITS),
                "control_sent": Out(COUNT_BITS),
                "syncs_sent": Out(COUNT_BITS),
                "bad_packets": Out(COUNT_BITS),
                "rewinds": Out(COUNT_BITS),
                "timeouts": Out(COUNT_BITS),
                "replayed": Out(COUNT_BITS),  # flits sent again by link-level retry
            }
        )

    def elaborate(self, platform) -> Module:  # noqa: C901 (one cycle of the model, in order)
        m = Module()
        params, fmt, s = self.params, self.params.fmt, self.params.switch
        pf, width, port, kn = fmt.packet_flits, s.data_width, self.port, self.knobs
        lane_bits, lanes = s.element.bits, s.lanes
        now = Signal(TIME_BITS)
        m.d.sync += now.eq(now + 1)

        # -- link-level retry, both ends ----------------------------------------------------
        m.submodules.retry_in = retry_in = RetryReceiver(params)
        m.submodules.retry_out = retry_out = RetrySender(params)
        wiring.connect(m, wiring.flipped(self.rx), retry_in.i)
        m.d.comb += [self.tx_ack.eq(retry_in.ack), retry_out.ack.eq(self.rx_ack)]
        wiring.connect(m, retry_out.tx, wiring.flipped(self.tx))
        ready = retry_out.i.ready
        m.d.sync += self.replayed.eq(self.replayed + retry_out.replaying)

        # -- the link reader ----------------------------------------------------------------
        m.submodules.reader = rxl = HwLinkReceiver(params, npu_tail_timeout(fmt))
        m.d.comb += [
            rxl.valid.eq(retry_in.o.valid),
            rxl.flit.eq(retry_in.o.payload),
            rxl.crc_ok.eq(retry_in.ok),
        ]
        errors = []  # protocol errors this cycle
        errors.append(rxl.error)

        # -- the link sender's credits (credit() first in the model's cycle) -----------------
        depth = [fmt.ctrl_depth if v == VC_CTRL else fmt.data_depth for v in range(N_VCS)]
        credits = [Signal(range(d + 2), init=d, name=f"credits_{v}") for v, d in enumerate(depth)]
        have = [Signal(range(d + 2), name=f"have_{v}") for v, d in enumerate(depth)]
        pkt = [Signal(4, name=f"pkt_{v}") for v in range(N_VCS)]
        interval = sync_interval(fmt)
        quiet = [
            Signal(range(interval + 1), init=interval, name=f"quiet_{v}") for v in range(N_VCS)
        ]
        inside = [Signal(name=f"inside_{v}") for v in range(N_VCS)]
        for v in range(N_VCS):
            m.d.comb += have[v].eq(credits[v] + self.rx_credit[v])
            errors.append(have[v] > depth[v])

        # -- receivers ----------------------------------------------------------------------
        recv_on = {r.vc: i for i, r in enumerate(self.recvs)}
        rcvs: list[GbnReceiver] = []
        pend_valid = [Signal(name=f"answer_pending_{i}") for i in range(len(self.recvs))]
        pend_kind = [Signal(2, name=f"answer_kind_{i}") for i in range(len(self.recvs))]
        pend_seq = [Signal(SEQ_BITS, name=f"answer_seq_{i}") for i in range(len(self.recvs))]
        ans_valid = [Signal(name=f"answer_now_{i}") for i in range(len(self.recvs))]
        ans_kind = [Signal(2, name=f"answer_now_kind_{i}") for i in range(len(self.recvs))]
        ans_seq = [Signal(SEQ_BITS, name=f"answer_now_seq_{i}") for i in range(len(self.recvs))]
        data_err = []
        for i, r in enumerate(self.recvs):
            rcv = GbnReceiver(r.n_packets, kn.receiver_timeout, kn.ack_every)
            m.submodules[f"rcv{i}"] = rcv
            rcvs.append(rcv)
            v = DATA_VCS.index(r.vc)
            h = rxl.pkt_header[v]
            match = (
                rxl.pkt_valid[v]
                & (h.kind == KIND_DATA)
                & (h.vc == r.vc)
                & (h.index == r.index)
                & ((h.src == r.src) if r.index == UNICAST_INDEX else C(1, 1))
            )
            m.d.comb += [
                rcv.now.eq(now),
                rcv.pkt_valid.eq(match),
                rcv.pkt_seq.eq(h.seq),
                rcv.pkt_ok.eq(rxl.pkt_ok[v]),
                self.delivered[i].eq(rcv.expected),
            ]
            errors.append(rxl.pkt_valid[v] & ~match & rxl.pkt_ok[v])
            data_err.append(rcv.delivered & rxl.pkt_mismatch[v])
            # The answer of this cycle replaces the one waiting.
            m.d.comb += [
                ans_valid[i].eq(pend_valid[i] | rcv.answer_valid),
                ans_kind[i].eq(Mux(rcv.answer_valid, rcv.answer_kind, pend_kind[i])),
                ans_seq[i].eq(Mux(rcv.answer_valid, rcv.answer_seq, pend_seq[i])),
            ]
        for v in DATA_VCS:
            if v not in recv_on:
                errors.append(rxl.pkt_valid[DATA_VCS.index(v)] & rxl.pkt_ok[DATA_VCS.index(v)])
        # The word expected where the arriving flit goes: the next packet of its VC's
        # receiver, the lane-wise sum of its inputs' hashes. One flit arrives per cycle, so
        # one set of hash units serves every stream (their seeds chosen by the flit's VC).
        n_in = max((len(r.seeds) for r in self.recvs), default=0)
        k_sel = Signal(32)
        seeds = [Signal(64, name=f"exp_seed_{j}") for j in range(n_in)]
        uses = [Signal(name=f"exp_use_{j}") for j in range(n_in)]
        for v, i in recv_on.items():
            with m.If(rxl.append_vc == v):
                m.d.comb += k_sel.eq(rcvs[i].expected)
                for j, seed in enumerate(self.recvs[i].seeds):
                    m.d.comb += [seeds[j].eq(seed), uses[j].eq(1)]
        words = [
            payload_word(m, seeds[j], k_sel, rxl.append_index, width, f"exp{j}")
            for j in range(n_in)
        ]
        lanes_out = []
        for lane in range(lanes):
            acc = C(0, lane_bits)
            for j, w in enumerate(words):
                part = w[lane * lane_bits : (lane + 1) * lane_bits]
                acc = (acc + Mux(uses[j], part, 0))[:lane_bits]
            lanes_out.append(acc)
        m.d.comb += rxl.expect_word.eq(Cat(*lanes_out))

        # -- senders ------------------------------------------------------------------------
        gbns: list[GbnSender] = []
        ch = rxl.ctl_header
        ctl_taken = []
        for i, st in enumerate(self.sends):
            g = GbnSender(st.receivers, st.n_packets, kn.window, kn.sender_timeout, st.messages)
            m.submodules[f"snd{i}"] = g
            gbns.append(g)
            key_src = (ch.src == st.dst) if st.index == UNICAST_INDEX else C(1, 1)
            mine = rxl.ctl_valid & (ch.vc == st.vc) & (ch.index == st.index) & key_src
            mine = mine & (ch.kind != KIND_DATA)
            ctl_taken.append(mine)
            if st.index == UNICAST_INDEX:
                errors.append(mine & (ch.kind == KIND_REWIND))
                mine = mine & (ch.kind != KIND_REWIND)
            m.d.comb += [
                g.now.eq(now),
                g.ctl_valid.eq(mine),
                g.ctl_kind.eq(ch.kind),
                g.ctl_src.eq(ch.src),
                g.ctl_seq.eq(ch.seq),
            ]
            errors.append(g.error)
        errors.append(rxl.ctl_valid & ~Cat(*ctl_taken, C(0, 1)).any())

        # -- what goes out ------------------------------------------------------------------
        m.submodules.draws = draws = XorShift64(kn.draws_seed)
        m.d.comb += draws.advance.eq(1)
        d = draws.value
        idle = named(m, d[:DRAW_BITS] < threshold(kn.idle, DRAW_BITS), "idle")
        # The packet being sent: its stream, index, next payload flit (1..pf) and pkt.
        sending = Signal()
        cur = Signal(range(max(1, len(self.sends))))
        cur_k = Signal(32)
        cur_f = Signal(range(pf + 1))
        cur_pkt = Signal(4)

        n_r = len(self.recvs)
        answer_turn = Signal(range(max(1, n_r)))
        pick_ans = Signal(range(max(1, n_r)))
        any_ans = Signal()
        for t in range(n_r):
            with m.If(answer_turn == t):
                for i in reversed([(t + j) % n_r for j in range(n_r)]):
                    with m.If(ans_valid[i]):
                        m.d.comb += [pick_ans.eq(i), any_ans.eq(1)]
        n_s = len(self.sends)
        turn = Signal(range(max(1, n_s)))
        eligible = [
            named(
                m,
                ((now >= st.start) if st.start else C(1, 1)) & (have[st.vc] != 0) & gbns[i].can,
                f"eligible_{i}",
            )
            for i, st in enumerate(self.sends)
        ]
        pick_snd = Signal(range(max(1, n_s)))
        any_snd = Signal()
        for t in range(n_s):
            with m.If(turn == t):
                for i in reversed([(t + j) % n_s for j in range(n_s)]):
                    with m.If(eligible[i]):
                        m.d.comb += [pick_snd.eq(i), any_snd.eq(1)]
        sync_due = [
            named(m, (have[v] == 0) & ~inside[v] & (quiet[v] == interval), f"sync_due_{v}")
            for v in range(N_VCS)
        ]
        any_sync = named(m, Cat(*sync_due).any(), "any_sync")
        sync_vc = Signal(2)
        for v in reversed(range(N_VCS)):
            with m.If(sync_due[v]):
                m.d.comb += sync_vc.eq(v)

        send_ans = named(m, ready & (have[VC_CTRL] != 0) & any_ans, "send_ans")
        go = named(m, ready & ~send_ans & ~idle, "go")
        send_body = named(m, go & sending, "send_body")
        send_sync = named(m, go & ~sending & any_sync, "send_sync")
        send_head = named(m, go & ~sending & ~any_sync & any_snd, "send_head")

        flit = Signal(offer_layout(params))
        hdr = Signal(header_layout)
        body_word = Signal(width)
        # The payload flit of the packet being sent: its stream's hash.
        pay_seed = Signal(64)
        for i, st in enumerate(self.sends):
            with m.If(cur == i):
                m.d.comb += pay_seed.eq(st.seed)
        if self.sends:
            m.d.comb += body_word.eq(payload_word(m, pay_seed, cur_k, cur_f - 1, width, "pay"))
        with m.If(send_ans):
            for i, r in enumerate(self.recvs):
                with m.If(pick_ans == i):
                    m.d.comb += [
                        hdr.vc.eq(r.vc),
                        hdr.kind.eq(ans_kind[i]),
                        hdr.index.eq(r.index),
                        hdr.seq.eq(ans_seq[i]),
                        hdr.src.eq(port),
                        hdr.dst.eq(r.src if r.index == UNICAST_INDEX else 0),
                    ]
            m.d.comb += [
                flit.data.eq(hdr.as_value()),
                flit.head.eq(1),
                flit.last.eq(1),
                flit.vc.eq(VC_CTRL),
                flit.pkt.eq(pkt[VC_CTRL]),
            ]
        with m.Elif(send_body):
            for i, st in enumerate(self.sends):
                with m.If(cur == i):
                    m.d.comb += flit.vc.eq(st.vc)
            m.d.comb += [
                flit.data.eq(body_word),
                flit.last.eq(cur_f == pf),
                flit.pkt.eq(cur_pkt),
            ]
        with m.Elif(send_sync):
            m.d.comb += [flit.vc.eq(sync_vc), flit.sync.eq(1)]
            for v in range(N_VCS):
                with m.If(sync_vc == v):
                    m.d.comb += flit.pkt.eq(pkt[v])
        with m.Elif(send_head):
            for i, st in enumerate(self.sends):
                with m.If(pick_snd == i):
                    m.d.comb += [
                        hdr.vc.eq(st.vc),
                        hdr.kind.eq(KIND_DATA),
                        hdr.index.eq(st.index),
                        hdr.seq.eq(gbns[i].next[:SEQ_BITS]),
                        hdr.src.eq(port),
                        hdr.dst.eq(st.dst),
                        flit.vc.eq(st.vc),
                        flit.pkt.eq(pkt[st.vc]),
                    ]
            m.d.comb += [flit.data.eq(hdr.as_value()), flit.head.eq(1)]
        m.d.comb += flit.crc.eq(crc_of(flit.data, params.link.crc))
        sent_any = named(m, send_ans | send_body | send_sync | send_head, "sent_any")
        m.d.comb += [retry_out.i.valid.eq(sent_any), retry_out.i.payload.eq(flit)]

        # -- state updates ------------------------------------------------------------------
        for i, g in enumerate(gbns):
            m.d.comb += g.sent.eq(send_head & (pick_snd == i))
        with m.If(send_head):
            m.d.sync += [
                sending.eq(1),
                cur.eq(pick_snd),
                cur_f.eq(1),
                turn.eq(Mux(pick_snd == n_s - 1, 0, pick_snd + 1)),
            ]
            for i, st in enumerate(self.sends):
                with m.If(pick_snd == i):
                    m.d.sync += [cur_k.eq(gbns[i].next), cur_pkt.eq(pkt[st.vc])]
        with m.If(send_body):
            m.d.sync += cur_f.eq(cur_f + 1)
            with m.If(cur_f == pf):
                m.d.sync += sending.eq(0)
        with m.If(send_ans):
            m.d.sync += answer_turn.eq(Mux(pick_ans == n_r - 1, 0, pick_ans + 1))
        for i in range(n_r):
            taken = send_ans & (pick_ans == i)
            m.d.sync += [
                pend_valid[i].eq(ans_valid[i] & ~taken),
                pend_kind[i].eq(ans_kind[i]),
                pend_seq[i].eq(ans_seq[i]),
            ]
        # Credits and pkt counters per VC; quiet and ``inside`` for the syncs.
        for v in range(N_VCS):
            spent = named(
                m, (flit.vc == v) & ((send_ans & (v == VC_CTRL)) | send_head), f"spent_{v}"
            )
            m.d.sync += credits[v].eq(have[v] - spent)
            with m.If(spent):
                m.d.sync += pkt[v].eq(pkt[v] + 1)
            with m.If(sent_any & (flit.vc == v)):
                m.d.sync += quiet[v].eq(1)
                with m.If(flit.head):
                    m.d.sync += inside[v].eq(~flit.last)
                with m.Elif(flit.last):
                    m.d.sync += inside[v].eq(0)
            with m.Elif(quiet[v] != interval):
                m.d.sync += quiet[v].eq(quiet[v] + 1)

        # -- credits back -------------------------------------------------------------------
        due = [Signal(8, name=f"credits_due_{v}") for v in range(N_VCS)]
        pulses = []
        for v in range(N_VCS):
            total = due[v] + rxl.due[v]
            stall = d[DRAW_BITS * (1 + v) : DRAW_BITS * (2 + v)] < threshold(kn.stall, DRAW_BITS)
            pulse = (total != 0) & ~stall
            pulses.append(pulse)
            m.d.sync += due[v].eq(total - pulse)
        m.d.sync += self.tx_credit.eq(Cat(*pulses))

        # -- counters -----------------------------------------------------------------------
        def count(sig: Signal, n: Value) -> None:
            m.d.sync += sig.eq(sig + n)

        count(self.data_errors, sum(data_err) if data_err else 0)
        count(self.protocol_errors, sum(errors))
        count(self.data_sent, send_head)
        count(self.control_sent, send_ans)
        count(self.syncs_sent, send_sync)
        bad_now = [rxl.pkt_valid[i] & ~rxl.pkt_ok[i] for i in range(len(DATA_VCS))]
        count(self.bad_packets, sum(bad_now))
        m.d.comb += [
            self.rewinds.eq(sum(g.rewinds for g in gbns) if gbns else 0),
            self.timeouts.eq(sum(g.timeouts for g in gbns) if gbns else 0),
            self.done.eq(Cat(*(g.done for g in gbns), *(r.complete for r in rcvs), C(1, 1)).all()),
        ]
        return m
