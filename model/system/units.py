"""Byte sizes and bandwidths as people write them: 64MiB, 1.5GB, 4096."""

from __future__ import annotations

import re

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1e3,
    "mb": 1e6,
    "gb": 1e9,
    "tb": 1e12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


def parse_size(text: str | float | int) -> float:
    """Bytes from ``64MiB``, ``1.5GB``, ``4096`` or ``1e6`` (decimal and binary prefixes)."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        value = float(text)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*", str(text))
        if not m or m[2].lower() not in _UNITS:
            raise ValueError(
                f"size {text!r}: expected a number with an optional unit "
                "(B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. 64MiB"
            )
        value = float(m[1]) * _UNITS[m[2].lower()]
    if value < 0:
        raise ValueError(f"size {text!r} is negative")
    return value


def fmt_bytes(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n:.0f} B"


def fmt_time(t: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return f"{t / scale:.4g} {unit}"
    return f"{t / 1e-9:.4g} ns"
