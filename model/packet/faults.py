"""Fault injection on a link, the model the benches use to test repair and Go-Back-N, and the
reference of the hardware injector (fredfab.sim.verify.packet.hw_faults: the same draws from
the same xorshift sequences, cycle for cycle).

It drops whole flits or flips data bits only: ``head``, ``last``, ``vc``, ``pkt`` and
``sync`` are link control symbols that a real link protects with their own code
(model/packet/format.py). Three kinds of fault, each at its own rate:

* a flit is dropped with ``drop``, or else has 1 to 3 data bits flipped with ``corrupt``;
* a fault starts a *burst* with ``burst``: it and the next 1 to 8 flits of the link get the
  same kind of fault (a drop burst loses up to nine consecutive flits);
* in any cycle the link goes *silent* with ``silence``: it loses every flit for
  ``SILENCE_MIN`` to ``SILENCE_MIN + 127 * SILENCE_STEP`` cycles (64 to 1,080).

The draws (two xorshift64 sequences per link, ``a`` and ``b``, both stepped every cycle,
seeded from the link's seed; bit fields of the current elements):

==============  =========================================================================
a[0:32]         below ``drop * 2**32``: drop; below ``(drop + corrupt) * 2**32``: corrupt
a[32:40]        below ``burst * 2**8`` (at a fault that starts): a burst, of 1 + a[40:43]
                more flits
a[44:64]        below ``silence * 2**20``: the link goes silent
b[0:48]         three 16-bit fractions x: flipped bit ``(x * data_bits) >> 16`` each
b[48:50]        how many of them flip: 1, 2, 3, 1 for 0..3 (positions may coincide)
b[50:57]        silence length: ``SILENCE_MIN + SILENCE_STEP * b[50:57]`` cycles
==============  =========================================================================

What the flit CRC catches (model/packet/format.py ``CRCS``): every odd number of flipped
bits, and every 2-bit error on data words up to the CRC's distance-4 length, so every
corruption this model makes on the benches' flits. ``undetected`` counts any corruption
the CRC cannot see, so a bench can tell such a silent error from a bug in the switch.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from fredfab.model.errors import InputError
from fredfab.model.packet.format import LinkFlit, LinkFormat
from fredfab.model.prng import XorShift, seed, threshold

#: Widths of the compared draws (their rates' resolution: 2**-32, 2**-8, 2**-20).
DROP_BITS, BURST_BITS, SILENCE_BITS = 32, 8, 20
#: A burst covers the fault's flit and 1 + a[40:43] more.
BURST_EXTRA_BITS = 3
SILENCE_MIN, SILENCE_STEP, SILENCE_LEN_BITS = 64, 8, 7
#: Flipped bits per corruption, by b[48:50].
FLIP_COUNT = (1, 2, 3, 1)


@dataclass(frozen=True)
class FaultRates:
    """Per-flit drop and corrupt rates, the probability that a fault is a burst, and the
    per-cycle probability that the link goes silent (module docstring)."""

    drop: float = 0.0
    corrupt: float = 0.0
    burst: float = 0.0
    silence: float = 0.0

    def __post_init__(self) -> None:
        for name in ("drop", "corrupt", "burst", "silence"):
            rate, top = getattr(self, name), 1.0 if name == "burst" else None
            bad = isinstance(rate, bool) or not isinstance(rate, int | float)
            if bad or not (0 <= rate <= 1 if top else 0 <= rate < 1):
                span = "[0, 1]" if top else "[0, 1)"
                raise InputError(f"{name} must be a rate in {span}, got {rate!r}")
        if self.drop + self.corrupt >= 1:
            raise InputError(f"drop + corrupt must stay below 1, got {self.drop + self.corrupt}")
        if self.silence and threshold(self.silence, SILENCE_BITS) == 0:
            raise InputError(
                f"silence must be 0 or at least 2**-{SILENCE_BITS}, got {self.silence}"
            )

    @property
    def any(self) -> bool:
        return bool(self.drop or self.corrupt or self.silence)

    def thresholds(self) -> dict[str, int]:
        """What the draws are compared with (module docstring)."""
        drop = threshold(self.drop, DROP_BITS)
        return {
            "drop": drop,
            "corrupt": drop + threshold(self.corrupt, DROP_BITS),
            "burst": threshold(self.burst, BURST_BITS),
            "silence": threshold(self.silence, SILENCE_BITS),
        }


def fault_seeds(link_seed: int) -> tuple[int, int]:
    """The seeds of a link's two sequences."""
    return seed("faults-a", link_seed), seed("faults-b", link_seed)


