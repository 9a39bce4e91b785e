"""Element adders of the FRED switch datapath: the additions done inside the interconnect.

A FRED switch reduces gradients as they cross it, so every reduction point needs an adder for
the element type of the flow. This module provides combinational adders that are bit-exact with
the golden model (``fredfab.model.golden.add``):

- ``int8``, ``int16``, ``int32``: two's complement, wrapping on overflow.
- ``fp16`` (1-5-10), ``bf16`` (1-8-7), ``fp32`` (1-8-23): IEEE 754 addition, round to nearest,
  ties to even; subnormal inputs and outputs are kept (no flush to zero); overflow gives an
  infinity of the right sign; x + (-x) is +0 and (-0) + (-0) is -0; inf + finite is inf and
  inf + (-inf) is NaN.

NaN rule: every NaN result is the canonical quiet NaN, whatever the inputs' payloads or
signalling bits (the RISC-V convention): positive sign, all-ones exponent, only the quiet bit
(the fraction MSB) set. That is 0x7E00 for fp16, 0x7FC0 for bf16 and 0x7FC00000 for fp32.
Apart from NaN payloads, results equal numpy's (ml_dtypes for bf16) bit for bit.

Public API:

- ``element_width(name)``: bits per element; the types themselves are
  ``fredfab.model.dtypes.ELEMENT_TYPES``, shared with the golden model.
- ``IntAdder(width)`` and ``FloatAdder(exp_bits, man_bits)``: the two generic cores (the
  float one works for any IEEE-style binary format; the tests also check it exhaustively
  against ml_dtypes' float8 e5m2, e4m3 and e3m4).
- ``canonical_nan(exp_bits, man_bits)``: the NaN bit pattern described above (defined once in
  ``fredfab.model.dtypes``, shared with the golden model).
- ``ElementAdder(element_type)``: ports ``a``, ``b`` (``In(width)``) and ``s`` (``Out(width)``).
- ``LaneAdder(element_type, lanes)``: the same ports, ``lanes * width`` bits wide, laid out
  as the flit's lanes (``hw/flit.py`` ``lanes_layout``: lane 0 in the least significant
  bits); adds lane by lane.

All of them are purely combinational; the switch registers around them as its timing needs.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fredfab.hw.flit import lanes_layout
from fredfab.model.dtypes import ElementType, canonical_nan
from fredfab.model.dtypes import element_type as _element_type

__all__ = [
    "ElementAdder",
    "FloatAdder",
    "IntAdder",
    "LaneAdder",
    "canonical_nan",
    "element_width",
]


def element_width(name: str | ElementType) -> int:
    """Width in bits of one element of type ``name``; ValueError for an unknown type."""
    return _element_type(name).bits


class IntAdder(wiring.Component):
    """Two's complement adder that wraps on overflow: ``s = (a + b) mod 2**width``.

    The same logic serves signed and unsigned operands, so there is no sign handling.
    """

    def __init__(self, width: int) -> None:
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"IntAdder width must be a positive integer, not {width!r}")
        self.width = width
        super().__init__({"a": In(width), "b": In(width), "s": Out(width)})

    def elaborate(self, platform) -> Module:
        m = Module()
        _add_int(m, self.a, self.b, self.s)
        return m


def _add_int(m: Module, a: Value, b: Value, s: Value) -> None:
    """Drive ``s`` with ``a + b`` wrapped to the width of ``s``, combinationally."""
    m.d.comb += s.eq(a + b)  # the carry out is dropped by the truncation


def _leading_zeros(v: Value) -> Value:
    """Number of leading zeros of ``v`` (``len(v)`` if ``v`` is zero), as a log-depth tree.

    ``v`` is padded at the bottom with ones to a power-of-two width, so that the count
    saturates at ``len(v)`` and no separate all-zero flag is needed at the top.
    """
    n = len(v)
    padded_width = 1 << max(1, (n - 1).bit_length())
    padded = Cat(Const(-1, padded_width - n), v) if padded_width > n else v

    def tree(x: Value) -> tuple[Value, Value]:
        # Returns (count, all_zero). The count is only meaningful when all_zero is clear.
        if len(x) == 2:
            return ~x[1], ~x[1] & ~x[0]
        half = len(x) // 2
        hi_count, hi_zero = tree(x[half:])
        lo_count, lo_zero = tree(x[:half])
        # If the upper half is all zeros, its `half` zeros are the MSB of the count.
        return Cat(Mux(hi_zero, lo_count, hi_count), hi_zero), hi_zero & lo_zero

    count, _ = tree(padded)
    return count


# Extra bits kept below the significand while aligning: guard, round and sticky (the OR of
# everything shifted out further down). They are enough for a correctly rounded sum. When the
# exponents differ by 2 or more, a difference needs at most one left shift to renormalise,
# which moves R into the guard position while S still says whether anything below is set.
# When they differ by at most 1, nothing falls below the guard bit, so the difference is exact
# however far it has to be renormalised.
_GRS = 3


def _add_float(m: Module, a: Value, b: Value, s: Value, exp_bits: int, man_bits: int) -> None:
    """Drive ``s`` with the IEEE 754 sum ``a + b`` (RNE, canonical NaN), combinationally.

    The datapath is the textbook one: unpack, swap so that ``|big| >= |small|``, align the
    smaller significand with guard, round and sticky bits, add or subtract, normalise with a
    leading-zero count, round to nearest even, then select specials.
    """
    E, M, GRS = exp_bits, man_bits, _GRS
    EXP_ONES = (1 << E) - 1  # exponent field of infinities and NaNs
    N = M + 1 + GRS  # width of an aligned significand: hidden bit, fraction, G, R, S

    def fields(x: Value) -> tuple[Value, Value, Value]:
        return x[E + M], x[M : M + E], x[:M]

    a_sign, a_exp, a_frac = fields(a)
    b_sign, b_exp, b_frac = fields(b)
    a_nan = (a_exp == EXP_ONES) & (a_frac != 0)
    b_nan = (b_exp == EXP_ONES) & (b_frac != 0)
    a_inf = (a_exp == EXP_ONES) & (a_frac == 0)
    b_inf = (b_exp == EXP_ONES) & (b_frac == 0)

    # --- Swap so that |big| >= |small|. The encoding is monotonic in magnitude, so an
    # unsigned compare of exponent and fraction together orders the magnitudes. With
    # |big| >= |small| the difference below never goes negative and the sign of a
    # non-zero result is the sign of big.
    big = Signal(1 + E + M)
    small = Signal(1 + E + M)
    a_ge_b = a[: E + M] >= b[: E + M]
    m.d.comb += [big.eq(Mux(a_ge_b, a, b)), small.eq(Mux(a_ge_b, b, a))]
    big_sign, small_sign = big[E + M], small[E + M]

    # Subnormals (exponent field 0) have no hidden bit and the exponent of the smallest
    # normal, 1. With that, one datapath serves normals, subnormals and zeros.
    def significand(x: Value) -> Value:
        return Cat(x[:M], x[M : M + E] != 0)

    def effective_exp(x: Value) -> Value:
        exp = x[M : M + E]
        return Mux(exp == 0, 1, exp)

    big_exp = Signal(E)
    small_exp = Signal(E)
    m.d.comb += [big_exp.eq(effective_exp(big)), small_exp.eq(effective_exp(small))]

    # --- Align. The smaller significand moves right by the exponent difference; every bit
    # that falls off the end is ORed into the sticky (lowest) bit. A shift of N or more
    # leaves only sticky, so the distance is clamped to N to keep the shifter narrow.
    exp_diff = Signal(E)
    align = Signal(range(N + 1))
    m.d.comb += [
        exp_diff.eq(big_exp - small_exp),
        align.eq(Mux(exp_diff > N, N, exp_diff)),
    ]
    small_wide = Signal(2 * N)  # upper half: aligned significand; lower half: shifted out
    m.d.comb += small_wide.eq(Cat(Const(0, N), Const(0, GRS), significand(small)) >> align)
    big_x = Signal(N)
    small_x = Signal(N)
    m.d.comb += [
        big_x.eq(Cat(Const(0, GRS), significand(big))),
        small_x.eq(small_wide[N:] | small_wide[:N].any()),
    ]

    # --- Add the magnitudes, or subtract them when the signs differ. One extra bit holds
    # the carry out of an addition; a subtraction cannot borrow since big_x >= small_x.
    subtract = big_sign ^ small_sign
    total = Signal(N + 1)
    m.d.comb += total.eq(Mux(subtract, big_x - small_x, big_x + small_x))
    carry = total[N]

    # --- Normalise. After a carry the sum moves right by one (the dropped bit joins the
    # sticky bit) and the exponent grows by one. Otherwise the leading zeros move out to
    # the left, but never so far that the exponent drops below the smallest normal's:
    # what stops early is a subnormal result. Subnormal results are always exact (both
    # operands are multiples of the smallest subnormal), so no rounding happens there.
    lead_zeros = Signal(range(N + 1))
    max_shift = Signal(E)
    shift = Signal(range(N + 1))
    m.d.comb += [
        lead_zeros.eq(_leading_zeros(total[:N])),
        max_shift.eq(big_exp - 1),
        shift.eq(Mux(lead_zeros > max_shift, max_shift, lead_zeros)),
    ]
    norm = Signal(N)  # hidden bit, fraction, guard, and two bits that only count as sticky
    norm_exp = Signal(E + 1)  # one extra bit to see overflow past the largest exponent
    with m.If(carry):
        m.d.comb += [
            norm.eq(Cat(total[0] | total[1], total[2 : N + 1])),
            norm_exp.eq(big_exp + 1),
        ]
    with m.Else():
        m.d.comb += [
            norm.eq(total[:N] << shift),
            norm_exp.eq(big_exp - shift),
        ]

    # --- Round to nearest, ties to even: add one ulp when the guard bit is set and either
    # something below it is set or the kept LSB is odd. The increment is applied to the
    # packed exponent and fraction, so a carry out of the fraction bumps the exponent:
    # that turns the largest subnormal into the smallest normal, a significand of all ones
    # into the next binade, and the largest finite number into infinity, all correctly.
    sig = norm[GRS:]
    guard = norm[GRS - 1]
    sticky = norm[: GRS - 1].any()
    round_up = guard & (sticky | sig[0])
    exp_field = Signal(E)
    m.d.comb += exp_field.eq(Mux(sig[M], norm_exp, 0))  # no hidden bit: subnormal
    rounded = Signal(E + M)
    m.d.comb += rounded.eq(Cat(sig[:M], exp_field) + round_up)

    # --- Specials, in priority order.
    with m.If(a_nan | b_nan | (a_inf & b_inf & (a_sign != b_sign))):
        m.d.comb += s.eq(canonical_nan(E, M))
    with m.Elif(a_inf | b_inf):
        m.d.comb += s.eq(big)  # an infinity is the larger magnitude; same signs if both
    with m.Elif(total == 0):
        # An exact zero: +0 unless both operands are -0 (RNE rule for x + (-x)).
        m.d.comb += s.eq(Cat(Const(0, E + M), a_sign & b_sign))
    with m.Elif(norm_exp >= EXP_ONES):
        m.d.comb += s.eq(Cat(Const(0, M), Const(EXP_ONES, E), big_sign))  # overflow: inf
    with m.Else():
        m.d.comb += s.eq(Cat(rounded, big_sign))


class FloatAdder(wiring.Component):
    """IEEE 754 binary adder for a format with ``exp_bits`` exponent and ``man_bits`` fraction
    bits: round to nearest even, subnormals kept, canonical NaN (see the module docstring).

    Ports ``a``, ``b`` are ``In(width)`` and ``s`` is ``Out(width)``, ``width = 1 + exp_bits +
    man_bits``, sign in the MSB.
    """

    def __init__(self, exp_bits: int, man_bits: int) -> None:
        if not isinstance(exp_bits, int) or exp_bits < 2:
            raise ValueError(f"FloatAdder exp_bits must be an integer >= 2, not {exp_bits!r}")
        if not isinstance(man_bits, int) or man_bits < 1:
            raise ValueError(f"FloatAdder man_bits must be an integer >= 1, not {man_bits!r}")
        self.exp_bits = exp_bits
        self.man_bits = man_bits
        self.width = 1 + exp_bits + man_bits
        super().__init__({"a": In(self.width), "b": In(self.width), "s": Out(self.width)})

    def elaborate(self, platform) -> Module:
        m = Module()
        _add_float(m, self.a, self.b, self.s, self.exp_bits, self.man_bits)
        return m


class ElementAdder(wiring.Component):
    """Combinational adder of one element: ``s = a + b`` in ``element_type`` arithmetic.

    ``element_type`` is a name from ``fredfab.model.dtypes.ELEMENT_TYPES`` ("int8", "int16",
    "int32", "fp16", "bf16", "fp32") or one of its ElementType values; anything else raises
    ValueError. Ports ``a``, ``b`` are ``In(width)`` and ``s`` is ``Out(width)``.
    """

    def __init__(self, element_type: str | ElementType) -> None:
        self.element_type = _element_type(element_type)
        self.width = self.element_type.bits
        super().__init__({"a": In(self.width), "b": In(self.width), "s": Out(self.width)})

    def elaborate(self, platform) -> Module:
        # The logic is built here rather than in an IntAdder or FloatAdder submodule: the extra
        # level of hierarchy would only add port aliases to the Verilog.
        m = Module()
        etype = self.element_type
        if etype.is_float:
            _add_float(m, self.a, self.b, self.s, etype.exponent_bits, etype.mantissa_bits)
        else:
            _add_int(m, self.a, self.b, self.s)
        return m


class LaneAdder(wiring.Component):
    """Lane-wise adder of two vectors of ``lanes`` elements of ``element_type``.

    Ports ``a``, ``b`` are ``In(lanes * width)`` and ``s`` is ``Out(lanes * width)``, holding the
    flit data's layout ``lanes_layout(width, lanes)``: lane ``i`` occupies bits ``[i * width,
    (i + 1) * width)``, so lane 0 is in the least significant bits. The ports are plain bits
    and viewed through the layout inside: a layout-typed port would add a named wire per lane
    (``a[0]``, ...) that reads, to a linter, like part of the input port.
    """

    def __init__(self, element_type: str | ElementType, lanes: int) -> None:
        self.element_type = _element_type(element_type)
        if not isinstance(lanes, int) or isinstance(lanes, bool) or lanes < 1:
            raise ValueError(f"LaneAdder lanes must be a positive integer, not {lanes!r}")
        self.lanes = lanes
        self.width = self.element_type.bits
        self.layout = lanes_layout(self.width, lanes)
        total = self.layout.size
        super().__init__({"a": In(total), "b": In(total), "s": Out(total)})

    def elaborate(self, platform) -> Module:
        m = Module()
        a, b, s = self.layout(self.a), self.layout(self.b), self.layout(self.s)
        for i in range(self.lanes):
            lane = ElementAdder(self.element_type)
            m.submodules[f"lane{i}"] = lane
            m.d.comb += [lane.a.eq(a[i]), lane.b.eq(b[i]), s[i].eq(lane.s)]
        return m
