"""The reading end of a link in RTL for the hardware endpoint: model/packet/link.py
``LinkReceiver`` (with its tail timeout), cycle for cycle, reading one flit (already past
link-level retry) per cycle and reporting what it causes at once.

Per data VC it keeps the packet it is filling: whether it has a usable header, how many
flits it has, whether any was bad, and whether any good one differed from ``expect_word``
(the word the endpoint expects at that place of the packet it would deliver next: the
packet is never kept, only checked as it comes). Per cycle and VC at most one packet ends
(the one open when its tail timed out or a flit of another packet came, or the one the
flit completes; a data flit that is head and last, which no sender here makes, is counted
as an ``error`` instead of being read as an empty packet).

Outputs per data VC: ``pkt_valid`` with ``pkt_header``, ``pkt_ok`` (all flits there and
good) and ``pkt_mismatch``; per VC ``due`` (credits to return for this cycle); the control
VC's good packets on ``ctl_valid``/``ctl_header``; ``append_vc``/``append_index`` (where the
flit arriving now goes, for ``expect_word``)."""

from __future__ import annotations

from amaranth.hdl import Elaboratable, Module, Mux, Signal

from fredfab.hw.named import named
from fredfab.hw.packet.layouts import header_layout, link_layout
from fredfab.hw.packet.params import PacketParams
from fredfab.model.packet.format import DATA_VCS, HEADER_BITS, N_VCS, PKT_BITS, VC_CTRL

#: The packet number before the first (``pkt`` starts at 0 and wraps).
BEFORE_FIRST_PKT = (1 << PKT_BITS) - 1


class HwLinkReceiver(Elaboratable):
    def __init__(self, params: PacketParams, timeout: int) -> None:
        self.params, self.timeout = params, timeout
        self.valid = Signal()
        self.flit = Signal(link_layout(params))
        self.crc_ok = Signal()  # the flit's CRC passes (the retry receiver computed it)
        self.expect_word = Signal(params.switch.data_width)
        self.append_vc = Signal(2)
        self.append_index = Signal(range(params.fmt.packet_flits + 1))
        V = len(DATA_VCS)
        self.pkt_valid = Signal(V)
        self.pkt_header = [Signal(header_layout, name=f"pkt_header_{v}") for v in range(V)]
        self.pkt_ok = Signal(V)
        self.pkt_mismatch = Signal(V)
        self.due = [Signal(range(2 * (1 << PKT_BITS) + 3), name=f"due_{v}") for v in range(N_VCS)]
        self.ctl_valid = Signal()
        self.ctl_header = Signal(header_layout)
        self.error = Signal()

    def elaborate(self, platform) -> Module:
        m = Module()
        pf = self.params.fmt.packet_flits
        f = self.flit
        good = named(m, self.crc_ok & ~f.bad, "good")
        m.d.comb += self.append_vc.eq(f.vc)
        T = self.timeout
        # One flit arrives per cycle, so the flit's work is done once, on the state of its VC
        # (``sel``), and written back to that VC; the other VCs only count their quiet cycles
        # and close a packet whose tail timed out. (A copy of the flit's work per VC cost the
        # Verilated soak about 930 more instructions per cycle, four endpoints together.)
        state = {v: _VcState(v, pf, T) for v in DATA_VCS}
        silent = {v: named(m, st.quiet > T, f"silent_{v}") for v, st in state.items()}
        tick_close = {
            v: named(m, st.is_open & silent[v], f"tick_close_{v}") for v, st in state.items()
        }
        sel = _VcState("sel", pf, T, register=False)
        s_silent, s_tick_close = Signal(name="sel_silent"), Signal(name="sel_tick_close")
        with m.Switch(f.vc):
            for v in DATA_VCS:
                with m.Case(v):
                    m.d.comb += [
                        *sel.eq(state[v]),
                        s_silent.eq(silent[v]),
                        s_tick_close.eq(tick_close[v]),
                    ]
        nxt = _VcState("next", pf, T, register=False)
        m.d.comb += nxt.eq(sel)

        # -- the flit, on its VC's state -----------------------------------------------------
        here = named(m, self.valid & (f.vc != VC_CTRL), "here")
        data_here = named(m, here & ~f.sync, "data_here")
        open1 = named(m, sel.is_open & ~s_tick_close, "open1")
        late = named(
            m, data_here & ~f.head & (f.pkt == sel.arrived_pkt) & (s_silent | sel.dropping), "late"
        )
        m.d.comb += [
            nxt.quiet.eq(1),
            nxt.arrived_pkt.eq(Mux(f.sync, f.pkt - 1, f.pkt)),
            nxt.dropping.eq(late),
        ]
        # The packet that ends now: the open one (old) or the one this flit fills (cur).
        old_ends, cur_ends = Signal(name="old_ends"), Signal(name="cur_ends")
        lost = Signal(PKT_BITS, name="lost")
        cur = _VcState("cur", pf, T, register=False)
        counted = Signal(name="counted")  # a head or a sync: pkt counts a gap
        # The flit as the next of the packet it fills: its last, bad, differing from what is
        # expected there.
        full_now = named(m, cur.n + 1 == pf, "full_now")
        flit_bad_now = named(m, ~good | (full_now & ~f.last), "flit_bad_now")
        differs = named(m, ~flit_bad_now & (f.data != self.expect_word), "differs")
        m.d.comb += old_ends.eq(s_tick_close)
        with m.If(here & f.sync):
            m.d.comb += [old_ends.eq(sel.is_open), counted.eq(1)]
            m.d.comb += [nxt.last_pkt.eq(f.pkt - 1), nxt.is_open.eq(0)]
        with m.Elif(data_here & ~late & f.head):
            m.d.comb += [old_ends.eq(sel.is_open), counted.eq(1), self.error.eq(f.last)]
            m.d.comb += [
                nxt.last_pkt.eq(f.pkt),
                nxt.is_open.eq(1),
                nxt.headless.eq(0),
                nxt.has_header.eq(good),
                nxt.header.eq(f.data[:HEADER_BITS]),
                nxt.n.eq(0),
                nxt.bad.eq(0),
                nxt.mismatch.eq(0),
            ]
        with m.Elif(data_here & ~late):
            other = named(m, open1 & (f.pkt != sel.last_pkt), "other")
            cont = named(m, open1 & ~other, "cont")
            starts = named(m, ~cont & (f.pkt == ((sel.last_pkt + 1)[:PKT_BITS])), "starts")
            m.d.comb += old_ends.eq(s_tick_close | other)
            with m.If(cont | starts):
                with m.If(cont):
                    m.d.comb += cur.packet_eq(sel)
                with m.Else():
                    m.d.comb += [cur.headless.eq(1), nxt.last_pkt.eq(f.pkt)]
                m.d.comb += self.append_index.eq(cur.n)
                ends = named(m, f.last | full_now, "ends")
                m.d.comb += [
                    cur_ends.eq(ends),
                    nxt.packet_eq(cur),
                    nxt.is_open.eq(~ends),
                    nxt.n.eq(cur.n + 1),
                    nxt.bad.eq(cur.bad | flit_bad_now),
                    nxt.mismatch.eq(cur.mismatch | differs),
                ]
            with m.Else():
                m.d.comb += nxt.is_open.eq(0)
        with m.Elif(s_tick_close):
            m.d.comb += nxt.is_open.eq(0)
        with m.If(counted):
            m.d.comb += lost.eq(f.pkt - sel.last_pkt - 1)

        # -- each VC: its state, and what ends on it ------------------------------------------
        for v, st in state.items():
            on_v = named(m, here & (f.vc == v), f"here_{v}")
            with m.If(on_v):
                m.d.sync += st.eq(nxt)
            with m.Else():
                with m.If(st.quiet <= T):
                    m.d.sync += st.quiet.eq(st.quiet + 1)
                with m.If(tick_close[v]):
                    m.d.sync += st.is_open.eq(0)
            # What ends reports a packet when it had a header; it always frees a slot.
            i = DATA_VCS.index(v)
            v_old_ends = Mux(on_v, old_ends, tick_close[v])
            with m.If(v_old_ends & st.has_header & ~st.headless):
                m.d.comb += [
                    self.pkt_valid[i].eq(1),
                    self.pkt_header[i].eq(st.header),
                    self.pkt_ok[i].eq(0),  # it ends short: padded
                    self.pkt_mismatch[i].eq(st.mismatch),
                ]
            with m.Elif(on_v & cur_ends & cur.has_header & ~cur.headless):
                m.d.comb += [
                    self.pkt_valid[i].eq(1),
                    self.pkt_header[i].eq(cur.header),
                    self.pkt_ok[i].eq(~cur.bad & ~flit_bad_now & full_now),
                    self.pkt_mismatch[i].eq(cur.mismatch | differs),
                ]
            m.d.comb += self.due[v].eq(Mux(on_v, lost + old_ends + cur_ends, tick_close[v]))

        # -- the control VC: every flit one packet, one credit; a sync only its gap
        last_ctl = Signal(PKT_BITS, init=BEFORE_FIRST_PKT)
        here = self.valid & (f.vc == VC_CTRL)
        with m.If(here):
            m.d.comb += self.due[VC_CTRL].eq((f.pkt - last_ctl - 1)[:PKT_BITS] + ~f.sync)
            m.d.sync += last_ctl.eq(Mux(f.sync, f.pkt - 1, f.pkt))
            m.d.comb += [
                self.ctl_valid.eq(~f.sync & good),
                self.ctl_header.eq(f.data[:HEADER_BITS]),
            ]
        return m


