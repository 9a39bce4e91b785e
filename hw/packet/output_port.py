"""The output port of the packet-mode switch: payload flits of the running phase and control
packets onto one link to the NPU (docs/switch-rtl.md, "Output port").

Credits are spent when a packet is *committed*, not when its header goes out: the control
unit starts a flow's packet only when every output it goes to shows ``can_take`` on its VC
(a credit not yet spent), and pulses ``reserve`` on those outputs in the commit cycle. So a
packet that forks to several outputs starts only when every one of them can take it whole,
and none of them ever waits for a credit inside a packet.

Per link cycle the port sends at most one flit, chosen in this order:

1. a control packet from ``ctrl``, when a credit of the control VC is held: one flit, head
   and last, VC 3, the control VC's ``pkt``. Inside a data packet it takes only cycles in
   which no flit of the packet waits in ``i``, so it never widens a gap inside a packet;
   between packets it goes before a waiting packet's header, one control flit per packet
   boundary (so at full rate control keeps a ninth of the link and a header waits at most
   one cycle), and in any cycle no data waits.
2. inside a data packet: the next payload flit from ``i`` (head 0, ``last`` as the
   interconnect marks it), in the VC latched at the header.
3. between packets, with no packet waiting: a credit sync (model/packet/link.py): a VC
   with no credit left and no flit sent on it for ``sync_interval`` cycles gets a sync flit
   (its next ``pkt``), the lowest such VC first, so the NPU returns the credits of packets
   lost whole on this link.
4. otherwise, when ``i`` offers the first flit of a packet: the header flit,
   ``Header(phase_vc, DATA, phase_index, i.seq, i.src, dst=port)`` in data bits [0, 48)
   with the rest zero. The first flit itself stays in ``i`` and follows in a later cycle,
   so one packet from the interconnect makes ``packet_flits + 1`` link flits.

A gap inside a packet on ``tx`` is therefore never longer than one in the flits reaching
the port from the interconnect (hw/packet/protocol.py bounds those for the manifest).

After reset each data VC holds ``fmt.data_depth`` credits and the control VC
``fmt.ctrl_depth``: the NPU's receive buffers are taken to be the switch's. Bit v of
``tx_credit`` gives one back.

Choices where the design leaves room (simplest consistent behaviour):

* ``pkt`` starts at 0 on every VC and advances by one (mod 16) per packet sent on it; every
  flit of a packet carries its packet's ``pkt`` (a receiver tells a body flit whose head was
  lost from the body of the packet it is filling by it).
* ``phase_vc`` is read once, at the header, and held for the packet's body: a phase change
  can never split a packet across two VCs. ``phase_vc`` names a data VC; were it the
  control VC, no data packet would start (data never enters the NPU's control buffer).
* Every flit gets the CRC of its data; a payload flit the interconnect marks ``bad`` goes
  out with the link's ``bad`` symbol, so the NPU sees a damaged flit forwarded cut-through
  (and link-level retry, which checks the CRC, does not replay it).

Link-level retry (hw/packet/link_retry.py ``RetrySender``, when the format has it): the
flit chosen goes to the link through the sender's replay buffer, which stamps its ``lseq``
and, while it replays what ``tx_ack`` says was lost, holds the port's choice back (nothing
is chosen in a cycle it is not ready).

Timing: ``tx`` is a register (one cycle from ``i`` or ``ctrl`` to the link), the CRC is
computed before it. ``tx_credit`` and ``reserve`` only feed the credit counters, so no path
runs from them to ``tx`` or to any ready. ``i.ready`` is a register; ``ctrl.ready`` depends
on registers and on ``i.valid``.
"""

from __future__ import annotations

from amaranth.hdl import Array, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from fredfab.hw.packet.crc import crc_of
from fredfab.hw.packet.layouts import (
    CREDIT_BITS,
    header_layout,
    link_signature,
    payload_flit_stream,
)
from fredfab.hw.packet.link_retry import RetrySender, ack_layout, offer_layout
from fredfab.hw.packet.params import PacketParams
from fredfab.model.packet.format import (
    DATA_VCS,
    HEADER_FIELDS,
    KIND_DATA,
    N_VCS,
    PKT_BITS,
    VC_CTRL,
)
from fredfab.model.packet.link import sync_interval


