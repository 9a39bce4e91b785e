"""Payloads a hardware endpoint can regenerate from (stream seed, packet, flit) alone, and the
sums a receiver of a reduction expects from them: the traffic of the hardware soak
(fredfab.sim.verify.packet.hw_soak) and of its Python reference.

Word ``f`` of packet ``k`` of a stream: per 64-bit chunk j (least significant first),
``xs(xs(seed + k * 2**24 + f * 2**16 + j * 2**8 mod 2**64))`` with ``xs`` one xorshift64
step (model/prng.py), cut to the flit's data bits. Go-Back-N resends packet k by
regenerating it, so no buffer holds what was sent. A receiver of a reduction expects the
lane-wise wrapping sum of its flow's inputs' words: integer element types only, whose sum
does not depend on the order the switch adds them in (float reductions stay with the cocotb
bench, checked against the functional model in the hardware's order).
"""

from __future__ import annotations

from collections.abc import Sequence

from fredfab.model.prng import MASK64, xorshift64

#: Where packet, flit and chunk numbers enter the 64-bit state (packets up to 2**40,
#: flits up to 256, chunks up to 256 stay distinct).
K_SHIFT, F_SHIFT, J_SHIFT = 24, 16, 8


def payload_word(seed: int, k: int, f: int, data_bits: int) -> int:
    out = 0
    for j in range(-(-data_bits // 64)):
        x = (seed + (k << K_SHIFT) + (f << F_SHIFT) + (j << J_SHIFT)) & MASK64
        out |= xorshift64(xorshift64(x)) << (64 * j)
    return out & ((1 << data_bits) - 1)


def packet_payload(seed: int, k: int, packet_flits: int, data_bits: int) -> list[int]:
    return [payload_word(seed, k, f, data_bits) for f in range(packet_flits)]


def lane_sum(words: Sequence[int], lane_bits: int, lanes: int) -> int:
    """The lane-wise sum, modulo 2**lane_bits, of flit words."""
    mask, out = (1 << lane_bits) - 1, 0
    for lane in range(lanes):
        total = sum((w >> (lane * lane_bits)) & mask for w in words) & mask
        out |= total << (lane * lane_bits)
    return out