class _VcState:
    """What the reader keeps per data VC: the packet it is filling (``is_open``, whether it
    lost its head, has a usable header, the header, flits so far, any bad, any differing),
    the last counted packet number, and the tail timeout's count with what arrived last.
    ``register=False``: the same fields as combinational signals (a selected or next state)."""

    PACKET = ("headless", "has_header", "header", "n", "bad", "mismatch")

    def __init__(self, tag, pf: int, T: int, register: bool = True) -> None:
        def sig(shape, field, init=0):
            return Signal(shape, name=f"{field}_{tag}", init=init if register else 0)

        self.is_open = sig(1, "open")
        self.headless = sig(1, "headless")
        self.has_header = sig(1, "has_header")
        self.header = Signal(header_layout, name=f"header_{tag}")
        self.n = sig(range(pf + 1), "n")
        self.bad = sig(1, "bad")
        self.mismatch = sig(1, "mismatch")
        self.last_pkt = sig(PKT_BITS, "last_pkt", BEFORE_FIRST_PKT)
        self.quiet = sig(range(T + 2), "quiet", T + 1)
        self.arrived_pkt = sig(PKT_BITS, "arrived_pkt", BEFORE_FIRST_PKT)
        self.dropping = sig(1, "dropping_late")

    FIELDS = ("is_open", *PACKET, "last_pkt", "quiet", "arrived_pkt", "dropping")

    def eq(self, other: _VcState) -> list:
        return [getattr(self, k).eq(getattr(other, k)) for k in self.FIELDS]

    def packet_eq(self, other: _VcState) -> list:
        return [getattr(self, k).eq(getattr(other, k)) for k in self.PACKET]
