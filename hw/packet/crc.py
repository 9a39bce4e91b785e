"""The link flit's CRC-8 as XOR trees, from the matrix of model/packet/format.py."""

from __future__ import annotations

from amaranth.hdl import Cat, Value

from fredfab.model.packet.format import crc_matrix


def crc_of(data: Value) -> Value:
    """The CRC-8 of ``data`` (its whole width), combinationally: bit j is the XOR of the
    data bits in row j of the matrix."""
    width = len(data)
    bits = []
    for row in crc_matrix(width):
        taps = [data[k] for k in range(width) if (row >> k) & 1]
        bits.append(Cat(*taps).xor() if taps else 0)
    return Cat(*bits)
