"""A CRC of model/packet/format.py (``Crc``) as XOR trees, from its matrix."""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Value

from fredfab.model.packet.format import Crc


def crc_of(data: Value, crc: Crc) -> Value:
    """The CRC of ``data`` (its whole width), combinationally: bit j is the XOR of the data
    bits in row j of the matrix, inverted where the preset's share (``const``) has a one."""
    width = len(data)
    rows, const = crc.matrix(width)
    bits = []
    for j, row in enumerate(rows):
        taps = [data[k] for k in range(width) if (row >> k) & 1]
        parity = Cat(*taps).xor() if taps else Const(0, 1)
        bits.append(parity ^ ((const >> j) & 1))
    return Cat(*bits)
