"""The packet-mode FRED switch: VC input ports, the interconnect, output ports and the
packet control unit (docs/switch-rtl.md, "Packet mode").

Ports (Verilog names in the JSON manifest, hw/packet/manifest.py): ``rx[P]`` / ``tx[P]``
link flits (no ready: credit-based), ``rx_credit[P]`` / ``tx_credit[P]`` credit pulses per VC,
``rx_ack[P]`` / ``tx_ack[P]`` link-level retry state (expect, nak) of each receiving end,
``cfg`` configuration words (and each slot's check words), ``flows`` flow-table rows, and
``phase_valid``, ``phase_vc``, ``phase_index``, ``reconfiguring`` to watch the running
phase, ``slot_error`` the slots that failed their check.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fredfab.hw.interconnect import Interconnect
from fredfab.hw.packet.control import PacketControl
from fredfab.hw.packet.input_port import InputPort
from fredfab.hw.packet.layouts import CREDIT_BITS, link_signature, payload_flit_stream
from fredfab.hw.packet.link_retry import ack_layout
from fredfab.hw.packet.output_port import OutputPort
from fredfab.hw.packet.params import PacketParams
from fredfab.model.packet.format import DATA_VCS


class PacketSwitch(wiring.Component):
    def __init__(self, params: PacketParams) -> None:
        self.params = params
        P = params.ports
        self.control = PacketControl(params)
        self.interconnect = Interconnect(params.switch, payload_flit_stream(params))
        self.inputs = [InputPort(params) for _ in range(P)]
        self.outputs = [OutputPort(params, q) for q in range(P)]
        link = link_signature(params)
        ctl = self.control.signature.members
        super().__init__(
            {
                "rx": In(link).array(P),
                "rx_credit": Out(CREDIT_BITS).array(P),
                "tx": Out(link).array(P),
                "tx_credit": In(CREDIT_BITS).array(P),
                "rx_ack": Out(ack_layout).array(P),
                "tx_ack": In(ack_layout).array(P),
                "cfg": ctl["cfg"],
                "flows": ctl["flows"],
                "phase_valid": ctl["phase_valid"],
                "phase_vc": ctl["phase_vc"],
                "phase_index": ctl["phase_index"],
                "reconfiguring": ctl["reconfiguring"],
                "slot_error": ctl["slot_error"],
            }
        )

    @property
    def topology(self):
        return self.interconnect.topology

    def elaborate(self, platform) -> Module:
        m = Module()
        P = self.params.ports
        m.submodules.control = ctl = self.control
        m.submodules.interconnect = ic = self.interconnect
        wiring.connect(m, wiring.flipped(self.cfg), ctl.cfg)
        wiring.connect(m, wiring.flipped(self.flows), ctl.flows)
        m.d.comb += [
            self.phase_valid.eq(ctl.phase_valid),
            self.phase_vc.eq(ctl.phase_vc),
            self.phase_index.eq(ctl.phase_index),
            self.reconfiguring.eq(ctl.reconfiguring),
            self.slot_error.eq(ctl.slot_error),
            ic.config.eq(ctl.active),
            ctl.ic_busy.eq(ic.busy),
        ]
        for p in range(P):
            inp, out = self.inputs[p], self.outputs[p]
            m.submodules[f"in{p}"] = inp
            m.submodules[f"out{p}"] = out
            wiring.connect(m, wiring.flipped(self.rx[p]), inp.rx)
            # Into the interconnect with the port's own number as ``src``, not the header's:
            # a receiver answers the port a unicast packet really came from.
            m.d.comb += [
                ic.i[p].payload.eq(inp.o.payload),
                ic.i[p].payload.src.eq(p),
                ic.i[p].valid.eq(inp.o.valid),
                inp.o.ready.eq(ic.i[p].ready),
            ]
            wiring.connect(m, ic.o[p], out.i)
            wiring.connect(m, inp.ctrl, ctl.ctrl_in[p])
            wiring.connect(m, ctl.ctrl_out[p], out.ctrl)
            wiring.connect(m, out.tx, wiring.flipped(self.tx[p]))
            m.d.comb += [
                self.rx_credit[p].eq(inp.credit),
                out.tx_credit.eq(self.tx_credit[p]),
                self.rx_ack[p].eq(inp.ack),
                out.tx_ack.eq(self.tx_ack[p]),
                out.phase_vc.eq(ctl.phase_vc),
                out.phase_index.eq(ctl.phase_index),
                inp.commit.eq(ctl.commit[p]),
                inp.discard.eq(ctl.discard[p]),
                ctl.out_credit[p].eq(out.can_take),
                out.reserve.eq(ctl.reserve[p]),
            ]
            for v in range(len(DATA_VCS)):
                m.d.comb += ctl.head[p][v].eq(inp.head[v])
        m.d.comb += [
            ctl.in_busy.eq(Cat(i.busy for i in self.inputs)),
            ctl.out_busy.eq(Cat(o.busy for o in self.outputs)),
        ]
        return m
