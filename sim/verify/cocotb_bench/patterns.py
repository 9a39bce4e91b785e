"""Idle and backpressure patterns: when a flit source pauses and when a flit sink holds ready low.

One definition for both sides of the co-simulation: the scenario builder
(fredfab.sim.verify.scenarios names the patterns it uses, ``PATTERNS``) writes them into the
scenario file with ``to_json``, and the cocotb bench reads them back with ``pattern_from_json``
and turns each into a pause generator, the iterator of booleans (True = pause this cycle)
that cocotbext-axi's ``set_pause_generator`` takes. The kinds are those of the verilog-axis
benches: never pause, pause at random, a fixed periodic pattern, and long stalls.

Pure Python (no cocotb), so that the scenario side imports it without a simulator.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass

PauseGenerator = Iterator[bool]
"""One value per clock cycle: True = pause (a source offers no new flit, a sink is not ready)."""


@dataclass(frozen=True)
class Always:
    """Never pause: a source offers a flit whenever it has one, a sink is always ready."""

    kind = "none"

    def to_json(self) -> dict:
        return {"kind": self.kind}

    def pauses(self, rng: random.Random) -> PauseGenerator:
        return itertools.repeat(False)


@dataclass(frozen=True)
class RandomPause:
    """Pause in each cycle with probability ``p``, independently."""

    p: float
    kind = "random"

    def __post_init__(self) -> None:
        if not 0.0 <= self.p < 1.0:
            raise ValueError(f"random pattern: p = {self.p} must be in [0, 1) (1 never goes)")

    def to_json(self) -> dict:
        return {"kind": self.kind, "p": self.p}

    def pauses(self, rng: random.Random) -> PauseGenerator:
        p = self.p
        while True:
            yield rng.random() < p


@dataclass(frozen=True)
class Periodic:
    """A fixed go/pause sequence (1 = go), repeated, starting at a random offset so that ports
    driven by the same pattern do not pause in lockstep."""

    pattern: tuple[int, ...]
    kind = "periodic"

    def __post_init__(self) -> None:
        if not any(self.pattern) or any(v not in (0, 1) for v in self.pattern):
            raise ValueError(
                f"periodic pattern {list(self.pattern)}: needs 0s and 1s with at least one 1 (go)"
            )

    def to_json(self) -> dict:
        return {"kind": self.kind, "pattern": list(self.pattern)}

    def pauses(self, rng: random.Random) -> PauseGenerator:
        seq = [not v for v in self.pattern]
        i = rng.randrange(len(seq))
        while True:
            yield seq[i]
            i = (i + 1) % len(seq)


@dataclass(frozen=True)
class Stalls:
    """Long stalls: alternating runs of go and pause cycles, each run's length drawn uniformly
    from ``go`` or ``pause`` (inclusive bounds), starting with a go run."""

    go: tuple[int, int]
    pause: tuple[int, int]
    kind = "stalls"

    def __post_init__(self) -> None:
        for name, (lo, hi) in (("go", self.go), ("pause", self.pause)):
            if not 1 <= lo <= hi:
                raise ValueError(f"stalls pattern: {name} = [{lo}, {hi}] needs 1 <= lo <= hi")

    def to_json(self) -> dict:
        return {"kind": self.kind, "go": list(self.go), "pause": list(self.pause)}

    def pauses(self, rng: random.Random) -> PauseGenerator:
        go = True
        while True:
            lo, hi = self.go if go else self.pause
            for _ in range(rng.randint(lo, hi)):
                yield not go
            go = not go


Pattern = Always | RandomPause | Periodic | Stalls
KINDS = {c.kind: c for c in (Always, RandomPause, Periodic, Stalls)}


def pattern_from_json(spec: dict) -> Pattern:
    """The pattern ``spec`` (as written by ``to_json``) describes."""
    kind = spec.get("kind")
    if kind == "none":
        return Always()
    if kind == "random":
        return RandomPause(float(spec["p"]))
    if kind == "periodic":
        return Periodic(tuple(int(v) for v in spec["pattern"]))
    if kind == "stalls":
        go, pause = spec["go"], spec["pause"]
        return Stalls((int(go[0]), int(go[1])), (int(pause[0]), int(pause[1])))
    raise ValueError(f"unknown pattern kind {kind!r}; have {', '.join(KINDS)}")
