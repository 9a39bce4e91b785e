"""A link's faults in RTL: model/packet/faults.py ``LinkFaults.step`` (drops, corruption, bursts,
silences, drawn from the same two xorshift64 sequences), cycle for cycle, between an
endpoint and the switch in the hardware soak. It steps every cycle it is enabled (flit or
not) and passes the flit as the far end sees it; it counts what it did."""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Elaboratable, Module, Mux, Signal, Value

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
    flip_mask,
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

        # What a corruption flips, and whether the CRC sees it, depend on ``b`` alone, and
        # corruptions are rare: so both are registers, computed from the next element of
        # ``b`` only in cycles after which a corruption may come (a fault draw in range, or
        # a burst on), and otherwise left alone. A simulator then skips their logic in most
        # cycles; the flit is the model's whenever it is corrupted.
        crc = self.params.link.crc
        preset = crc.value(0, width)  # the CRC is linear: its share of zero data

        def syndrome(mask: int) -> int:  # the CRC of the flipped bits alone
            return crc.value(mask, width) ^ preset

        flip = Signal(width, init=flip_mask(seed_b, width))
        seen = Signal(init=syndrome(flip.init) != 0)
        b_next = sb.next
        burst_starts = Signal()
        may_corrupt = Signal()
        m.d.comb += may_corrupt.eq(
            (sa.next[:DROP_BITS] < t["corrupt"]) | (burst_left != 0) | burst_starts
        )
        with m.If(may_corrupt):
            # Up to three positions (b[16 j : 16 j + 16] * width) >> 16, each a one-hot: a
            # one shifted by the position. The CRC is linear: a corruption of a flit with a
            # good CRC (every sender writes one) goes unseen when the CRC of its flipped bits
            # alone, without the preset, is zero: the XOR of the CRC matrix's columns at the
            # distinct flipped positions (a table lookup each, where parities of masked
            # words would cost a simulator a gather of bits).
            pos_bits = max(1, (width - 1).bit_length())
            p = [(b_next[16 * j : 16 * j + 16] * width)[16 : 16 + pos_bits] for j in range(3)]
            code = b_next[48:50]

            def at_least(n: int) -> Value:  # does b_next flip n bits or more
                return Cat(*(code == c for c, k in enumerate(FLIP_COUNT) if k >= n)).any()

            second = at_least(2) & (p[1] != p[0])
            third = at_least(3) & (p[2] != p[0]) & (p[2] != p[1])
            column = Array(Const(syndrome(1 << k), crc.bits) for k in range(width))
            m.d.sync += [
                flip.eq(
                    (Const(1, 1) << p[0])[:width]
                    | Mux(second, (Const(1, 1) << p[1])[:width], 0)
                    | Mux(third, (Const(1, 1) << p[2])[:width], 0)
                ),
                seen.eq(
                    (column[p[0]] ^ Mux(second, column[p[1]], 0) ^ Mux(third, column[p[2]], 0)) != 0
                ),
            ]

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
                    m.d.comb += burst_starts.eq(1)
        with m.If(drop):
            m.d.comb += self.o_valid.eq(0)
        with m.If(corrupt):
            m.d.comb += self.o.data.eq(self.i.data ^ flip)
        missed = corrupt & ~seen
        m.d.sync += [
            self.flits.eq(self.flits + self.i_valid),
            self.dropped.eq(self.dropped + drop),
            self.corrupted.eq(self.corrupted + corrupt),
            self.undetected.eq(self.undetected + missed),
            self.silences.eq(self.silences + starts_silence),
        ]
        return m
