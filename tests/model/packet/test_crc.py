"""The flit CRCs (model/packet/format.py) and what they miss (model/packet/crc_strength.py):
the table-driven CRC against the bit-serial definition and a published check value, the XOR
trees the RTL builds, and the distances the format states, counted exhaustively."""

from __future__ import annotations

import itertools
import random

import pytest

from fredfab.model.packet.crc_strength import missed_pairs, missed_quads, syndromes
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
