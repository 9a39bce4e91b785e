"""The link fault model (model/packet/faults.py): drops and corruption at their rates, bursts,
silences, control symbols never touched, repeatable from its seed."""

from __future__ import annotations

import random

import pytest

from fredfab.model.packet.faults import (
    SILENCE_MIN,
    SILENCE_STEP,
    FaultRates,
    LinkFaults,
)
from fredfab.model.packet.format import PacketFormat

LINK = PacketFormat().link(64)


def _flits(n: int, seed: int = 3):
    rng = random.Random(seed)
    return [LINK.flit(rng.getrandbits(64), head=True, vc=2, pkt=5) for _ in range(n)]


def test_drops_and_corruption_at_their_rates_data_only() -> None:
    faults = LinkFaults(FaultRates(drop=0.2, corrupt=0.3), 7, LINK)
    kept = changed = 0
    for flit in _flits(5000):
        out = faults.step(flit)
        if out is None:
            continue
        kept += 1
        assert (out.head, out.last, out.vc, out.pkt, out.crc, out.sync) == (
            flit.head, flit.last, flit.vc, flit.pkt, flit.crc, flit.sync,
        )  # fmt: skip
        flipped = bin(out.data ^ flit.data).count("1")
        assert flipped in (0, 1, 2, 3) and out.data < 1 << 64
        if flipped:
            changed += 1
            assert not LINK.ok(out)
    assert faults.flits == 5000 and faults.dropped == 5000 - kept
    assert faults.corrupted == changed and faults.undetected == 0
    assert 850 < faults.dropped < 1150 and 1350 < changed < 1650
    assert faults.bursts == faults.silences == 0


def test_bursts_lose_runs_of_flits() -> None:
    faults = LinkFaults(FaultRates(drop=0.01, burst=1.0), 2, LINK)
    lost = [faults.step(f) is None for f in _flits(20000)]
    runs, n = [], 0
    for x in lost + [False]:
        if x:
            n += 1
        elif n:
            runs.append(n)
            n = 0
    assert faults.bursts == len(runs) and min(runs) >= 2 and max(runs) <= 9
    assert sum(runs) == faults.dropped


def test_a_silent_link_loses_everything_for_a_while() -> None:
    faults = LinkFaults(FaultRates(silence=1e-3), 5, LINK)
    flits = _flits(200)
    seen = [faults.step(flits[c % 200] if c % 3 else None) for c in range(30000)]
    assert faults.silences > 5 and faults.silenced == faults.dropped > 0
    # A silence loses every cycle's flit for SILENCE_MIN to that + 127 steps cycles.
    gaps, n = [], 0
    for c, out in enumerate(seen):
        if c % 3 and out is None:
            n += 1
        elif c % 3 and n:
            gaps.append(n)
            n = 0
    assert min(gaps) >= SILENCE_MIN * 2 // 3 - 1
    assert max(gaps) <= (SILENCE_MIN + 127 * SILENCE_STEP) * 2 // 3 + 2


def test_repeatable_from_the_seed_and_stepped_every_cycle() -> None:
    flits = _flits(300)
    runs = []
    for _ in range(2):
        faults = LinkFaults(FaultRates(0.1, 0.1, burst=0.3), 9, LINK)
        runs.append([faults.step(f) for f in flits])
    assert runs[0] == runs[1] and None in runs[0]
    # Idle cycles draw too: the same flits with idle cycles between them fare otherwise.
    faults = LinkFaults(FaultRates(0.1, 0.1, burst=0.3), 9, LINK)
    spaced = [
        faults.step(f if k % 2 else None) for k, f in enumerate(x for f in flits for x in (None, f))
    ]
    assert spaced[1::2] != runs[0]


@pytest.mark.parametrize(
    "rates, message",
    [
        ({"drop": 1.0}, r"in \[0, 1\)"),
        ({"corrupt": -0.1}, r"in \[0, 1\)"),
        ({"drop": 0.6, "corrupt": 0.5}, "below 1"),
        ({"silence": 1e-9}, "at least"),
    ],
)
def test_rates_are_checked(rates, message) -> None:
    with pytest.raises(ValueError, match=message):
        FaultRates(**rates)
