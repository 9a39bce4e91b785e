"""The output port of the packet-mode switch: payload flits of the running phase and control
packets onto one link to the NPU (docs/switch-rtl.md, "Output port").

Per link cycle the port sends at most one flit, chosen in this order:

1. a control packet from ``ctrl``, when a credit of the control VC is held: one flit, head
   and last, VC 3, the control VC's ``pkt``. It takes the link before data in any cycle;
   between two flits of a data packet it only delays the rest, since the receiver frames
   each VC on its own.
2. inside a data packet: the next payload flit from ``i`` (head 0, ``last`` as the
   interconnect marks it), in the VC latched at the header.
3. otherwise, when ``i`` offers the first flit of a packet and a credit of ``phase_vc`` is
   held: the header flit, ``Header(phase_vc, DATA, phase_index, i.seq, i.src, dst=port)`` in
   data bits [0, 48) with the rest zero. The first flit itself stays in ``i`` and follows
   in a later cycle, so one packet from the interconnect makes ``packet_flits + 1`` link flits.

A packet (data or control) starts only while its VC holds a credit and spends it; bit v of
``tx_credit`` gives one back. After reset each data VC holds ``fmt.data_depth`` credits and
the control VC ``fmt.ctrl_depth``: the NPU's receive buffers are taken to be the switch's.

Choices where the design leaves room (simplest consistent behaviour):

* ``pkt`` starts at 0 on every VC and advances by one (mod 16) per packet sent on it; every
  flit of a packet carries its packet's ``pkt`` (a receiver tells a body flit whose head was
  lost from the body of the packet it is filling by it).
* ``phase_vc`` is read once, at the header, and held for the packet's body: a phase change
  can never split a packet across two VCs. ``phase_vc`` names a data VC; were it the
  control VC, no data packet would start (data never enters the NPU's control buffer).
* The header flit always has a good CRC (the port writes it); a payload flit with ``bad``
  set gets ``crc_of(data) ^ STOMP``, so the NPU sees a damaged flit forwarded cut-through.

Timing: ``tx`` is a register (one cycle from ``i`` or ``ctrl`` to the link), the CRC is
computed before it. ``tx_credit`` only feeds the credit counters, so no path runs from it
to ``tx`` or to any ready. ``i.ready`` and ``ctrl.ready`` depend on registers and on
``ctrl.valid`` (control wins the cycle), never on ``i.valid``.
"""

from __future__ import annotations

from amaranth.hdl import Array, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from fredfab.hw.packet.crc import crc_of
from fredfab.hw.packet.layouts import (
    CREDIT_BITS,
    header_layout,
    link_layout,
    link_signature,
    payload_flit_stream,
)
from fredfab.hw.packet.params import PacketParams
from fredfab.model.packet.format import (
    HEADER_FIELDS,
    KIND_DATA,
    N_VCS,
    PKT_BITS,
    STOMP,
    VC_CTRL,
)


class OutputPort(wiring.Component):
    """Output port ``port`` of a packet-mode switch.

    i           -- payload flits of the running phase from the interconnect.
    phase_vc    -- the running phase's VC, read when a packet starts.
    phase_index -- the running phase's configuration index, written into headers.
    ctrl        -- control headers (ACK/NACK) to send on this link.
    tx          -- the link to the NPU (valid + payload, no ready).
    tx_credit   -- bit v: the NPU freed one packet slot of VC v.
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
                "busy": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        fmt = self._params.fmt

        depths = [fmt.ctrl_depth if v == VC_CTRL else fmt.data_depth for v in range(N_VCS)]
        credits = [
            Signal(range(depth + 1), init=depth, name=f"credits_{v}")
            for v, depth in enumerate(depths)
        ]
        pkts = Array(Signal(PKT_BITS, name=f"pkt_{v}") for v in range(N_VCS))
        has_credit = Signal(N_VCS)
        for v in range(N_VCS):
            m.d.comb += has_credit[v].eq(credits[v] != 0)

        in_packet = Signal()  # a data packet's header is out and its last flit is not
        packet_vc = Signal(2)  # its VC, latched at the header
        m.d.comb += self.busy.eq(in_packet)

        # Which flit goes out this cycle: control first, then the open packet's body, then a
        # new packet's header.
        send_ctrl = Signal()
        send_body = Signal()
        send_head = Signal()
        m.d.comb += [
            send_ctrl.eq(self.ctrl.valid & has_credit[VC_CTRL]),
            self.ctrl.ready.eq(has_credit[VC_CTRL]),
            self.i.ready.eq(in_packet & ~send_ctrl),
            send_body.eq(self.i.valid & self.i.ready),
            send_head.eq(
                ~send_ctrl
                & ~in_packet
                & self.i.valid
                & (self.phase_vc != VC_CTRL)
                & has_credit.bit_select(self.phase_vc, 1)
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

        flit = Signal(link_layout(self._params))
        bad = Signal()
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
                bad.eq(self.i.payload.bad),
            ]
        with m.Elif(send_head):
            m.d.comb += [
                flit.data.eq(header.as_value()),
                flit.head.eq(1),
                flit.vc.eq(self.phase_vc),
                flit.pkt.eq(pkts[self.phase_vc]),
            ]
        m.d.comb += flit.crc.eq(crc_of(flit.data) ^ Mux(bad, Const(STOMP, 8), 0))

        m.d.sync += [
            self.tx.valid.eq(send_ctrl | send_body | send_head),
            self.tx.payload.eq(flit),
        ]

        with m.If(send_head):
            m.d.sync += [in_packet.eq(1), packet_vc.eq(self.phase_vc)]
            m.d.sync += pkts[self.phase_vc].eq(pkts[self.phase_vc] + 1)
        with m.Elif(send_body & self.i.payload.last):
            m.d.sync += in_packet.eq(0)
        with m.If(send_ctrl):
            m.d.sync += pkts[VC_CTRL].eq(pkts[VC_CTRL] + 1)

        # A credit returned and one spent on the same VC in one cycle cancel out.
        for v in range(N_VCS):
            spend = send_ctrl if v == VC_CTRL else send_head & (self.phase_vc == v)
            m.d.sync += credits[v].eq(credits[v] + self.tx_credit[v] - spend)
        return m
