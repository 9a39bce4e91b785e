"""Element adders of the FRED switch datapath: the additions done inside the interconnect.

A FRED switch reduces gradients as they cross it, so every reduction point needs an adder for
the element type of the flow. This module provides adders that are bit-exact with the golden
model (``fredfab.model.golden.add``), combinational or pipelined:

- ``int8``, ``int16``, ``int32``: two's complement, wrapping on overflow.
- ``fp16`` (1-5-10), ``bf16`` (1-8-7), ``fp32`` (1-8-23): IEEE 754 addition, round to nearest,
  ties to even; subnormal inputs and outputs are kept (no flush to zero); overflow gives an
  infinity of the right sign; x + (-x) is +0 and (-0) + (-0) is -0; inf + finite is inf and
  inf + (-inf) is NaN.

NaN rule: every NaN result is the canonical quiet NaN, whatever the inputs' payloads or
signalling bits (the RISC-V convention): positive sign, all-ones exponent, only the quiet bit
(the fraction MSB) set. That is 0x7E00 for fp16, 0x7FC0 for bf16 and 0x7FC00000 for fp32.
Apart from NaN payloads, results equal numpy's (ml_dtypes for bf16) bit for bit.

Pipelining. The float datapath is a sequence of steps (``float_steps``: compare, swap, align,
add, count, normalise, round), each a function from the named values the previous step left
to the values later steps need. ``stages`` registers cut the sequence into ``stages + 1``
slices of consecutive steps (``slice_plan``: the split that balances the steps' estimated
logic depth); the registers hold exactly the values that cross the cut. An integer adder is
one carry chain; it is cut into ``stages + 1`` chunks of bits, each slice adding one chunk
and passing its carry on (a carry-select-free pipelined adder). ``AdderSlices`` builds the
slices one by one, so that the switch (hw/uswitch.py) can put its own handshaked registers
between them; the components below put plain registers there.

Public API:

- ``element_width(name)``: bits per element; the types themselves are
  ``fredfab.model.dtypes.ELEMENT_TYPES``, shared with the golden model.
- ``IntAdder(width, stages=0)`` and ``FloatAdder(exp_bits, man_bits, stages=0)``: the two
  generic cores (the float one works for any IEEE-style binary format; the tests also check
  it exhaustively against ml_dtypes' float8 e5m2, e4m3 and e3m4).
- ``canonical_nan(exp_bits, man_bits)``: the NaN bit pattern described above (defined once in
  ``fredfab.model.dtypes``, shared with the golden model).
- ``ElementAdder(element_type, stages=0)``: ports ``a``, ``b`` (``In(width)``) and ``s``
  (``Out(width)``).
- ``LaneAdder(element_type, lanes, stages=0)``: the same ports, ``lanes * width`` bits wide,
  laid out as the flit's lanes (``hw/flit.py`` ``lanes_layout``: lane 0 in the least
  significant bits); adds lane by lane.
- ``AdderSlices(element_type, lanes, stages)``: the slices themselves, for a caller that
  places its own registers.

With ``stages = 0`` a component is purely combinational. With ``stages = N`` it is
synchronous (the ``sync`` domain): the sum of the operands present in cycle t is on ``s`` in
cycle t + N, one new pair per cycle, no stall.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fredfab.hw.flit import lanes_layout
from fredfab.model.dtypes import ElementType, canonical_nan
from fredfab.model.dtypes import element_type as _element_type
from fredfab.model.switch.latency import MAX_ADDER_STAGES

__all__ = [
    "AdderSlices",
    "ElementAdder",
    "FloatAdder",
    "IntAdder",
    "LaneAdder",
    "NumberFormat",
    "Step",
    "canonical_nan",
    "element_width",
    "float_steps",
    "pack_state",
    "slice_plan",
    "unpack_state",
]


def element_width(name: str | ElementType) -> int:
    """Width in bits of one element of type ``name``; ValueError for an unknown type."""
    return _element_type(name).bits


def _check_stages(stages: object) -> int:
    if isinstance(stages, bool) or not isinstance(stages, int):
        raise ValueError(f"adder stages must be an integer, not {stages!r}")
    if not 0 <= stages <= MAX_ADDER_STAGES:
        raise ValueError(f"adder stages must be >= 0 and <= {MAX_ADDER_STAGES}, got {stages}")
    return stages


# --------------------------------------------------------------------------------------------
# Steps and slices

#: The values one step hands to the next, by name.
State = dict[str, Value]


@dataclass(frozen=True)
class Step:
    """One step of an adder's datapath: ``run(m, state) -> state``, combinational.

    ``delay`` is the step's delay in tenths of a nanosecond, register to register, when it is
    placed and routed alone on the project's FPGA (sim/verify/fpga.py ``DEVICE``): only used
    to choose where registers go (``slice_plan``); the Fmax a whole switch reaches is
    measured (docs/architecture-cost.md).
    """

    name: str
    run: Callable[[Module, State], State]
    delay: int


#: Delay (tenths of a ns) the switch adds before an adder's first slice: the link from the
#: previous node's register, across the switch. Placed and routed in Fred_3(8) with three
#: adder stages (docs/architecture-cost.md), the first slice (compare and swap) took 9.1 ns
#: against 7.8 ns for the same steps alone.
ENTRY_DELAY = 13
#: Delay (tenths of a ns) the switch adds behind an adder's last slice: the output's source
#: select and the next register slice's input select (hw/uswitch.py, hw/skid.py); about two
#: LUT levels and their routing on the ECP5, from the select-logic critical paths of the
#: integer switches in docs/architecture-cost.md.
EXIT_DELAY = 25


def slice_plan(
    delays: Sequence[int], stages: int, head: int = ENTRY_DELAY, tail: int = EXIT_DELAY
) -> tuple[int, ...]:
    """Where ``stages`` registers go between steps of ``delays``: the indices of the steps that
    start a slice after the first (so ``len == stages``). The slowest slice (the first one
    counting ``head`` more, the last one ``tail`` more) is made as fast as possible, then the
    next slowest, and so on (extra stages that cannot speed up the slowest step still shorten
    the others); among equal splits, the one whose cuts come earliest."""
    _check_stages(stages)
    n = len(delays)
    if stages >= n:
        raise ValueError(f"{stages} register stages need more than {n} steps to cut between")
    best: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    for cuts in itertools.combinations(range(1, n), stages):
        bounds = [0, *cuts, n]
        costs = [sum(delays[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
        costs[0] += head
        costs[-1] += tail
        key = tuple(sorted(costs, reverse=True))
        if best is None or key < best[0]:
            best = (key, cuts)
    assert best is not None
    return best[1]


def pack_state(state: State) -> tuple[Value, tuple[tuple[str, int], ...]]:
    """The values of ``state`` as one bit vector (what a register between two steps holds),
    and its layout: (name, width) in bit order, for ``unpack_state``."""
    spec = tuple((name, len(v)) for name, v in state.items())
    return Cat(*state.values()), spec


def unpack_state(bits: Value, spec: tuple[tuple[str, int], ...]) -> State:
    """The named values a bit vector of layout ``spec`` (``pack_state``) holds."""
    out, lsb = {}, 0
    for name, width in spec:
        out[name] = bits[lsb : lsb + width]
        lsb += width
    return out


@dataclass(frozen=True)
class NumberFormat:
    """What an adder adds: ``bits``-bit two's complement integers (``exp_bits`` 0) or an
    IEEE-style binary float of ``exp_bits`` exponent and ``man_bits`` fraction bits."""

    bits: int
    exp_bits: int = 0
    man_bits: int = 0

    @property
    def is_float(self) -> bool:
        return self.exp_bits > 0

    @classmethod
    def of(cls, element_type: str | ElementType | NumberFormat) -> NumberFormat:
        """The format of an element type (ValueError for an unknown one), or ``element_type``
        itself when it is a NumberFormat."""
        if isinstance(element_type, NumberFormat):
            return element_type
        et = _element_type(element_type)
        return cls(et.bits, et.exponent_bits, et.mantissa_bits)


class AdderSlices:
    """The ``stages + 1`` slices of a ``lanes``-lane adder of ``element_type``.

    ``slice(m, k, x)`` builds slice k in ``m`` (combinationally) and returns its output: for
    k = 0, ``x`` is ``Cat(a, b)`` of the two operand vectors (each ``lanes * width`` bits, in
    the flit's lane layout); for k > 0 it is what slice k - 1 returned, after the caller's
    register; slice ``stages`` returns the sum vector. Slices are built in order (each one's
    output layout is only known once it is built) and ``width(k)`` is then the width of slice
    k's output: what a register after it must hold.
    """

    def __init__(
        self, element_type: str | ElementType | NumberFormat, lanes: int, stages: int
    ) -> None:
        fmt = NumberFormat.of(element_type)
        if not isinstance(lanes, int) or isinstance(lanes, bool) or lanes < 1:
            raise ValueError(f"lanes must be a positive integer, not {lanes!r}")
        self.format = fmt
        self.lanes = lanes
        self.stages = _check_stages(stages)
        self.element_bits = fmt.bits
        if fmt.is_float:
            self._slices = _float_slices(fmt.exp_bits, fmt.man_bits, stages)
        else:
            self._slices = _int_slices(fmt.bits, stages)
        # Per slice: the output layout of one lane (name, width), in build order.
        self._specs: list[tuple[tuple[str, int], ...]] = []

    def width(self, k: int) -> int:
        """Bits slice ``k`` (already built) hands to the next one, all lanes together."""
        return self.lanes * sum(w for _, w in self._specs[k])

    def slice(self, m: Module, k: int, x: Value) -> Value:
        if k != len(self._specs):
            raise ValueError(f"slice {k} built out of order (next is {len(self._specs)})")
        if k == 0:
            w = self.lanes * self.element_bits
            a, b = x[:w], x[w : 2 * w]
            lane_in = [
                {
                    "a": a[i * self.element_bits : (i + 1) * self.element_bits],
                    "b": b[i * self.element_bits : (i + 1) * self.element_bits],
                }
                for i in range(self.lanes)
            ]
        else:
            spec = self._specs[k - 1]
            per_lane = sum(wd for _, wd in spec)
            lane_in = [
                unpack_state(x[i * per_lane : (i + 1) * per_lane], spec) for i in range(self.lanes)
            ]
        outs = []
        spec: tuple[tuple[str, int], ...] = ()
        for state in lane_in:
            for step in self._slices[k]:
                state = step.run(m, state)
            packed, spec = pack_state(state)
            outs.append(packed)
        self._specs.append(spec)
        return Cat(*outs)


def _partition(steps: Sequence[Step], stages: int) -> list[list[Step]]:
    cuts = slice_plan([s.delay for s in steps], stages)
    bounds = [0, *cuts, len(steps)]
    return [list(steps[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]


def _sliced(m: Module, slices: AdderSlices, a: Value, b: Value, s: Value) -> None:
    """Drive ``s`` from ``a`` and ``b`` through ``slices``, a plain register between each two
    (the pipeline never stalls)."""
    x = Cat(a, b)
    for k in range(slices.stages + 1):
        x = slices.slice(m, k, x)
        if k < slices.stages:
            reg = Signal(slices.width(k), name=f"stage{k + 1}")
            m.d.sync += reg.eq(x)
            x = reg
    m.d.comb += s.eq(x)


# --------------------------------------------------------------------------------------------
# Integer adder


def _int_slices(width: int, stages: int) -> list[list[Step]]:
    """Slice k adds bits [lo_k, hi_k) of the operands and the carry into them; the chunks are
    as equal as the width allows. The state carries the sum's low bits, the operands' high
    bits still to add and the carry."""
    if stages >= width:
        raise ValueError(f"a {width}-bit adder cannot be cut into {stages + 1} slices")
    bounds = [round(k * width / (stages + 1)) for k in range(stages + 2)]

    def chunk(k: int) -> Step:
        lo, hi = bounds[k], bounds[k + 1]

        def run(m: Module, st: State) -> State:
            a, b = st["a"], st["b"]  # bits [lo, width) of the operands
            carry = st.get("carry", Const(0, 1))
            total = a[: hi - lo] + b[: hi - lo] + carry  # one bit wider: its carry out
            low = Cat(st["sum"], total[: hi - lo]) if "sum" in st else total[: hi - lo]
            if hi == width:
                return {"s": low}  # the carry out of the top is dropped: wrap-around
            return {"sum": low, "a": a[hi - lo :], "b": b[hi - lo :], "carry": total[hi - lo]}

        return Step(f"bits {lo}..{hi - 1}", run, hi - lo)

    return [[chunk(k)] for k in range(stages + 1)]


# --------------------------------------------------------------------------------------------
# Float adder


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

#: The flags of special results, carried from the first step to the last.
_FLAGS = ("nan", "inf", "both_negative")


def float_steps(exp_bits: int, man_bits: int) -> list[Step]:
    """The IEEE 754 sum ``a + b`` (RNE, canonical NaN) as a sequence of steps.

    The datapath is the textbook one: unpack, swap so that ``|big| >= |small|``, align the
    smaller significand with guard, round and sticky bits, add or subtract, normalise with a
    leading-zero count, round to nearest even, then select specials. The first step takes
    ``a`` and ``b``; the last returns ``s``.
    """
    E, M, GRS = exp_bits, man_bits, _GRS
    EXP_ONES = (1 << E) - 1  # exponent field of infinities and NaNs
    N = M + 1 + GRS  # width of an aligned significand: hidden bit, fraction, G, R, S

    def flags(st: State) -> State:
        return {k: st[k] for k in _FLAGS}

    # Subnormals (exponent field 0) have no hidden bit and the exponent of the smallest
    # normal, 1. With that, one datapath serves normals, subnormals and zeros.
    def significand(x: Value) -> Value:
        return Cat(x[:M], x[M : M + E] != 0)

    def effective_exp(x: Value) -> Value:
        exp = x[M : M + E]
        return Mux(exp == 0, 1, exp)

    def compare(m: Module, st: State) -> State:
        a, b = st["a"], st["b"]
        a_sign, a_exp, a_frac = a[E + M], a[M : M + E], a[:M]
        b_sign, b_exp, b_frac = b[E + M], b[M : M + E], b[:M]
        a_nan = (a_exp == EXP_ONES) & (a_frac != 0)
        b_nan = (b_exp == EXP_ONES) & (b_frac != 0)
        a_inf = (a_exp == EXP_ONES) & (a_frac == 0)
        b_inf = (b_exp == EXP_ONES) & (b_frac == 0)
        # The exponent difference both ways round, next to the compare rather than behind
        # it, so that the swap below only selects: three short carry chains side by side
        # instead of two in a row.
        a_eff, b_eff = Signal(E), Signal(E)
        a_minus_b, b_minus_a = Signal(E), Signal(E)
        m.d.comb += [
            a_eff.eq(effective_exp(a)),
            b_eff.eq(effective_exp(b)),
            a_minus_b.eq(a_eff - b_eff),
            b_minus_a.eq(b_eff - a_eff),
        ]
        # The encoding is monotonic in magnitude, so an unsigned compare of exponent and
        # fraction together orders the magnitudes.
        return {
            "a": a,
            "b": b,
            "a_ge_b": a[: E + M] >= b[: E + M],
            "a_minus_b": a_minus_b,
            "b_minus_a": b_minus_a,
            "nan": a_nan | b_nan | (a_inf & b_inf & (a_sign != b_sign)),
            # An infinity is the larger magnitude; same signs if both (else it is a NaN).
            "inf": a_inf | b_inf,
            # The sign of an exact zero: +0 unless both operands are -0 (RNE rule for x + -x).
            "both_negative": a_sign & b_sign,
        }

    def swap(m: Module, st: State) -> State:
        # Swap so that |big| >= |small|: the difference below then never goes negative and
        # the sign of a non-zero result is the sign of big.
        a_ge_b = st["a_ge_b"]
        big = Signal(1 + E + M)
        small = Signal(1 + E + M)
        m.d.comb += [
            big.eq(Mux(a_ge_b, st["a"], st["b"])),
            small.eq(Mux(a_ge_b, st["b"], st["a"])),
        ]
        big_exp = Signal(E)
        m.d.comb += big_exp.eq(effective_exp(big))
        # The smaller significand will move right by the exponent difference; a shift of N
        # or more leaves only sticky, so the distance is clamped to N to keep the shifter
        # narrow.
        exp_diff = Signal(E)
        align = Signal(range(N + 1))
        m.d.comb += [
            exp_diff.eq(Mux(a_ge_b, st["a_minus_b"], st["b_minus_a"])),
            align.eq(Mux(exp_diff > N, N, exp_diff)),
        ]
        return {
            "big_sign": big[E + M],
            "big_exp": big_exp,
            "big_sig": significand(big),
            "small_sig": significand(small),
            "align": align,
            "subtract": big[E + M] ^ small[E + M],
            **flags(st),
        }

    def align(m: Module, st: State) -> State:
        # Every bit that falls off the end is ORed into the sticky (lowest) bit.
        small_wide = Signal(2 * N)  # upper half: aligned significand; lower half: shifted out
        m.d.comb += small_wide.eq(Cat(Const(0, N), Const(0, GRS), st["small_sig"]) >> st["align"])
        small_x = Signal(N)
        m.d.comb += small_x.eq(small_wide[N:] | small_wide[:N].any())
        return {
            "big_sign": st["big_sign"],
            "big_exp": st["big_exp"],
            "big_sig": st["big_sig"],
            "small_x": small_x,
            "subtract": st["subtract"],
            **flags(st),
        }

    def add(m: Module, st: State) -> State:
        # Add the magnitudes, or subtract them when the signs differ. One extra bit holds the
        # carry out of an addition; a subtraction cannot borrow since big_x >= small_x.
        big_x = Cat(Const(0, GRS), st["big_sig"])  # nothing of big falls below its LSB
        total = Signal(N + 1)
        m.d.comb += total.eq(Mux(st["subtract"], big_x - st["small_x"], big_x + st["small_x"]))
        return {"big_sign": st["big_sign"], "big_exp": st["big_exp"], "total": total, **flags(st)}

    def count(m: Module, st: State) -> State:
        # How far to normalise: the leading zeros move out to the left, but never so far
        # that the exponent drops below the smallest normal's: what stops early is a
        # subnormal result. Subnormal results are always exact (both operands are multiples
        # of the smallest subnormal), so no rounding happens there.
        lead_zeros = Signal(range(N + 1))
        max_shift = Signal(E)
        shift = Signal(range(N + 1))
        m.d.comb += [
            lead_zeros.eq(_leading_zeros(st["total"][:N])),
            max_shift.eq(st["big_exp"] - 1),
            shift.eq(Mux(lead_zeros > max_shift, max_shift, lead_zeros)),
        ]
        return {**st, "shift": shift}

    def normalise(m: Module, st: State) -> State:
        # After a carry the sum moves right by one (the dropped bit joins the sticky bit)
        # and the exponent grows by one; otherwise it moves left by the shift.
        total, big_exp, shift = st["total"], st["big_exp"], st["shift"]
        norm = Signal(N)  # hidden bit, fraction, guard, and two bits that only count as sticky
        norm_exp = Signal(E + 1)  # one extra bit to see overflow past the largest exponent
        with m.If(total[N]):
            m.d.comb += [
                norm.eq(Cat(total[0] | total[1], total[2 : N + 1])),
                norm_exp.eq(big_exp + 1),
            ]
        with m.Else():
            m.d.comb += [
                norm.eq(total[:N] << shift),
                norm_exp.eq(big_exp - shift),
            ]
        return {
            "big_sign": st["big_sign"],
            "norm": norm,
            "norm_exp": norm_exp,
            "zero": total == 0,
            **flags(st),
        }

    def round_and_select(m: Module, st: State) -> State:
        # Round to nearest, ties to even: add one ulp when the guard bit is set and either
        # something below it is set or the kept LSB is odd. The increment is applied to the
        # packed exponent and fraction, so a carry out of the fraction bumps the exponent:
        # that turns the largest subnormal into the smallest normal, a significand of all
        # ones into the next binade, and the largest finite number into infinity, all
        # correctly.
        norm, norm_exp, big_sign = st["norm"], st["norm_exp"], st["big_sign"]
        sig = norm[GRS:]
        guard = norm[GRS - 1]
        sticky = norm[: GRS - 1].any()
        round_up = guard & (sticky | sig[0])
        exp_field = Signal(E)
        m.d.comb += exp_field.eq(Mux(sig[M], norm_exp, 0))  # no hidden bit: subnormal
        rounded = Signal(E + M)
        m.d.comb += rounded.eq(Cat(sig[:M], exp_field) + round_up)
        infinity = Cat(Const(0, M), Const(EXP_ONES, E), big_sign)
        s = Signal(1 + E + M)
        # Specials, in priority order.
        with m.If(st["nan"]):
            m.d.comb += s.eq(canonical_nan(E, M))
        with m.Elif(st["inf"]):
            m.d.comb += s.eq(infinity)
        with m.Elif(st["zero"]):
            m.d.comb += s.eq(Cat(Const(0, E + M), st["both_negative"]))
        with m.Elif(norm_exp >= EXP_ONES):
            m.d.comb += s.eq(infinity)  # overflow
        with m.Else():
            m.d.comb += s.eq(Cat(rounded, big_sign))
        return {"s": s}

    # Delays: each bf16 step placed and routed alone (``python tests/hw/adder_harness.py
    # fpga-steps bf16``); the other formats share the proportions, which is all the split
    # needs.
    return [
        Step("compare", compare, 37),
        Step("swap", swap, 41),
        Step("align", align, 40),
        Step("add", add, 30),
        Step("count", count, 51),
        Step("normalise", normalise, 33),
        Step("round", round_and_select, 36),
    ]


def _float_slices(exp_bits: int, man_bits: int, stages: int) -> list[list[Step]]:
    return _partition(float_steps(exp_bits, man_bits), stages)


# --------------------------------------------------------------------------------------------
# Components


class IntAdder(wiring.Component):
    """Two's complement adder that wraps on overflow: ``s = (a + b) mod 2**width``, after
    ``stages`` register stages (module docstring).

    The same logic serves signed and unsigned operands, so there is no sign handling.
    """

    def __init__(self, width: int, stages: int = 0) -> None:
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"IntAdder width must be a positive integer, not {width!r}")
        self.width = width
        self.stages = _check_stages(stages)
        if stages >= width:
            raise ValueError(f"a {width}-bit adder cannot be cut into {stages + 1} slices")
        super().__init__({"a": In(width), "b": In(width), "s": Out(width)})

    def elaborate(self, platform) -> Module:
        m = Module()
        slices = AdderSlices(NumberFormat(self.width), 1, self.stages)
        _sliced(m, slices, self.a, self.b, self.s)
        return m


class FloatAdder(wiring.Component):
    """IEEE 754 binary adder for a format with ``exp_bits`` exponent and ``man_bits`` fraction
    bits: round to nearest even, subnormals kept, canonical NaN (see the module docstring),
    after ``stages`` register stages.

    Ports ``a``, ``b`` are ``In(width)`` and ``s`` is ``Out(width)``, ``width = 1 + exp_bits +
    man_bits``, sign in the MSB.
    """

    def __init__(self, exp_bits: int, man_bits: int, stages: int = 0) -> None:
        if not isinstance(exp_bits, int) or exp_bits < 2:
            raise ValueError(f"FloatAdder exp_bits must be an integer >= 2, not {exp_bits!r}")
        if not isinstance(man_bits, int) or man_bits < 1:
            raise ValueError(f"FloatAdder man_bits must be an integer >= 1, not {man_bits!r}")
        self.exp_bits = exp_bits
        self.man_bits = man_bits
        self.stages = _check_stages(stages)
        self.width = 1 + exp_bits + man_bits
        super().__init__({"a": In(self.width), "b": In(self.width), "s": Out(self.width)})

    def elaborate(self, platform) -> Module:
        m = Module()
        fmt = NumberFormat(self.width, self.exp_bits, self.man_bits)
        slices = AdderSlices(fmt, 1, self.stages)
        _sliced(m, slices, self.a, self.b, self.s)
        return m


class ElementAdder(wiring.Component):
    """Adder of one element: ``s = a + b`` in ``element_type`` arithmetic, after ``stages``
    register stages.

    ``element_type`` is a name from ``fredfab.model.dtypes.ELEMENT_TYPES`` ("int8", "int16",
    "int32", "fp16", "bf16", "fp32") or one of its ElementType values; anything else raises
    ValueError. Ports ``a``, ``b`` are ``In(width)`` and ``s`` is ``Out(width)``.
    """

    def __init__(self, element_type: str | ElementType, stages: int = 0) -> None:
        self.element_type = _element_type(element_type)
        self.width = self.element_type.bits
        self.stages = _check_stages(stages)
        super().__init__({"a": In(self.width), "b": In(self.width), "s": Out(self.width)})

    def elaborate(self, platform) -> Module:
        # The logic is built here rather than in an IntAdder or FloatAdder submodule: the extra
        # level of hierarchy would only add port aliases to the Verilog.
        m = Module()
        _sliced(m, AdderSlices(self.element_type, 1, self.stages), self.a, self.b, self.s)
        return m


class LaneAdder(wiring.Component):
    """Lane-wise adder of two vectors of ``lanes`` elements of ``element_type``, after
    ``stages`` register stages.

    Ports ``a``, ``b`` are ``In(lanes * width)`` and ``s`` is ``Out(lanes * width)``, holding the
    flit data's layout ``lanes_layout(width, lanes)``: lane ``i`` occupies bits ``[i * width,
    (i + 1) * width)``, so lane 0 is in the least significant bits. The ports are plain bits
    and viewed through the layout inside: a layout-typed port would add a named wire per lane
    (``a[0]``, ...) that reads, to a linter, like part of the input port.
    """

    def __init__(self, element_type: str | ElementType, lanes: int, stages: int = 0) -> None:
        self.element_type = _element_type(element_type)
        if not isinstance(lanes, int) or isinstance(lanes, bool) or lanes < 1:
            raise ValueError(f"LaneAdder lanes must be a positive integer, not {lanes!r}")
        self.lanes = lanes
        self.stages = _check_stages(stages)
        self.width = self.element_type.bits
        self.layout = lanes_layout(self.width, lanes)
        total = self.layout.size
        super().__init__({"a": In(total), "b": In(total), "s": Out(total)})

    def elaborate(self, platform) -> Module:
        m = Module()
        slices = AdderSlices(self.element_type, self.lanes, self.stages)
        _sliced(m, slices, self.a, self.b, self.s)
        return m