class OutputPort(wiring.Component):
    """Output port ``port`` of a packet-mode switch.

    i           -- payload flits of the running phase from the interconnect.
    phase_vc    -- the running phase's VC, read when a packet starts.
    phase_index -- the running phase's configuration index, written into headers.
    ctrl        -- control headers (ACK/NACK) to send on this link.
    tx          -- the link to the NPU (valid + payload, no ready).
    tx_credit   -- bit v: the NPU freed one packet slot of VC v.
    tx_ack      -- the NPU's link-level retry state (expect, nak).
    reserve     -- bit v: a packet of data VC v was committed for this output: spend a
                   credit of v now.
    can_take    -- bit v: a credit of data VC v is held and not yet spent.
    busy        -- inside a data packet: its header is out, its last flit not yet.
    """

    def __init__(self, params: PacketParams, port: int) -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < params.ports:
            raise ValueError(f"port must be an integer in 0..{params.ports - 1}, got {port!r}")
        self._params = params
        self._port = port
        super().__init__(
            {
                "i": In(payload_flit_stream(params)),
                "phase_vc": In(2),
                "phase_index": In(dict(HEADER_FIELDS)["index"]),
                "ctrl": In(stream.Signature(header_layout)),
                "tx": Out(link_signature(params)),
                "tx_credit": In(CREDIT_BITS),
                "tx_ack": In(ack_layout),
                "reserve": In(len(DATA_VCS)),
                "can_take": Out(len(DATA_VCS)),
                "busy": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        params = self._params
        fmt = params.fmt
        crc = params.link.crc

        depths = [fmt.ctrl_depth if v == VC_CTRL else fmt.data_depth for v in range(N_VCS)]
        credits = [
            Signal(range(depth + 1), init=depth, name=f"credits_{v}")
            for v, depth in enumerate(depths)
        ]
        pkts = Array(Signal(PKT_BITS, name=f"pkt_{v}") for v in range(N_VCS))
        has_credit = Signal(N_VCS)
        for v in range(N_VCS):
            m.d.comb += has_credit[v].eq(credits[v] != 0)
        m.d.comb += self.can_take.eq(has_credit[: len(DATA_VCS)])

        m.submodules.retry = retry = RetrySender(params)
        m.d.comb += retry.ack.eq(self.tx_ack)
        wiring.connect(m, retry.tx, wiring.flipped(self.tx))
        free = retry.i.ready  # the link takes a new flit this cycle

        in_packet = Signal()  # a data packet's header is out and its last flit is not
        packet_vc = Signal(2)  # its VC, latched at the header
        m.d.comb += self.busy.eq(in_packet)

        # Cycles since each VC's last flit went out (1 in the cycle after it), saturating at
        # the sync interval: a sync is due ``sync_interval`` cycles after the last flit, as
        # model/packet/link.py's LinkSender.sync_due counts.
        interval = sync_interval(fmt)
        quiet = [
            Signal(range(interval + 1), init=interval, name=f"quiet_{v}") for v in range(N_VCS)
        ]
        sync_due = Signal(N_VCS)
        for v in range(N_VCS):
            m.d.comb += sync_due[v].eq(~has_credit[v] & (quiet[v] == interval))
        sync_vc = Signal(2)
        for v in reversed(range(N_VCS)):
            with m.If(sync_due[v]):
                m.d.comb += sync_vc.eq(v)

        # Which flit goes out this cycle: control (but never in place of a waiting flit of
        # the open packet), the open packet's body, a sync, a new packet's header.
        send_ctrl = Signal()
        send_body = Signal()
        send_sync = Signal()
        send_head = Signal()
        ctrl_before = Signal()  # the flit sent last cycle was a control flit
        ctrl_free = free & has_credit[VC_CTRL] & (~self.i.valid | (~in_packet & ~ctrl_before))
        m.d.comb += [
            self.ctrl.ready.eq(ctrl_free),
            send_ctrl.eq(self.ctrl.valid & ctrl_free),
            self.i.ready.eq(free & in_packet),
            send_body.eq(self.i.valid & self.i.ready),
            send_sync.eq(free & ~send_ctrl & ~in_packet & ~self.i.valid & sync_due.any()),
            send_head.eq(
                free
                & ~send_ctrl
                & ~send_sync
                & ~in_packet
                & self.i.valid
                & (self.phase_vc != VC_CTRL)
            ),
        ]

        header = Signal(header_layout)
        m.d.comb += [
            header.vc.eq(self.phase_vc),
            header.kind.eq(KIND_DATA),
            header.index.eq(self.phase_index),
            header.seq.eq(self.i.payload.seq),
            header.src.eq(self.i.payload.src),
            header.dst.eq(self._port),
        ]

        flit = Signal(offer_layout(params))
        with m.If(send_ctrl):
            m.d.comb += [
                flit.data.eq(self.ctrl.payload.as_value()),
                flit.head.eq(1),
                flit.last.eq(1),
                flit.vc.eq(VC_CTRL),
                flit.pkt.eq(pkts[VC_CTRL]),
            ]
        with m.Elif(send_body):
            m.d.comb += [
                flit.data.eq(self.i.payload.data.as_value()),
                flit.last.eq(self.i.payload.last),
                flit.vc.eq(packet_vc),
                flit.pkt.eq(pkts[packet_vc] - 1),  # its packet's: advanced at the header
                flit.bad.eq(self.i.payload.bad),
            ]
        with m.Elif(send_sync):
            m.d.comb += [flit.vc.eq(sync_vc), flit.pkt.eq(pkts[sync_vc]), flit.sync.eq(1)]
        with m.Elif(send_head):
            m.d.comb += [
                flit.data.eq(header.as_value()),
                flit.head.eq(1),
                flit.vc.eq(self.phase_vc),
                flit.pkt.eq(pkts[self.phase_vc]),
            ]
        m.d.comb += flit.crc.eq(crc_of(flit.data, crc))

        sending = send_ctrl | send_body | send_sync | send_head
        m.d.comb += [retry.i.valid.eq(sending), retry.i.payload.eq(flit)]
        m.d.sync += ctrl_before.eq(send_ctrl)
        for v in range(N_VCS):
            with m.If(sending & (flit.vc == v)):
                m.d.sync += quiet[v].eq(1)
            with m.Elif(quiet[v] != interval):
                m.d.sync += quiet[v].eq(quiet[v] + 1)

        with m.If(send_head):
            m.d.sync += [in_packet.eq(1), packet_vc.eq(self.phase_vc)]
            m.d.sync += pkts[self.phase_vc].eq(pkts[self.phase_vc] + 1)
        with m.Elif(send_body & self.i.payload.last):
            m.d.sync += in_packet.eq(0)
        with m.If(send_ctrl):
            m.d.sync += pkts[VC_CTRL].eq(pkts[VC_CTRL] + 1)

        # A credit returned and one spent on the same VC in one cycle cancel out. Data
        # credits are spent by the commit (``reserve``), control credits by the flit.
        for v in range(N_VCS):
            spend = send_ctrl if v == VC_CTRL else self.reserve[v]
            m.d.sync += credits[v].eq(credits[v] + self.tx_credit[v] - spend)
        return m
