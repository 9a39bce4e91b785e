"""Idle and backpressure patterns (sim/verify/cocotb_bench/patterns.py): the one definition the
scenario builder writes and the cocotb bench draws from."""

from __future__ import annotations

import itertools
import random

import pytest

from fredfab.sim.verify.cocotb_bench.patterns import (
    Always,
    Periodic,
    RandomPause,
    Stalls,
    pattern_from_json,
)
from fredfab.sim.verify.scenarios import PATTERN_NAMES, PATTERNS


def _draw(pattern, n: int, seed: int = 0) -> list[bool]:
    return list(itertools.islice(pattern.pauses(random.Random(seed)), n))


def _runs(values: list[bool]) -> list[tuple[bool, int]]:
    return [(v, len(list(g))) for v, g in itertools.groupby(values)]


@pytest.mark.parametrize("name", PATTERN_NAMES)
def test_named_patterns_survive_the_scenario_file(name):
    pattern = PATTERNS[name]
    assert pattern_from_json(pattern.to_json()) == pattern
    assert _draw(pattern_from_json(pattern.to_json()), 500, 3) == _draw(pattern, 500, 3)


def test_always_never_pauses():
    assert not any(_draw(Always(), 1000))


def test_random_pauses_at_its_rate_and_follows_its_seed():
    draws = _draw(RandomPause(0.4), 20000)
    assert abs(sum(draws) / len(draws) - 0.4) < 0.02
    assert _draw(RandomPause(0.4), 200, 1) != _draw(RandomPause(0.4), 200, 2)


def test_periodic_repeats_its_pattern_from_a_random_offset():
    pattern = Periodic((1, 1, 1, 0))
    offsets = set()
    for seed in range(20):
        draws = _draw(pattern, 40, seed)
        assert draws[4:] == draws[:-4] and sum(draws[:4]) == 1
        offsets.add(draws.index(True))
    assert offsets == {0, 1, 2, 3}


def test_stalls_alternate_runs_within_their_bounds():
    runs = _runs(_draw(Stalls(go=(1, 12), pause=(8, 40)), 5000))[:-1]  # the last is cut off
    assert runs[0][0] is False  # a go run first
    go = [n for paused, n in runs if not paused]
    pause = [n for paused, n in runs if paused]
    assert min(go) >= 1 and max(go) <= 12 and min(pause) >= 8 and max(pause) <= 40
    assert len(set(go)) > 5 and len(set(pause)) > 5


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: RandomPause(1.0), "p = 1.0"),
        (lambda: Periodic((0, 0)), "at least one 1"),
        (lambda: Stalls(go=(0, 3), pause=(1, 2)), "go = [0, 3]"),
        (lambda: pattern_from_json({"kind": "bursty"}), "unknown pattern kind 'bursty'"),
    ],
)
def test_bad_patterns_say_what_is_wrong(make, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        make()
