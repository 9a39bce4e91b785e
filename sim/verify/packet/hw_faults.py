"""A link's faults in RTL: model/packet/faults.py ``LinkFaults.step`` (drops, corruption, bursts,
silences, drawn from the same two xorshift64 sequences), cycle for cycle, between an
endpoint and the switch in the hardware soak. It steps every cycle it is enabled (flit or
not) and passes the flit as the far end sees it; it counts what it did."""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Elaboratable, Module, Mux, Signal

from fredfab.hw.named import named
from fredfab.hw.packet.layouts import link_layout
from fredfab.hw.packet.params import PacketParams
from fredfab.model.packet.faults import (
    BURST_BITS,
    BURST_EXTRA_BITS,
    DROP_BITS,
    FLIP_COUNT,
    SILENCE_BITS,
    SILENCE_LEN_BITS,
    SILENCE_MIN,
    SILENCE_STEP,
    FaultRates,
    fault_seeds,
)
from fredfab.sim.verify.soak_harness import XorShift64

COUNT_BITS = 32


class FaultInjector(Elaboratable):
    """``i_valid``/``i`` in, ``o_valid``/``o`` out (combinationally); counters:
    ``flits``, ``dropped``, ``corrupted``, ``undetected``, ``bursts``, ``silences``."""

    def __init__(self, params: PacketParams, rates: FaultRates, link_seed: int) -> None:
        self.params, self.rates, self.link_seed = params, rates, link_seed
        layout = link_layout(params)
        self.i_valid, self.i = Signal(), Signal(layout)
        self.o_valid, self.o = Signal(), Signal(layout)
        self.flits = Signal(COUNT_BITS)
        self.dropped = Signal(COUNT_BITS)
        self.corrupted = Signal(COUNT_BITS)
        self.undetected = Signal(COUNT_BITS)
        self.bursts = Signal(COUNT_BITS)
        self.silences = Signal(COUNT_BITS)

    def elaborate(self, platform) -> Module:
        m = Module()
        t = self.rates.thresholds()
        width = self.params.switch.data_width
        seed_a, seed_b = fault_seeds(self.link_seed)
        m.submodules.a = sa = XorShift64(seed_a)
        m.submodules.b = sb = XorShift64(seed_b)
        m.d.comb += [sa.advance.eq(1), sb.advance.eq(1)]
        a, b = sa.value, sb.value
        longest = SILENCE_MIN + SILENCE_STEP * ((1 << SILENCE_LEN_BITS) - 1)
        silent_left = Signal(range(longest + 1))
        burst_left = Signal(BURST_EXTRA_BITS + 1)
        burst_drop = Signal()

        # The flipped bits: up to three positions (b[16 j : 16 j + 16] * width) >> 16, each a
        # one-hot: a one shifted by the position (2 ** bits wide, under twice the flit; a
        # table of one-hots costs the simulator a mux tree per lookup, every cycle).
        pos_bits = max(1, (width - 1).bit_length())
        positions = [
            named(m, (b[16 * j : 16 * j + 16] * width)[16 : 16 + pos_bits], f"flip_at_{j}")
            for j in range(3)
        ]
        count = Signal(2)
        with m.Switch(b[48:50]):
            for code, n in enumerate(FLIP_COUNT):
                with m.Case(code):
                    m.d.comb += count.eq(n)
        flip = Signal(width)
        m.d.comb += flip.eq(
            (Const(1, 1) << positions[0])[:width]
            | Mux(count >= 2, (Const(1, 1) << positions[1])[:width], 0)
            | Mux(count >= 3, (Const(1, 1) << positions[2])[:width], 0)
        )
        # The CRC is linear: a corruption of a flit with a good CRC (every sender writes
        # one) goes unseen when the CRC of its flipped bits alone, without the preset, is
        # zero: row j of the CRC's matrix times the flipped bits (the distinct positions,
        # as ``flip`` holds each once), a parity of a masked word per CRC bit.
        rows, _ = self.params.link.crc.matrix(width)
        syndrome = Signal(len(rows))
        m.d.comb += syndrome.eq(Cat(*((flip & Const(row, width)).xor() for row in rows)))

        drop = Signal()
        corrupt = Signal()
        starts_silence = Signal()
        m.d.comb += [self.o.eq(self.i), self.o_valid.eq(self.i_valid)]
        with m.If(silent_left != 0):
            m.d.sync += silent_left.eq(silent_left - 1)
            m.d.comb += drop.eq(self.i_valid)
        with m.Elif((t["silence"] != 0) & (a[44 : 44 + SILENCE_BITS] < t["silence"])):
            m.d.comb += [starts_silence.eq(1), drop.eq(self.i_valid)]
            m.d.sync += silent_left.eq(
                SILENCE_MIN + SILENCE_STEP * b[50 : 50 + SILENCE_LEN_BITS] - 1
            )
        with m.Elif(self.i_valid):
            with m.If(burst_left != 0):
                m.d.sync += burst_left.eq(burst_left - 1)
                m.d.comb += [drop.eq(burst_drop), corrupt.eq(~burst_drop)]
            with m.Else():
                u = a[:DROP_BITS]
                is_drop = u < t["drop"]
                is_corrupt = ~is_drop & (u < t["corrupt"])
                m.d.comb += [drop.eq(is_drop), corrupt.eq(is_corrupt)]
                with m.If((is_drop | is_corrupt) & (a[32 : 32 + BURST_BITS] < t["burst"])):
                    m.d.sync += [
                        burst_left.eq(1 + a[40 : 40 + BURST_EXTRA_BITS]),
                        burst_drop.eq(is_drop),
                    ]
                    m.d.sync += self.bursts.eq(self.bursts + 1)
        with m.If(drop):
            m.d.comb += self.o_valid.eq(0)
        with m.If(corrupt):
            m.d.comb += self.o.data.eq(self.i.data ^ flip)
        missed = corrupt & (syndrome == 0)
        m.d.sync += [
            self.flits.eq(self.flits + self.i_valid),
            self.dropped.eq(self.dropped + drop),
            self.corrupted.eq(self.corrupted + corrupt),
            self.undetected.eq(self.undetected + missed),
            self.silences.eq(self.silences + starts_silence),
        ]
        return m
