"""Fault injection, and what the flit CRC detects of the errors it injects."""

from __future__ import annotations

import itertools
import random

import pytest

from fredfab.model.packet.faults import LinkFaults
from fredfab.model.packet.format import LinkFlit, crc8


def _flit(data: int, width: int) -> LinkFlit:
    return LinkFlit(data, head=True, last=False, vc=2, pkt=5, crc=crc8(data, width))


@pytest.mark.parametrize("width", [64, 256])
@pytest.mark.parametrize("flips", [1, 3])
def test_odd_bit_errors_are_always_detected(width: int, flips: int) -> None:
    rng = random.Random(width * 10 + flips)
    for _ in range(2000):
        data = rng.getrandbits(width)
        error = sum(1 << b for b in rng.sample(range(width), flips))
        assert crc8(data ^ error, width) != crc8(data, width)


def _missed_pairs(width: int) -> list[tuple[int, int]]:
    """2-bit errors the CRC misses. It is linear with init 0 (crc(d ^ e) = crc(d) ^ crc(e)),
    so an error is missed iff its own CRC is 0, whatever the data; checked exhaustively."""
    return [
        (i, j)
        for i, j in itertools.combinations(range(width), 2)
        if crc8((1 << i) | (1 << j), width) == 0
    ]


@pytest.mark.parametrize("width", [64, 256])
def test_crc_is_linear_in_the_data(width: int) -> None:
    rng = random.Random(width)
    for _ in range(500):
        a, b = rng.getrandbits(width), rng.getrandbits(width)
        assert crc8(a ^ b, width) == crc8(a, width) ^ crc8(b, width)


def test_two_bit_errors_are_detected_on_64_bits() -> None:
    assert _missed_pairs(64) == []
    rng = random.Random(1)
    for _ in range(2000):
        data = rng.getrandbits(64)
        error = sum(1 << b for b in rng.sample(range(64), 2))
        assert crc8(data ^ error, 64) != crc8(data, 64)


def test_two_bit_errors_on_256_bits_are_missed_only_127_apart() -> None:
    # x^8 + x^2 + x + 1 = (x + 1) * (a primitive polynomial of degree 7, period 127).
    missed = _missed_pairs(256)
    apart_127 = [(i, j) for i, j in itertools.combinations(range(256), 2) if (j - i) % 127 == 0]
    assert missed == apart_127
    assert len(missed) == 131
    rng = random.Random(2)
    data = rng.getrandbits(256)
    assert crc8(data ^ 1 ^ (1 << 127), 256) == crc8(data, 256)


def test_faults_drop_and_corrupt_data_only() -> None:
    width = 64
    faults = LinkFaults(drop_rate=0.2, corrupt_rate=0.3, seed=7, data_bits=width)
    rng = random.Random(3)
    kept = changed = 0
    for _ in range(5000):
        flit = _flit(rng.getrandbits(width), width)
        out = faults.apply(flit)
        if out is None:
            continue
        kept += 1
        assert (out.head, out.last, out.vc, out.pkt, out.crc) == (
            flit.head, flit.last, flit.vc, flit.pkt, flit.crc,
        )  # fmt: skip
        flipped = bin(out.data ^ flit.data).count("1")
        assert flipped in (0, 1, 2, 3)
        assert out.data < 1 << width
        if flipped:
            changed += 1
            assert not out.crc_ok
    assert faults.flits == 5000
    assert faults.dropped == 5000 - kept
    assert faults.corrupted == changed
    assert faults.undetected == 0
    assert 800 < faults.dropped < 1200 and 0.25 < changed / kept < 0.35


def test_faults_are_repeatable_from_the_seed() -> None:
    flits = [_flit(d, 64) for d in range(200)]
    runs = []
    for _ in range(2):
        faults = LinkFaults(0.1, 0.1, seed=9, data_bits=64)
        runs.append([faults.apply(f) for f in flits])
    assert runs[0] == runs[1]
    assert None in runs[0]
    assert any(o not in (None, f) for o, f in zip(runs[0], flits, strict=True))


@pytest.mark.parametrize("rates", [(1.0, 0.0), (0.0, 1.0), (-0.1, 0.0)])
def test_rates_must_be_in_unit_interval(rates: tuple[float, float]) -> None:
    with pytest.raises(ValueError, match=r"in \[0, 1\)"):
        LinkFaults(*rates, seed=0, data_bits=64)
