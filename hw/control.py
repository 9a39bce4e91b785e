"""The switch's control unit: configuration slots, and phase changes without mixing.

Storage. ``slots`` configurations of ``config_bits`` each (model/switch/config.py encoding) live in
a memory of ``word_width``-bit words, slot s word w at address ``s * n_words + w``; the
paper budgets 1.5 KB of SRAM for them. The interconnect is driven from a separate *active*
register, so writing a slot never disturbs traffic.

Configuration port ``cfg``: a stream of {slot, addr, data} words, always ready, one word per
cycle; a word with ``addr >= n_words`` is ignored.

Phase change ``select``: a stream whose payload is a slot index. The transfer completes
(``select.ready``) once the slot is active:

1. DRAIN: each input port closes as soon as it is between packets (not inside a packet,
   no flit waiting); closed ports stay closed. Once every port is closed and the
   interconnect holds no flit, no flit of the old phase remains.
2. LOAD: the slot's words are copied from the memory into the active register, one word
   per cycle (``n_words + 1`` cycles: the memory read is registered).
3. DONE: ``select.ready`` for one cycle, ports reopen.

Contract for senders: finish the old phase (all its flits accepted) before raising
``select``; new-phase flits may be offered from the next cycle on, and wait at their closed
port until the new slot is active. A port that is inside a packet or offering a flit when
``select`` rises stays open until it is between packets, so a sender that never pauses holds
the change off: the change is never applied inside a packet or to a flit in flight.

Reset: nothing inside is valid and the active configuration is the all-unicast default
(``default_config``), which is also slot 0's power-up content. ``rst`` does not clear the
slot memory: words written before it stay (the manifest's contract, "reset").
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from fredfab.hw.config_layout import config_data_layout
from fredfab.hw.params import SwitchParams
from fredfab.model.switch.config import Configuration
from fredfab.model.switch.flow import Flow
from fredfab.model.switch.router import route


def default_config(params: SwitchParams) -> Configuration:
    """The all-unicast default: every port p sends to output port p (a permutation, which
    both architectures always route; the identity keeps every port usable after reset)."""
    identity = [Flow([p], [p]) for p in range(params.ports)]
    return route(identity, params.ports, params.m, arch=params.arch).config


def n_words(params: SwitchParams) -> int:
    """Words per configuration slot."""
    return params.topology.config_layout.n_words(params.word_width)


def slot_base(m: Module, slot, nw: int) -> Signal:
    """The memory address of slot ``slot``'s first word, ``slot * nw`` (``nw``: the words a
    slot takes in the memory), registered: the multiplication then never sits on the path
    into the memory (on an FPGA it is a DSP block, and it was the control unit's slowest
    path). ``slot`` must be set at least one cycle before a copy starts (the circuit control
    unit sets it when it leaves IDLE, and drains for at least one cycle)."""
    base = Signal(range(max(2, (1 << len(slot)) * nw)), name="slot_base")
    m.d.sync += base.eq(slot * nw)
    return base


def copy_slot(m: Module, rd, base, word: Signal, active, nw: int, width: int) -> None:
    """One cycle of copying the slot whose first word is at address ``base`` (``slot_base``,
    or any expression of the slot) from the slot memory (read port ``rd``) into the
    ``active`` configuration: read word ``word`` (address ``base + word``), count on, and
    store the word read in the previous cycle, which arrives now (the read is registered).
    Words 1..nw arrive in cycles ``word`` = 1..nw, so a copy takes ``nw + 1`` cycles from
    ``word`` = 0."""
    bits = len(active)
    m.d.comb += [rd.addr.eq(base + word), rd.en.eq(1)]
    m.d.sync += word.eq(word + 1)
    with m.Switch(word):
        for w in range(1, nw + 1):
            with m.Case(w):
                lo = (w - 1) * width
                hi = min(lo + width, bits)
                m.d.sync += active[lo:hi].eq(rd.data[: hi - lo])


def cfg_layout(params: SwitchParams) -> data.StructLayout:
    return data.StructLayout(
        {
            "data": params.word_width,
            "addr": max(1, (n_words(params) - 1).bit_length()),
            "slot": max(1, (params.slots - 1).bit_length()),
        }
    )


class ControlUnit(wiring.Component):
    def __init__(self, params: SwitchParams) -> None:
        self.params = params
        self.topology = params.topology
        self.default = default_config(params)
        layout = config_data_layout(self.topology.config_layout)
        slot_bits = max(1, (params.slots - 1).bit_length())
        super().__init__(
            {
                "cfg": In(stream.Signature(cfg_layout(params))),
                "select": In(stream.Signature(slot_bits)),
                "active": Out(layout, init=layout.from_bits(self.default.to_bits())),
                "slot": Out(slot_bits),
                "reconfiguring": Out(1),
                # From the switch's input ports (before gating) and the interconnect.
                "in_valid": In(params.ports),
                "in_fire": In(params.ports),
                "in_last": In(params.ports),
                "busy": In(1),
                # To the switch's input ports: 1 = open.
                "open": Out(params.ports),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        p = self.params
        nw, width = n_words(p), p.word_width
        active = self.active.as_value()  # loaded word by word, whatever the fields
        init = self.default.to_words(width) + [0] * ((p.slots - 1) * nw)
        m.submodules.mem = mem = Memory(shape=width, depth=p.slots * nw, init=init)
        wr = mem.write_port()
        rd = mem.read_port()

        # Configuration writes.
        m.d.comb += [
            self.cfg.ready.eq(1),
            wr.addr.eq(self.cfg.payload.slot * nw + self.cfg.payload.addr),
            wr.data.eq(self.cfg.payload.data),
            wr.en.eq(
                self.cfg.valid & (self.cfg.payload.addr < nw) & (self.cfg.payload.slot < p.slots)
            ),
        ]

        # Packet tracking per input port.
        inside = Signal(p.ports)  # a packet has started and not ended on this port
        for i in range(p.ports):
            with m.If(self.in_fire[i]):
                m.d.sync += inside[i].eq(~self.in_last[i])
        closed = Signal(p.ports)
        m.d.comb += self.open.eq(~closed)

        target = Signal.like(self.slot)
        base = slot_base(m, target, nw)
        word = Signal(range(nw + 1))
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.select.valid):
                    # Close idle ports at once, so that new-phase flits offered from the
                    # next cycle on wait for the new configuration.
                    m.d.sync += [
                        target.eq(self.select.payload),
                        closed.eq(~self.in_valid & ~inside),
                    ]
                    m.next = "DRAIN"
            with m.State("DRAIN"):
                m.d.comb += self.reconfiguring.eq(1)
                m.d.sync += closed.eq(closed | (~self.in_valid & ~inside))
                with m.If(closed.all() & ~self.busy):
                    m.d.sync += word.eq(0)
                    m.next = "LOAD"
            with m.State("LOAD"):
                m.d.comb += self.reconfiguring.eq(1)
                copy_slot(m, rd, base, word, active, nw, width)
                with m.If(word == nw):
                    m.next = "DONE"
            with m.State("DONE"):
                m.d.comb += [self.reconfiguring.eq(1), self.select.ready.eq(1)]
                m.d.sync += [self.slot.eq(target), closed.eq(0)]
                m.next = "IDLE"
        return m
