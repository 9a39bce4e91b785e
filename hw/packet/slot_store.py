"""Configuration slots of the packet-mode switch, each with a check word: the memory, its
``cfg`` port, and the copy of a slot into the active configuration that verifies it
(docs/switch-rtl.md, "Configuration slots"; the check: model/packet/slot_check.py).

Memory. Slot s takes ``stride = n_words + check_words`` words from address ``s * stride``:
its configuration words, then its check. Slots 0..K-1 are the user's (``cfg`` writes 1..K-1;
slot 0 holds the all-unicast default, which packet mode never loads: the unicast index is
served by the rounds), K..K+P-1 the P read-only unicast rounds (routed at generation,
written with their checks in the initial contents).

``cfg``: {slot, addr, data}, always ready; a word with ``addr >= stride`` or ``slot >= K`` is
ignored. Any word written into a user slot clears its ``bad`` bit: the slot is checked again
the next time it is loaded.

Load: ``load`` (one cycle, with ``load_slot`` the memory slot) copies words 0..n_words-1
into ``active`` (fredfab.hw.control.copy_slot), runs the CRC over them and reads the check
words after them; ``n_words + check_words + 1`` cycles later ``done`` pulses with ``ok``. A
user slot whose check fails gets its ``bad`` bit (sticky until the slot is written); the
active configuration then holds that slot's words, which the control unit must not use
(it loads another phase before it commits anything).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from fredfab.hw.config_layout import config_data_layout
from fredfab.hw.control import copy_slot, default_config, n_words
from fredfab.hw.params import SwitchParams
from fredfab.model.packet.flow_tables import shift_flows
from fredfab.model.packet.slot_check import SLOT_CHECK, check_words, with_check
from fredfab.model.switch.router import route


def stride(s: SwitchParams) -> int:
    """Memory words per slot: the configuration words and the check words."""
    return n_words(s) + check_words(s.word_width)


def cfg_layout(s: SwitchParams) -> data.StructLayout:
    """A ``cfg`` word: ``data`` into word ``addr`` (configuration words, then the check)
    of user slot ``slot``."""
    return data.StructLayout(
        {
            "data": s.word_width,
            "addr": max(1, (stride(s) - 1).bit_length()),
            "slot": max(1, (s.slots - 1).bit_length()),
        }
    )


def round_words(s: SwitchParams) -> list[int]:
    """The configuration words of the P unicast rounds, round 0 first (no checks)."""
    words = []
    for r in range(s.ports):
        config = route(shift_flows(s.ports, r), s.ports, s.m, arch=s.arch).config
        words += config.to_words(s.word_width)
    return words


def initial_contents(s: SwitchParams) -> list[int]:
    """The memory after power-up: slot 0 the default, other user slots zero (their check
    fails until the loader writes them), then the rounds, each with its check."""
    nw, width = n_words(s), s.word_width
    rounds = round_words(s)
    out = with_check(default_config(s).to_words(width), width)
    out += [0] * ((s.slots - 1) * stride(s))
    for r in range(s.ports):
        out += with_check(rounds[r * nw : (r + 1) * nw], width)
    return out


class SlotStore(wiring.Component):
    """The slot memory and the checked copy (module docstring)."""

    def __init__(self, s: SwitchParams) -> None:
        self.s = s
        layout = config_data_layout(s.topology.config_layout)
        default = layout.from_bits(default_config(s).to_bits())
        slots = s.slots + s.ports
        super().__init__(
            {
                "cfg": In(stream.Signature(cfg_layout(s))),
                "load": In(1),
                "load_slot": In(range(slots)),
                "active": Out(layout, init=default),
                "busy": Out(1),
                "done": Out(1),
                "ok": Out(1),
                "bad": Out(s.slots),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        s = self.s
        K, nw, cw, width = s.slots, n_words(s), check_words(s.word_width), s.word_width
        words = stride(s)
        m.submodules.mem = mem = Memory(
            shape=width, depth=(K + s.ports) * words, init=initial_contents(s)
        )
        wr, rd = mem.write_port(), mem.read_port()
        c = self.cfg.payload
        writes = self.cfg.valid & (c.addr < words) & (c.slot < K)
        m.d.comb += [
            self.cfg.ready.eq(1),
            wr.addr.eq(c.slot * words + c.addr),
            wr.data.eq(c.data),
            wr.en.eq(writes),
        ]

        slot = Signal.like(self.load_slot)
        word = Signal(range(nw + cw + 1))
        crc = Signal(SLOT_CHECK.bits)
        check = Signal(cw * width)  # the check words read so far, least significant first
        # One CRC step over a word: XOR trees of the register and the word.
        step = Signal(SLOT_CHECK.bits)
        both = Cat(rd.data, crc)
        for j, row in enumerate(SLOT_CHECK.step_matrix(width)):
            taps = [both[k] for k in range(len(both)) if (row >> k) & 1]
            m.d.comb += step[j].eq(Cat(*taps).xor() if taps else 0)
        # The last check word arrives in the cycle that ends the load.
        got = Signal(SLOT_CHECK.bits)
        m.d.comb += got.eq(Cat(check[: (cw - 1) * width], rd.data)[: SLOT_CHECK.bits])

        wrote = Signal(K)
        for k in range(K):
            m.d.comb += wrote[k].eq(writes & (c.slot == k))
        failed = Signal(K)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.load):
                    m.d.sync += [slot.eq(self.load_slot), word.eq(0), crc.eq(SLOT_CHECK.init)]
                    m.next = "COPY"
            with m.State("COPY"):
                m.d.comb += self.busy.eq(1)
                copy_slot(m, rd, slot * words, word, self.active.as_value(), nw, width)
                with m.If((word >= 1) & (word <= nw)):
                    m.d.sync += crc.eq(step)
                for j in range(cw - 1):
                    with m.If(word == nw + 1 + j):
                        m.d.sync += check[j * width : (j + 1) * width].eq(rd.data)
                with m.If(word == nw + cw):
                    ok = got == crc
                    m.d.comb += [self.done.eq(1), self.ok.eq(ok)]
                    with m.If(~ok & (slot < K)):
                        for k in range(K):
                            m.d.comb += failed[k].eq(slot == k)
                    m.next = "IDLE"
        # Sticky until the slot is written again (a write in the failing cycle wins).
        m.d.sync += self.bad.eq((self.bad | failed) & ~wrote)
        return m
