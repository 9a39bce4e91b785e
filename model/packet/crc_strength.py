"""What a flit CRC misses, computed: ``python -m fredfab.model.packet.crc_strength`` prints,
for each CRC of model/packet/format.py at the project's 64-bit flit and the paper's 512 B
flit, the undetected error patterns of 2 and 4 flipped bits (counted exhaustively) and the
probability that a flit's errors go unseen (docs/switch-rtl.md, "Integrity").

An error pattern over a flit's data and CRC bits (n = data + CRC bits) is undetected
exactly when the XOR of its bits' syndromes x^i mod g is zero (a CRC is a shortened cyclic
code); the preset does not matter. Every polynomial here is divisible by x + 1, so no odd
number of flips is ever missed. Pairs are missed where two syndromes coincide; four flips
where two disjoint pairs' XORs coincide (counted over all n (n - 1) / 2 pairs).

Undetected probability per flit, for independent bit errors at rate ``ber``: the sum over
missed patterns of ber^w (1 - ber)^(n - w), of which the lightest weight's term (2 or 4)
is taken (at the table's rates the next weight's term is below 10^-5 of it). Where no
pattern of 2 or 4 flips is missed (CRC-32C: distance 6 on 512 B flits), the weight-6 term
is estimated as a random code's share of the weight-6 patterns, marked ``~``: C(n, 6) /
2^(r - 1), since a CRC divisible by x + 1 has only even-weight codewords, half of all
patterns (the exact counts at weight 4 follow the same share: CRC-8 on 64 bits misses
8,224 against C(72, 4) / 2^7 = 8,037). A flit garbled beyond any pattern passes with
probability 2^-r.

The distances agree with Koopman's CRC tables (P. Koopman, "CRC Polynomial Zoo",
users.ece.cmu.edu/~koopman/crc/, and "32-bit cyclic redundancy codes for Internet
applications", DSN 2002): x^8+x^2+x+1 (0x83 in his notation) has distance 4 up to 119
data bits, CRC-16/CCITT (0x8810) up to 32,751, CRC-32C (0x8f6e37a0) distance 6 up to
5,243. tests/model/packet/test_crc.py counts the distances used here (distance 6 at 4096
bits in the slow suite) and checks the counts against a code's full weight distribution.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from fredfab.model.packet.format import CRCS, Crc

#: The flits of the table: the project's default (4 x bf16) and the paper's (paper §5.4).
WIDTHS = (64, 4096)
BERS = (1e-12, 1e-9, 1e-6)


def syndromes(crc: Crc, n: int) -> np.ndarray:
    """x^i mod g for the n bit positions of a codeword (position 0: the CRC's last bit)."""
    out = np.empty(n, dtype=np.uint64)
    s, top = 1, 1 << crc.bits
    for i in range(n):
        out[i] = s
        s <<= 1
        if s & top:
            s ^= top | crc.poly
    return out


def even_weight_only(crc: Crc) -> bool:
    """The generator is divisible by x + 1 (an even number of terms): every codeword has
    even weight, so no odd number of flips is missed."""
    return bin(crc.poly | (1 << crc.bits)).count("1") % 2 == 0


def missed_pairs(crc: Crc, data_bits: int) -> int:
    """2-bit error patterns over data and CRC that the CRC misses."""
    s = syndromes(crc, data_bits + crc.bits)
    _, counts = np.unique(s, return_counts=True)
    return int(sum(c * (c - 1) // 2 for c in counts))


def missed_quads(crc: Crc, data_bits: int) -> int:
    """4-bit error patterns the CRC misses: two disjoint pairs with the same XOR, each
    pattern met in its three splits into pairs (no two pairs sharing a bit can collide
    when no pair is missed, which ``missed_pairs`` checks)."""
    if missed_pairs(crc, data_bits):
        raise ValueError(f"{crc.name} misses 2-bit errors on {data_bits} bits")
    s = syndromes(crc, data_bits + crc.bits)
    xors = np.concatenate([s[i] ^ s[i + 1 :] for i in range(len(s) - 1)])
    _, counts = np.unique(xors, return_counts=True)
    counts = counts.astype(np.int64)
    return int((counts * (counts - 1) // 2).sum()) // 3


def undetected(crc: Crc, data_bits: int, ber: float) -> tuple[float, bool]:
    """Probability that a flit's independent bit errors at ``ber`` go unseen, and whether
    it is an estimate (no weight-4 pattern: the random-code weight-6 term)."""
    n = data_bits + crc.bits
    pairs = missed_pairs(crc, data_bits)
    if pairs:
        return pairs * ber**2 * (1 - ber) ** (n - 2), False
    quads = missed_quads(crc, data_bits)
    if quads:
        return quads * ber**4 * (1 - ber) ** (n - 4), False
    share = 2.0 ** -(crc.bits - 1 if even_weight_only(crc) else crc.bits)
    return math.comb(n, 6) * share * ber**6 * (1 - ber) ** (n - 6), True


def table() -> list[dict]:
    rows = []
    for width in WIDTHS:
        for crc in CRCS.values():
            pairs = missed_pairs(crc, width)
            quads = None if pairs else missed_quads(crc, width)
            row = {
                "crc": crc.name,
                "data_bits": width,
                "missed_2bit": pairs,
                "missed_4bit": quads,
                "garbled": 2.0**-crc.bits,
            }
            for ber in BERS:
                row[f"ber {ber:g}"] = undetected(crc, width, ber)
            rows.append(row)
    return rows


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    print(
        "crc                              bits  missed 2-bit  missed 4-bit  garbled    "
        + "  ".join(f"ber {b:g}" for b in BERS)
    )
    for r in table():
        cells = []
        for ber in BERS:
            v = r[f"ber {ber:g}"]
            cells.append(f"{'~' if v[1] else ' '}{v[0]:.1e}")
        quads = "-" if r["missed_4bit"] is None else str(r["missed_4bit"])
        print(
            f"{r['crc']:<32} {r['data_bits']:>5}  {r['missed_2bit']:>12}  {quads:>12}  "
            f"{r['garbled']:.1e}    " + "  ".join(cells)
        )


if __name__ == "__main__":
    main()