def flip_mask(b: int, data_bits: int) -> int:
    """The data bits a corruption flips, from the element ``b`` of the link's second
    sequence (module docstring)."""
    mask = 0
    for j in range(FLIP_COUNT[(b >> 48) & 3]):
        mask |= 1 << (((b >> (16 * j)) & 0xFFFF) * data_bits >> 16)
    return mask


@dataclass
class LinkFaults:
    """One link direction's faults: call ``step`` once per cycle with the flit sent then (or
    None); it returns the flit as the far end sees it, or None when it was lost."""

    rates: FaultRates
    link_seed: int
    link: LinkFormat
    flits: int = field(default=0, init=False)
    dropped: int = field(default=0, init=False)
    corrupted: int = field(default=0, init=False)
    undetected: int = field(default=0, init=False)
    bursts: int = field(default=0, init=False)
    silences: int = field(default=0, init=False)
    silenced: int = field(default=0, init=False)  # flits lost to a silence (also dropped)

    def __post_init__(self) -> None:
        a, b = fault_seeds(self.link_seed)
        self._a, self._b = XorShift(a), XorShift(b)
        self._t = self.rates.thresholds()
        self._silent_left = 0
        self._burst_left = 0
        self._burst_drop = False

    def step(self, flit: LinkFlit | None) -> LinkFlit | None:
        a, b, t = self._a, self._b, self._t
        out = flit
        if flit is not None:
            self.flits += 1
        if self._silent_left:
            self._silent_left -= 1
            out = self._lose(flit, silenced=True)
        elif t["silence"] and a.bits(44, SILENCE_BITS) < t["silence"]:
            self.silences += 1
            self._silent_left = SILENCE_MIN + SILENCE_STEP * b.bits(50, SILENCE_LEN_BITS) - 1
            out = self._lose(flit, silenced=True)
        elif flit is not None:
            if self._burst_left:
                self._burst_left -= 1
                kind = "drop" if self._burst_drop else "corrupt"
            else:
                u = a.bits(0, DROP_BITS)
                kind = "drop" if u < t["drop"] else "corrupt" if u < t["corrupt"] else None
                if kind and a.bits(32, BURST_BITS) < t["burst"]:
                    self.bursts += 1
                    self._burst_left = 1 + a.bits(40, BURST_EXTRA_BITS)
                    self._burst_drop = kind == "drop"
            if kind == "drop":
                out = self._lose(flit, silenced=False)
            elif kind == "corrupt":
                out = self._corrupt(flit, b)
        a.step()
        b.step()
        return out

    def _lose(self, flit: LinkFlit | None, silenced: bool) -> None:
        if flit is not None:
            self.dropped += 1
            self.silenced += silenced
        return None

    def _corrupt(self, flit: LinkFlit, b: XorShift) -> LinkFlit:
        data = flit.data ^ flip_mask(b.value, self.link.data_bits)
        self.corrupted += 1
        if self.link.check(data) == flit.crc:
            self.undetected += 1
        return replace(flit, data=data)

    def counts(self) -> dict[str, int]:
        return {
            "flits": self.flits,
            "dropped": self.dropped,
            "corrupted": self.corrupted,
            "undetected": self.undetected,
            "bursts": self.bursts,
            "silences": self.silences,
            "silenced": self.silenced,
        }
