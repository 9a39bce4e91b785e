"""Units of the system and training models, and sizes as people write them (64MiB, 1.5GB).

Every model works in bytes, seconds, bytes/s and Hz; files and reports use the units below.
These constants are the only place their values are written.
"""

from __future__ import annotations

import re

from fredfab.model.errors import InputError

#: The decimal prefixes kilo and giga: GB, GB/s (link rates are quoted in decimal units),
#: GHz, GFLOP.
KILO = 1e3
GIGA = 1e9
#: Bytes in a (decimal) kilobyte, megabyte, gigabyte and terabyte.
KB = KILO
MB = 1e6
GB = GIGA
TB = 1e12
#: Bytes in a kibibyte, mebibyte, gibibyte and tebibyte.
KIB = 2**10
MIB = 2**20
GIB = 2**30
TIB = 2**40
#: Seconds in a nanosecond, microsecond and millisecond.
NS = 1e-9
US = 1e-6
MS = 1e-3
#: Hertz in a gigahertz.
GHZ = GIGA

_UNITS = {
    "": 1,
    "b": 1,
    "kb": KB,
    "mb": MB,
    "gb": GB,
    "tb": TB,
    "kib": KIB,
    "mib": MIB,
    "gib": GIB,
    "tib": TIB,
}


def to_ns(seconds: float) -> float:
    """``seconds`` in nanoseconds. Multiplies by 1e9: dividing by NS would round, e.g. 7 ns
    to 6.999999999999999."""
    return seconds * GIGA


def to_ms(seconds: float) -> float:
    """``seconds`` in milliseconds (multiplies by 1e3, for the same reason as to_ns)."""
    return seconds * KILO


def parse_size(text: str | float | int) -> float:
    """Bytes from ``64MiB``, ``1.5GB``, ``4096`` or ``1e6`` (decimal and binary prefixes)."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        value = float(text)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*", str(text))
        if not m or m[2].lower() not in _UNITS:
            raise InputError(
                f"size {text!r}: expected a number with an optional unit "
                "(B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. 64MiB"
            )
        value = float(m[1]) * _UNITS[m[2].lower()]
    if value < 0:
        raise InputError(f"size {text!r} is negative")
    return value
