"""Fault injection on a link, the model the benches use to test repair and Go-Back-N.

It drops whole flits or flips data bits only: ``head``, ``last``, ``vc`` and ``pkt`` are link
control symbols that a real link protects with their own code (model/packet/format.py).

What the flit CRC catches: CRC-8 with polynomial 0x07 = (x + 1)(x^7 + x^6 + x^5 + x^4 + x^3 +
x^2 + 1) detects every odd number of flipped bits (the x + 1 factor), so every 1- and 3-bit
error at any width. Its degree-7 factor is primitive, of period 127, so two flips exactly a
multiple of 127 bits apart cancel: every 2-bit error is detected on data of up to 127 bits
(the default 64-bit flit), but on 128 bits and more a few 2-bit errors pass (131 of the 32640
pairs on 256 bits). ``undetected`` counts the corruptions the CRC cannot see, so a bench can
tell such a silent error from a bug in the switch.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from fredfab.model.errors import InputError
from fredfab.model.packet.format import LinkFlit, crc8


@dataclass
class LinkFaults:
    """Drops a flit with ``drop_rate``; otherwise flips 1 to 3 distinct random bits of its
    data with ``corrupt_rate``. ``data_bits`` is the flit's data width (where bits can flip);
    ``seed`` makes a run repeatable."""

    drop_rate: float
    corrupt_rate: float
    seed: int
    data_bits: int
    flits: int = field(default=0, init=False)
    dropped: int = field(default=0, init=False)
    corrupted: int = field(default=0, init=False)
    undetected: int = field(default=0, init=False)
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("drop_rate", "corrupt_rate"):
            rate = getattr(self, name)
            if not 0.0 <= rate < 1.0:
                raise InputError(f"{name} must be in [0, 1), got {rate!r}")
        if self.data_bits < 3:
            raise InputError(f"data_bits must be at least 3, got {self.data_bits}")
        self._rng = random.Random(self.seed)

    def apply(self, flit: LinkFlit) -> LinkFlit | None:
        """The flit as the far end sees it, or None when it was lost."""
        self.flits += 1
        if self._rng.random() < self.drop_rate:
            self.dropped += 1
            return None
        if self._rng.random() >= self.corrupt_rate:
            return flit
        bits = self._rng.sample(range(self.data_bits), self._rng.randint(1, 3))
        data = flit.data
        for b in bits:
            data ^= 1 << b
        self.corrupted += 1
        if crc8(data, self.data_bits) == flit.crc:
            self.undetected += 1
        return replace(flit, data=data)
