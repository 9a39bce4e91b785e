"""A wafer fabric in RTL: FRED switches joined by pipelined links, one phase change for all.

Ports (Verilog names in the JSON manifest, hw/fabric_manifest.py), shaped like a switch's so
that the switch's benches drive a fabric unchanged:

* ``i[N]``, ``o[N]``: flit streams of the boundary ports, boundary port k = fabric node k
  (NPUs, then I/O controllers; model/switch/fabric_wiring.py).
* ``cfg``: configuration words {slot, addr, data}. The fabric's slot is every switch's slot of
  that index; its words are the switches' words one after the other (switch order of
  FabricWiring, each ``words_per_slot`` long): address ``base[k] + w`` is word w of switch k.
* ``select``: change every switch to a slot, without mixing phases anywhere (below).
* ``slot``: the active slot; ``reconfiguring``: a phase change is in progress.

Links. Every wire (boundary to switch, switch to switch, switch to boundary) is a chain of
``link_delay`` skid buffers (hw/skid.py): ``link_delay`` cycles of latency at one flit per
cycle, and backpressure travels back one slice per cycle without losing a flit.

Phase change. A switch drains only its own interconnect (hw/control.py), so a flit of the old
phase still in a link between two switches could meet the new configuration of the next
switch. The fabric therefore drains as a whole before any switch changes:

1. DRAIN: each boundary input closes as soon as it is between packets (the switch's rule);
   once all are closed and no switch interconnect or link holds a flit, the fabric is empty.
2. SELECT: ``select`` goes to every switch at once; each completes on its own (its ports are
   already idle, so it only copies its slot, ``words_per_slot + 1`` cycles).
3. DONE: once every switch completed, ``select.ready`` for one cycle; boundary inputs reopen.

The senders' contract is the switch's: finish the old phase (every flit accepted) before
raising ``select``; new-phase flits may be offered from the next cycle and wait at the closed
boundary ports.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from fredfab.hw.control import n_words
from fredfab.hw.fabric_params import FabricParams
from fredfab.hw.flit import flit_stream
from fredfab.hw.skid import SkidBuffer
from fredfab.hw.switch import FredSwitch
from fredfab.model.switch.fabric_wiring import BOUNDARY


def word_bases(params: FabricParams) -> list[int]:
    """First fabric configuration address of every switch (FabricWiring order)."""
    bases, k = [], 0
    for site in params.wiring.switches:
        bases.append(k)
        k += n_words(params.switch_params(site))
    return bases


def fabric_words(params: FabricParams) -> int:
    """Configuration words of one fabric slot (all switches)."""
    return sum(n_words(params.switch_params(s)) for s in params.wiring.switches)


def fabric_cfg_layout(params: FabricParams) -> data.StructLayout:
    return data.StructLayout(
        {
            "data": params.word_width,
            "addr": max(1, (fabric_words(params) - 1).bit_length()),
            "slot": max(1, (params.slots - 1).bit_length()),
        }
    )


def instance_name(name: str) -> str:
    """A switch instance's name in the Verilog hierarchy (``L1.0`` -> ``sw_L1_0``)."""
    return "sw_" + "".join(c if c.isalnum() else "_" for c in name)


