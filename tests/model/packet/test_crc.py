"""The flit CRCs (model/packet/format.py) and what they miss (model/packet/crc_strength.py):
the table-driven CRC against the bit-serial definition and a published check value, the XOR
trees the RTL builds, and the distances the format states, counted exhaustively."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from fredfab.model.packet.crc_strength import (
    even_weight_only,
    missed_pairs,
    missed_quads,
    syndromes,
    undetected,
)
from fredfab.model.packet.format import CRCS, Crc, crc_for


def _serial(crc: Crc, data: int, width: int) -> int:
    """The definition: preset all ones, data bit width-1 first, no reflection."""
    reg = crc.init
    for k in range(width - 1, -1, -1):
        top = ((reg >> (crc.bits - 1)) ^ (data >> k)) & 1
        reg = ((reg << 1) & crc.mask) ^ (crc.poly if top else 0)
    return reg


@pytest.mark.parametrize("bits", sorted(CRCS))
@pytest.mark.parametrize("width", [48, 55, 64, 129, 2048])
def test_table_driven_crc_is_the_bit_serial_definition(bits: int, width: int) -> None:
    crc, rng = CRCS[bits], random.Random(bits * 1000 + width)
    for _ in range(40):
        data = rng.getrandbits(width)
        assert crc.value(data, width) == _serial(crc, data, width)


def test_crc16_check_value() -> None:
    # CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no xorout): "123456789"
    # gives 0x29B1 (the catalogue's check value).
    assert CRCS[16].value(int.from_bytes(b"123456789", "big"), 72) == 0x29B1


@pytest.mark.parametrize("bits", sorted(CRCS))
def test_xor_trees_and_word_steps_are_the_crc(bits: int) -> None:
    crc, rng = CRCS[bits], random.Random(bits)
    rows, const = crc.matrix(100)
    step = crc.step_matrix(12)
    for _ in range(30):
        data = rng.getrandbits(100)
        value = const
        for j, row in enumerate(rows):
            value ^= (bin(data & row).count("1") & 1) << j
        assert value == crc.value(data, 100)
        words = [rng.getrandbits(12) for _ in range(4)]
        reg = crc.init
        for w in words:
            both = w | (reg << 12)
            reg = sum((bin(both & row).count("1") & 1) << j for j, row in enumerate(step))
        assert reg == crc.value(int("".join(f"{w:012b}" for w in words), 2), 48)


@pytest.mark.parametrize("bits", sorted(CRCS))
def test_odd_flips_are_always_detected(bits: int) -> None:
    crc, rng = CRCS[bits], random.Random(bits + 7)
    assert bin(crc.poly | (1 << bits)).count("1") % 2 == 0  # divisible by x + 1
    for width in (64, 256):
        for _ in range(300):
            data = rng.getrandbits(width)
            error = sum(1 << b for b in rng.sample(range(width), rng.choice((1, 3, 5))))
            assert crc.value(data ^ error, width) != crc.value(data, width)


def test_syndromes_find_what_the_crc_misses() -> None:
    # An error over data bits is missed iff the XOR of its positions' syndromes (shifted
    # past the CRC field) is zero: the same verdict as recomputing the CRC.
    crc, width = CRCS[8], 256
    s = syndromes(crc, width + crc.bits)
    for i, j in itertools.combinations(range(0, width, 7), 2):
        same = crc.value((1 << i) | (1 << j), width) == crc.value(0, width)
        assert same == (s[i + crc.bits] == s[j + crc.bits])


@pytest.mark.parametrize("bits", sorted(CRCS))
def test_distance_four_up_to_the_stated_length(bits: int) -> None:
    crc = CRCS[bits]
    width = min(crc.hd_bits, 4096)
    assert missed_pairs(crc, width) == 0
    if crc.hd_bits < 4096:
        assert missed_pairs(crc, crc.hd_bits + 1) > 0


def test_crc8_misses_pairs_127_apart_on_wide_flits() -> None:
    # x^8 + x^2 + x + 1 = (x + 1) * (a primitive polynomial of degree 7, period 127).
    assert missed_pairs(CRCS[8], 256) == sum(
        1 for i, j in itertools.combinations(range(256 + 8), 2) if (j - i) % 127 == 0
    )


def test_four_flips_on_the_default_flit() -> None:
    assert missed_quads(CRCS[8], 64) > 0 and missed_quads(CRCS[32], 64) == 0


@pytest.mark.slow
def test_crc32c_has_distance_six_on_512_byte_flits() -> None:
    """No 2- or 4-bit error over 4096 data bits and the CRC escapes CRC-32C (odd ones never
    do): every error of up to 5 bits in a paper-sized flit is caught."""
    assert missed_quads(CRCS[32], 4096) == 0


def test_the_check_is_sized_to_the_flit() -> None:
    assert [crc_for(w).bits for w in (48, 64, 65, 512, 513, 4096)] == [8, 8, 16, 16, 32, 32]


def _weights(crc: Crc, data_bits: int) -> list[int]:
    """The code's weight distribution, by enumerating its 2^data_bits codewords: error
    patterns over data and CRC that the CRC misses are exactly the nonzero codewords
    (data error d with CRC error value(d) ^ value(0))."""
    const = crc.value(0, data_bits)
    words = np.zeros(1, dtype=np.int64)
    checks = np.zeros(1, dtype=np.int64)
    for b in range(data_bits):
        words = np.concatenate([words, words | (1 << b)])
        checks = np.concatenate([checks, checks ^ (crc.value(1 << b, data_bits) ^ const)])
    both = (words << crc.bits) | checks
    weight = np.array([bin(int(w)).count("1") for w in both])
    return np.bincount(weight, minlength=data_bits + crc.bits + 1).tolist()


@pytest.mark.parametrize("bits, data_bits", [(8, 14), (8, 16), (16, 16)])
def test_missed_patterns_and_undetected_rate_are_the_code_weights(bits, data_bits):
    """Counted from the syndromes, the missed 2- and 4-flip patterns are the code's
    weight-2 and weight-4 codewords, and the undetected probability is the exact one
    (every weight summed) to within the terms it leaves out."""
    crc = CRCS[bits]
    weights = _weights(crc, data_bits)
    assert weights[0] == 1 and sum(weights[1::2]) == 0  # divisible by x + 1
    assert missed_pairs(crc, data_bits) == weights[2] == 0
    assert missed_quads(crc, data_bits) == weights[4] > 0
    n = data_bits + crc.bits
    for ber in (1e-6, 1e-3):
        exact = sum(a * ber**w * (1 - ber) ** (n - w) for w, a in enumerate(weights) if w)
        value, estimated = undetected(crc, data_bits, ber)
        assert not estimated and value == pytest.approx(exact, rel=1e-3 if ber > 1e-4 else 1e-9)


def test_crc8_misses_pairs_on_512_byte_flits_and_crc16_does_not():
    # The paper's flit (4096 data bits): CRC-8 is distance 2 there (pairs 127 apart, the
    # period of its primitive factor), CRC-16/CCITT distance 4.
    assert missed_pairs(CRCS[8], 4096) == sum((4096 + 8 - d) for d in range(127, 4096 + 8, 127))
    assert missed_pairs(CRCS[16], 4096) == 0
    p8, _ = undetected(CRCS[8], 4096, 1e-9)
    p16, _ = undetected(CRCS[16], 4096, 1e-9)
    assert p8 > 1e10 * p16


def test_a_random_code_share_for_distance_six():
    # CRC-32C misses no 2- or 4-flip pattern on the default flit, so the rate is the
    # weight-6 estimate: C(n, 6) / 2^31 (even-weight codewords only), marked as estimated.
    crc, n, ber = CRCS[32], 64 + 32, 1e-6
    assert even_weight_only(crc) and not even_weight_only(Crc(8, 0x1D, "odd", 0))
    value, estimated = undetected(crc, 64, ber)
    assert estimated
    assert value == pytest.approx(math.comb(n, 6) / 2**31 * ber**6 * (1 - ber) ** (n - 6))
