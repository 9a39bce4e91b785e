"""The pseudo-random sequences that hardware test harnesses and their Python references share.

Marsaglia's xorshift64 (shifts 13, 7, 17: "Xorshift RNGs", J. Stat. Softw. 8(14), 2003) is
a handful of XORs per step in RTL (fredfab.sim.verify.soak_harness.XorShift64) and here, so
a harness and a Python model that start from the same ``seed`` draw the same numbers in the
same cycles. ``threshold`` turns a rate into the integer a draw is compared with.
"""

from __future__ import annotations

import hashlib

from fredfab.model.errors import InputError

MASK64 = (1 << 64) - 1


def seed(tag: str, k: int) -> int:
    """A non-zero 64-bit xorshift seed for sequence ``tag`` of port (or flow) ``k``."""
    h = hashlib.sha256(f"{tag}:{k}".encode()).digest()
    return int.from_bytes(h[:8], "little") or 1


def xorshift64(x: int) -> int:
    """The element after ``x`` (a non-zero 64-bit state)."""
    x ^= (x << 13) & MASK64
    x ^= x >> 7
    return x ^ ((x << 17) & MASK64)


def threshold(rate: float, bits: int) -> int:
    """The ``bits``-bit integer T for which a uniform ``bits``-bit draw is below T with
    probability ``rate`` (rounded to the nearest step of 2**-bits)."""
    if not 0.0 <= rate <= 1.0:
        raise InputError(f"rate must be in [0, 1], got {rate!r}")
    return min(round(rate * (1 << bits)), 1 << bits)


class XorShift:
    """A xorshift64 sequence: ``value`` is the current element, ``step()`` moves on."""

    def __init__(self, start: int) -> None:
        if not 0 < start <= MASK64:
            raise ValueError(f"a xorshift64 state is a non-zero 64-bit value, got {start:#x}")
        self.value = start

    def step(self) -> int:
        """Move to the next element; return the one before (the draw of this step)."""
        out, self.value = self.value, xorshift64(self.value)
        return out

    def bits(self, lo: int, width: int) -> int:
        """Bits [lo, lo + width) of the current element."""
        return (self.value >> lo) & ((1 << width) - 1)