class FredFabric(wiring.Component):
    def __init__(self, params: FabricParams) -> None:
        self.params = params
        self.wiring = params.wiring
        self.switches = [FredSwitch(params.switch_params(s)) for s in self.wiring.switches]
        flit = flit_stream(self.switches[0].params.element.bits, params.lanes)
        self._flit = flit
        n = len(self.wiring.boundary)
        slot_bits = max(1, (params.slots - 1).bit_length())
        super().__init__(
            {
                "i": In(flit).array(n),
                "o": Out(flit).array(n),
                "cfg": In(stream.Signature(fabric_cfg_layout(params))),
                "select": In(stream.Signature(slot_bits)),
                "slot": Out(slot_bits),
                "reconfiguring": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        for site, sw in zip(self.wiring.switches, self.switches, strict=True):
            m.submodules[instance_name(site.name)] = sw
        self._configuration(m)
        n = len(self.wiring.boundary)
        open_ = Signal(n, init=(1 << n) - 1)
        busy = []
        gated = []
        for k in range(n):
            port = self.i[k]
            g = self._flit.create(path=("gate", str(k)))
            m.d.comb += [
                g.payload.eq(port.payload),
                g.valid.eq(port.valid & open_[k]),
                port.ready.eq(g.ready & open_[k]),
            ]
            gated.append(g)
        for w in self.wiring.wires:
            if w.src.switch == BOUNDARY:
                src = gated[w.src.port]
            else:
                src = self.switches[w.src.switch].o[w.src.port]
            if w.dst.switch == BOUNDARY:
                dst = wiring.flipped(self.o[w.dst.port])
            else:
                dst = self.switches[w.dst.switch].i[w.dst.port]
            busy += self._link(m, w, src, dst)
        for sw in self.switches:
            busy.append(sw.interconnect.busy)
        self._phase_change(m, open_, _any(busy))
        return m

    def _link(self, m: Module, w, src, dst) -> list:
        """``link_delay`` skid buffers from ``src`` to ``dst``; their busy flags."""
        busy = []
        for d in range(self.params.link_delay):
            skid = SkidBuffer(self._flit)
            name = f"link_{w.src.switch}_{w.src.port}_{w.dst.switch}_{w.dst.port}_{d}"
            m.submodules[name.replace("-", "b")] = skid
            wiring.connect(m, src, skid.i)
            src = skid.o
            busy.append(skid.busy)
        wiring.connect(m, src, dst)
        return busy

    def _configuration(self, m: Module) -> None:
        m.d.comb += self.cfg.ready.eq(1)
        for base, sw in zip(word_bases(self.params), self.switches, strict=True):
            nw = n_words(sw.params)
            addr = self.cfg.payload.addr
            # No lower bound for the first switch: `addr >= 0` is constant (lint UNSIGNED).
            mine = (addr < base + nw) & (addr >= base) if base else addr < nw
            m.d.comb += [
                sw.cfg.valid.eq(self.cfg.valid & mine),
                sw.cfg.payload.slot.eq(self.cfg.payload.slot),
                sw.cfg.payload.addr.eq(addr - base),
                sw.cfg.payload.data.eq(self.cfg.payload.data),
            ]

    def _phase_change(self, m: Module, open_: Signal, busy) -> None:
        n = len(self.wiring.boundary)
        inside = Signal(n)  # a packet has started and not ended on this boundary input
        for k in range(n):
            port = self.i[k]
            with m.If(port.valid & port.ready):
                m.d.sync += inside[k].eq(~port.payload.last)
        in_valid = Signal(n)
        m.d.comb += in_valid.eq(Cat(*(port.valid for port in self.i)))
        closed = Signal(n)
        m.d.comb += open_.eq(~closed)
        target = Signal.like(self.slot)
        done = Signal(len(self.switches))
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.select.valid):
                    m.d.sync += [target.eq(self.select.payload), closed.eq(~in_valid & ~inside)]
                    m.next = "DRAIN"
            with m.State("DRAIN"):
                m.d.comb += self.reconfiguring.eq(1)
                m.d.sync += closed.eq(closed | (~in_valid & ~inside))
                with m.If(closed.all() & ~busy):
                    m.next = "SELECT"
            with m.State("SELECT"):
                m.d.comb += self.reconfiguring.eq(1)
                now = Signal(len(self.switches))
                for k, sw in enumerate(self.switches):
                    m.d.comb += [
                        sw.select.payload.eq(target),
                        sw.select.valid.eq(~done[k]),
                        now[k].eq(done[k] | sw.select.ready),
                    ]
                m.d.sync += done.eq(now)
                with m.If(now.all()):
                    m.next = "DONE"
            with m.State("DONE"):
                m.d.comb += [self.reconfiguring.eq(1), self.select.ready.eq(1)]
                m.d.sync += [self.slot.eq(target), closed.eq(0), done.eq(0)]
                m.next = "IDLE"


def _any(signals: list) -> object:
    return Cat(*signals).any() if signals else Const(0)
