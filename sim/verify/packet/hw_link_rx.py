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
        pkt_mask = (1 << PKT_BITS) - 1
        T = self.timeout
        for v in DATA_VCS:
            is_open = Signal(name=f"open_{v}")
            headless = Signal(name=f"headless_{v}")
            has_header = Signal(name=f"has_header_{v}")
            header = Signal(header_layout, name=f"header_{v}")
            n = Signal(range(pf + 1), name=f"n_{v}")
            bad = Signal(name=f"bad_{v}")
            mismatch = Signal(name=f"mismatch_{v}")
            last_pkt = Signal(PKT_BITS, init=pkt_mask, name=f"last_pkt_{v}")
            quiet = Signal(range(T + 2), init=T + 1, name=f"quiet_{v}")
            arrived_pkt = Signal(PKT_BITS, init=pkt_mask, name=f"arrived_pkt_{v}")
            dropping = Signal(name=f"dropping_late_{v}")

            here = named(m, self.valid & (f.vc == v), f"here_{v}")
            data_here = named(m, here & ~f.sync, f"data_here_{v}")
            silent = named(m, quiet > T, f"silent_{v}")
            tick_close = named(m, is_open & silent, f"tick_close_{v}")
            open1 = named(m, is_open & ~tick_close, f"open1_{v}")
            late = named(
                m, data_here & ~f.head & (f.pkt == arrived_pkt) & (silent | dropping), f"late_{v}"
            )
            with m.If(here):
                m.d.sync += [
                    quiet.eq(1),
                    arrived_pkt.eq(Mux(f.sync, f.pkt - 1, f.pkt)),
                    dropping.eq(late),
                ]
            with m.Elif(quiet <= T):
                m.d.sync += quiet.eq(quiet + 1)

            # The packet that ends now: the open one (old) or the one this flit fills (cur).
            old_ends = Signal(name=f"old_ends_{v}")
            cur_ends = Signal(name=f"cur_ends_{v}")
            lost = Signal(PKT_BITS, name=f"lost_{v}")
            cur_header = Signal(header_layout, name=f"cur_header_{v}")
            cur_has, cur_headless = Signal(name=f"cur_has_{v}"), Signal(name=f"cur_hl_{v}")
            cur_n = Signal(range(pf + 1), name=f"cur_n_{v}")
            cur_bad, cur_mis = Signal(name=f"cur_bad_{v}"), Signal(name=f"cur_mis_{v}")
            counted = Signal(name=f"counted_{v}")  # a head or a sync: pkt counts a gap
            # The flit as the next of the packet it fills: its last, bad, differing from
            # what is expected there.
            full_now = named(m, cur_n + 1 == pf, f"full_now_{v}")
            flit_bad_now = named(m, ~good | (full_now & ~f.last), f"flit_bad_now_{v}")
            differs = named(m, ~flit_bad_now & (f.data != self.expect_word), f"differs_{v}")
            m.d.comb += old_ends.eq(tick_close)
            with m.If(here & f.sync):
                m.d.comb += [old_ends.eq(is_open), counted.eq(1)]
                m.d.sync += [last_pkt.eq(f.pkt - 1), is_open.eq(0)]
            with m.Elif(data_here & ~late & f.head):
                m.d.comb += [old_ends.eq(is_open), counted.eq(1), self.error.eq(f.last)]
                m.d.sync += [
                    last_pkt.eq(f.pkt),
                    is_open.eq(1),
                    headless.eq(0),
                    has_header.eq(good),
                    header.eq(f.data[:HEADER_BITS]),
                    n.eq(0),
                    bad.eq(0),
                    mismatch.eq(0),
                ]
            with m.Elif(data_here & ~late):
                other = named(m, open1 & (f.pkt != last_pkt), f"other_{v}")
                cont = named(m, open1 & ~other, f"cont_{v}")
                starts = named(m, ~cont & (f.pkt == ((last_pkt + 1)[:PKT_BITS])), f"starts_{v}")
                m.d.comb += old_ends.eq(tick_close | other)
                with m.If(cont | starts):
                    with m.If(cont):
                        m.d.comb += [
                            cur_header.eq(header),
                            cur_has.eq(has_header),
                            cur_headless.eq(headless),
                            cur_n.eq(n),
                            cur_bad.eq(bad),
                            cur_mis.eq(mismatch),
                        ]
                    with m.Else():
                        m.d.comb += cur_headless.eq(1)
                        m.d.sync += last_pkt.eq(f.pkt)
                    full, flit_bad = full_now, flit_bad_now
                    m.d.comb += self.append_index.eq(cur_n)
                    ends = named(m, f.last | full, f"ends_{v}")
                    m.d.comb += cur_ends.eq(ends)
                    m.d.sync += [
                        is_open.eq(~ends),
                        headless.eq(cur_headless),
                        has_header.eq(cur_has),
                        header.eq(cur_header),
                        n.eq(cur_n + 1),
                        bad.eq(cur_bad | flit_bad),
                        mismatch.eq(cur_mis | differs),
                    ]
                with m.Else():
                    m.d.sync += is_open.eq(0)
            with m.Elif(tick_close):
                m.d.sync += is_open.eq(0)
            with m.If(counted):
                m.d.comb += lost.eq(f.pkt - last_pkt - 1)

            # What ends reports a packet when it had a header; it always frees a slot.
            i = DATA_VCS.index(v)
            with m.If(old_ends & has_header & ~headless):
                m.d.comb += [
                    self.pkt_valid[i].eq(1),
                    self.pkt_header[i].eq(header),
                    self.pkt_ok[i].eq(0),  # it ends short: padded
                    self.pkt_mismatch[i].eq(mismatch),
                ]
            with m.Elif(cur_ends & cur_has & ~cur_headless):
                m.d.comb += [
                    self.pkt_valid[i].eq(1),
                    self.pkt_header[i].eq(cur_header),
                    self.pkt_ok[i].eq(~cur_bad & ~flit_bad_now & full_now),
                    self.pkt_mismatch[i].eq(cur_mis | differs),
                ]
            m.d.comb += self.due[v].eq(lost + old_ends + cur_ends)

        # -- the control VC: every flit one packet, one credit; a sync only its gap
        last_ctl = Signal(PKT_BITS, init=pkt_mask)
        here = self.valid & (f.vc == VC_CTRL)
        with m.If(here):
            m.d.comb += self.due[VC_CTRL].eq((f.pkt - last_ctl - 1)[:PKT_BITS] + ~f.sync)
            m.d.sync += last_ctl.eq(Mux(f.sync, f.pkt - 1, f.pkt))
            m.d.comb += [
                self.ctl_valid.eq(~f.sync & good),
                self.ctl_header.eq(f.data[:HEADER_BITS]),
            ]
        return m
