"""The FRED switch: control unit + interconnect, with the ports an integrator sees.

Ports (Verilog names in the JSON manifest, hw/manifest.py):

* ``i[P]``, ``o[P]``: flit streams (hw/flit.py), one per switch port.
* ``cfg``: configuration words into the slots (hw/control.py).
* ``select``: change the active slot (completes when the slot is active).
* ``slot``: the active slot; ``reconfiguring``: a phase change is in progress.

Latency: a flit accepted at an input in cycle t is valid at its outputs in cycle
t + register_depth * regs_per_stage (model/switch/latency.py; hw/manifest.py ``latency_cycles``):
``register_depth`` is the number of stages on the Clos and the longest path on the
crossbar. With outputs ready and inputs valid every active port moves one flit per cycle.
"""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fredfab.hw.control import ControlUnit
from fredfab.hw.flit import flit_stream
from fredfab.hw.interconnect import Interconnect
from fredfab.hw.params import SwitchParams


class FredSwitch(wiring.Component):
    def __init__(self, params: SwitchParams) -> None:
        self.params = params
        self.control = ControlUnit(params)
        self.interconnect = Interconnect(params)
        flit = flit_stream(params.element.bits, params.lanes)
        ctl = self.control.signature.members
        super().__init__(
            {
                "i": In(flit).array(params.ports),
                "o": Out(flit).array(params.ports),
                "cfg": ctl["cfg"],
                "select": ctl["select"],
                "slot": ctl["slot"],
                "reconfiguring": ctl["reconfiguring"],
            }
        )

    @property
    def topology(self):
        return self.interconnect.topology

    @property
    def latency_cycles(self) -> int:
        return self.params.latency_cycles

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.control = ctl = self.control
        m.submodules.interconnect = ic = self.interconnect
        wiring.connect(m, wiring.flipped(self.cfg), ctl.cfg)
        wiring.connect(m, wiring.flipped(self.select), ctl.select)
        m.d.comb += [
            self.slot.eq(ctl.slot),
            self.reconfiguring.eq(ctl.reconfiguring),
            ic.config.eq(ctl.active),
            ctl.busy.eq(ic.busy),
        ]
        for p in range(self.params.ports):
            port, inner = self.i[p], ic.i[p]
            gate = ctl.open[p]
            m.d.comb += [
                inner.payload.eq(port.payload),
                inner.valid.eq(port.valid & gate),
                port.ready.eq(inner.ready & gate),
                ctl.in_valid[p].eq(port.valid),
                ctl.in_fire[p].eq(port.valid & port.ready),
                ctl.in_last[p].eq(port.payload.last),
            ]
            wiring.connect(m, ic.o[p], wiring.flipped(self.o[p]))
        return m
