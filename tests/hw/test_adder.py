# amaranth: UnusedElaboratable=no
# (tests build adders only to inspect ports or constructor errors; see amaranth's own tests)
"""Element adders (fredfab.hw.adder): bit-exact against numpy, the NaN rule and the golden model,
combinational and pipelined.

Fast checks run the Amaranth simulator on a LaneAdder (many lanes per step, so one simulator
step checks many vectors). The bulk checks (a million pairs, every fp16/bf16 pair) run the
converted Verilog in Verilator through tests/hw/adder_harness.py; only the fp16 million-pair
samples (the combinational adder and the one with every step in its own slice) are in the
default suite, the rest is marked slow (``pytest -m slow tests/hw``).

The pipelined adders are the combinational one's steps with registers between them (the
values a step hands to the next, and nothing else: hw/adder.py). Any depth puts its registers
at a subset of the six step boundaries, and the deepest, MAX_ADDER_STAGES, at all of them; so
the exhaustive fp16 and bf16 runs at that depth check every boundary's register contents on
every operand pair, and every other depth is checked on a million pairs (slow suite) and on
the edge-heavy sample in the Amaranth simulator (default suite).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from amaranth.back import verilog
from amaranth.hdl import Module, unsigned
from amaranth.lib.wiring import Flow
from amaranth.sim import Simulator

from fredfab.hw.adder import (
    ElementAdder,
    FloatAdder,
    IntAdder,
    LaneAdder,
    canonical_nan,
    element_width,
    float_steps,
    slice_plan,
)
from fredfab.hw.flit import flit_layout
from fredfab.model import golden
from fredfab.model.dtypes import ELEMENT_TYPES, from_bits, to_bits
from fredfab.model.switch.latency import MAX_ADDER_STAGES
from tests.hw.adder_harness import (
    BUILD_ROOT,
    FORMATS,
    exhaustive_check,
    lint_verilog,
    operand_pairs,
    reference_add,
    sample_check,
)

FLOATS = ["fp16", "bf16", "fp32"]
INTS = ["int8", "int16", "int32"]
SEEDS = {"fp16": 16, "bf16": 1016, "fp32": 32}


def simulate(
    name: str, a: np.ndarray, b: np.ndarray, lanes: int = 64, stages: int = 0
) -> np.ndarray:
    """Sums of the operand bit patterns ``a``, ``b`` from a LaneAdder in the Python simulator;
    with ``stages`` > 0 one vector per clock, each sum read ``stages`` cycles after its
    operands (so a pipeline of any other latency returns the wrong sums)."""
    fmt = FORMATS[name]
    dut = LaneAdder(name, lanes, stages)
    n = len(a)
    blocks = -(-n // lanes)
    padded = np.zeros((2, blocks * lanes), fmt.raw)
    padded[0, :n], padded[1, :n] = a, b
    vectors = [
        [int.from_bytes(row[k * lanes : (k + 1) * lanes].tobytes(), "little") for row in padded]
        for k in range(blocks)
    ]
    results: list[int] = []

    async def testbench(ctx):
        for va, vb in vectors:
            ctx.set(dut.a, va)
            ctx.set(dut.b, vb)
            results.append(ctx.get(dut.s))

    async def clocked(ctx):
        for k in range(len(vectors) + stages):
            if k < len(vectors):
                ctx.set(dut.a, vectors[k][0])
                ctx.set(dut.b, vectors[k][1])
            if k >= stages:
                results.append(ctx.get(dut.s))
            await ctx.tick()

    sim = Simulator(dut)
    if stages:
        sim.add_clock(1e-8)
        sim.add_testbench(clocked)
    else:
        sim.add_testbench(testbench)
    sim.run()
    nbytes = lanes * fmt.raw.itemsize
    return np.frombuffer(b"".join(v.to_bytes(nbytes, "little") for v in results), fmt.raw)[:n]


def golden_add(name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    et = ELEMENT_TYPES[name]
    return to_bits(golden.add(from_bits(a, et), from_bits(b, et), et), et)


def mismatch_report(name, a, b, got, want, limit=10) -> str:
    digits = FORMATS[name].bits // 4
    bad = np.flatnonzero(got != want)
    rows = [f"{a[i]:0{digits}x} + {b[i]:0{digits}x} = {got[i]:0{digits}x}" for i in bad[:limit]]
    rows = [f"  {r}, expected {want[i]:0{digits}x}" for r, i in zip(rows, bad, strict=False)]
    return f"{name}: {len(bad)} of {len(a)} wrong:\n" + "\n".join(rows)


# --------------------------------------------------------------------------------------------
# API


@pytest.mark.parametrize(
    "name, width",
    [("int8", 8), ("int16", 16), ("int32", 32), ("fp16", 16), ("bf16", 16), ("fp32", 32)],
)
def test_ports_have_the_element_width(name, width):
    assert element_width(name) == width
    adder = ElementAdder(name)
    assert adder.signature.members["a"].flow == Flow.In
    assert adder.signature.members["b"].flow == Flow.In
    assert adder.signature.members["s"].flow == Flow.Out
    assert [adder.a.shape(), adder.b.shape(), adder.s.shape()] == [unsigned(width)] * 3
    lanes = LaneAdder(name, 5)
    assert [lanes.a.shape(), lanes.b.shape(), lanes.s.shape()] == [unsigned(5 * width)] * 3


@pytest.mark.parametrize("bad", ["fp64", "FP16", "float16", "", None, 16])
def test_unknown_element_type_is_a_value_error_naming_the_allowed_ones(bad):
    for make in (ElementAdder, lambda t: LaneAdder(t, 4), element_width):
        with pytest.raises(ValueError, match=r"unknown element type.*int8.*fp16.*bf16.*fp32"):
            make(bad)


@pytest.mark.parametrize("lanes", [0, -1, 2.0, True, "4"])
def test_lane_count_must_be_a_positive_int(lanes):
    with pytest.raises(ValueError, match="lanes must be a positive integer"):
        LaneAdder("fp16", lanes)


@pytest.mark.parametrize("stages", [-1, MAX_ADDER_STAGES + 1, 1.5, True, "2"])
def test_stage_count_is_bounded(stages):
    for make in (
        lambda: ElementAdder("bf16", stages),
        lambda: LaneAdder("fp16", 2, stages),
        lambda: FloatAdder(5, 10, stages),
        lambda: IntAdder(16, stages),
    ):
        with pytest.raises(ValueError, match=r"adder stages must be"):
            make()


def test_an_integer_adder_has_a_bit_per_slice_at_least():
    IntAdder(4, 3)  # four one-bit slices
    with pytest.raises(ValueError, match=r"a 4-bit adder cannot be cut into 5 slices"):
        IntAdder(4, 4)


def test_slice_plan_makes_the_slowest_slice_as_fast_as_any_split_can():
    delays = [s.delay for s in float_steps(8, 7)]
    n, head, tail = len(delays), 13, 25

    def slowest(cuts):
        bounds = [0, *cuts, n]
        costs = [sum(delays[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
        costs[0] += head
        costs[-1] += tail
        return max(costs)

    assert slice_plan(delays, 0) == ()
    assert slice_plan(delays, n - 1) == tuple(range(1, n))
    for stages in range(1, n):
        cuts = slice_plan(delays, stages, head, tail)
        assert len(cuts) == stages and list(cuts) == sorted(set(cuts))
        best = min(slowest(c) for c in itertools.combinations(range(1, n), stages))
        assert slowest(cuts) == best
    assert slice_plan([4, 4, 10, 1], 2, head=0, tail=0) == (2, 3)  # 8 | 10 | 1
    assert slice_plan([4, 4, 10, 1], 2, head=3, tail=0) == (1, 2)  # 7 | 4 | 11
    # Ties on the slowest slice go to the split whose next slowest is faster (10 | 2 | 9,
    # not 10 | 1 | 10), then to the earliest cuts.
    assert slice_plan([1, 9, 1, 1, 9], 2, head=0, tail=0) == (2, 4)
    assert slice_plan([5, 1, 10, 1, 5], 3, head=0, tail=0) == (1, 2, 3)
    with pytest.raises(ValueError, match=r"4 register stages need more than 4 steps"):
        slice_plan([1, 1, 10, 1], 4)


def _pipelined_cases(names, slow_names):
    for name in names + slow_names:
        marks = [pytest.mark.slow] if name in slow_names else []
        for stages in range(1, MAX_ADDER_STAGES + 1):
            yield pytest.param(name, stages, marks=marks, id=f"{name}-{stages}")


@pytest.mark.parametrize(
    "name,stages", list(_pipelined_cases(["fp16", "bf16", "int16"], ["fp32", "int8", "int32"]))
)
def test_pipelined_adders_equal_the_reference_at_every_depth(name, stages):
    """The edge-heavy operand sample through a pipelined LaneAdder: the right sums, each
    exactly ``stages`` cycles after its operands (tests/hw/adder_harness.py and the Verilator
    runs below check a million pairs and every fp16 and bf16 pair)."""
    a, b = operand_pairs(FORMATS[name], 96, seed=SEEDS.get(name, 7) + stages)
    got = simulate(name, a, b, lanes=8, stages=stages)
    want = reference_add(FORMATS[name], a, b)
    assert np.array_equal(got, want), mismatch_report(name, a, b, got, want)


def test_generic_cores_validate_their_parameters():
    with pytest.raises(ValueError, match="exp_bits"):
        FloatAdder(1, 10)
    with pytest.raises(ValueError, match="man_bits"):
        FloatAdder(5, 0)
    with pytest.raises(ValueError, match="width"):
        IntAdder(0)
    assert FloatAdder(5, 10).a.shape() == unsigned(16)
    assert IntAdder(12).s.shape() == unsigned(12)


@pytest.mark.parametrize("name, bits", [("fp16", 0x7E00), ("bf16", 0x7FC0), ("fp32", 0x7FC00000)])
def test_canonical_nan_is_the_risc_v_one_and_the_golden_models(name, bits):
    et = ELEMENT_TYPES[name]
    assert canonical_nan(et.exponent_bits, et.mantissa_bits) == bits == et.canonical_nan


def test_lane_zero_is_in_the_least_significant_bits():
    got = simulate("int8", np.array([1, 2, 3, 4], np.uint8), np.array([16, 32, 48, 64], np.uint8))
    assert got.tolist() == [17, 34, 51, 68]
    # The same through raw port values, independent of the packing helper above.
    dut = LaneAdder("int8", 4)
    seen = []

    async def testbench(ctx):
        ctx.set(dut.a, 0x04030201)
        ctx.set(dut.b, 0xFF302010)
        seen.append(ctx.get(dut.s))

    sim = Simulator(dut)
    sim.add_testbench(testbench)
    sim.run()
    assert seen == [0x03332211]  # lane 3: 4 + 0xFF wraps to 3, without carrying out


# --------------------------------------------------------------------------------------------
# Directed corner cases, expected values worked out by hand (each also checked both ways round)

DIRECTED = {
    "fp16": [
        ("1 + 1", 0x3C00, 0x3C00, 0x4000),
        ("1 + -1 is +0", 0x3C00, 0xBC00, 0x0000),
        ("+0 + -0 is +0", 0x0000, 0x8000, 0x0000),
        ("-0 + -0 is -0", 0x8000, 0x8000, 0x8000),
        ("-min subnormal + -0", 0x8001, 0x8000, 0x8001),
        ("-1.5 + 0.25", 0xBE00, 0x3400, 0xBD00),
        ("min subnormal twice", 0x0001, 0x0001, 0x0002),
        ("max subnormal + min subnormal is min normal", 0x03FF, 0x0001, 0x0400),
        ("min normal - min subnormal is max subnormal", 0x0400, 0x8001, 0x03FF),
        ("min normal - min normal", 0x0400, 0x8400, 0x0000),
        ("cancellation down to a subnormal", 0x0401, 0x8400, 0x0001),
        ("massive cancellation (1 + ulp) - 1 = ulp", 0x3C01, 0xBC00, 0x1400),
        ("tie rounds to even (down)", 0x3C00, 0x1000, 0x3C00),
        ("tie rounds to even (up)", 0x3C01, 0x1000, 0x3C02),
        ("just above a tie rounds up (sticky)", 0x3C00, 0x1001, 0x3C01),
        ("tie below a power of two rounds to even", 0x3C00, 0x8C00, 0x3C00),
        ("exact result in the binade below", 0x3C00, 0x9000, 0x3BFF),
        ("tie that carries into the exponent", 0x3FFF, 0x1000, 0x4000),
        ("1 + min subnormal rounds to 1", 0x3C00, 0x0001, 0x3C00),
        ("1 - min subnormal rounds to 1", 0x3C00, 0x8001, 0x3C00),
        ("max + max overflows", 0x7BFF, 0x7BFF, 0x7C00),
        ("-max + -max overflows to -inf", 0xFBFF, 0xFBFF, 0xFC00),
        ("max + half ulp: tie, odd, rounds to inf", 0x7BFF, 0x4C00, 0x7C00),
        ("max + less than half ulp stays max", 0x7BFF, 0x4BFF, 0x7BFF),
        ("inf + 1", 0x7C00, 0x3C00, 0x7C00),
        ("-inf + max", 0xFC00, 0x7BFF, 0xFC00),
        ("inf + inf", 0x7C00, 0x7C00, 0x7C00),
        ("-inf + -inf", 0xFC00, 0xFC00, 0xFC00),
        ("inf + -inf is NaN", 0x7C00, 0xFC00, 0x7E00),
        ("quiet NaN + 1", 0x7E00, 0x3C00, 0x7E00),
        ("negative NaN with payload", 0xFE55, 0x3C00, 0x7E00),
        ("signalling NaN", 0x7C01, 0x3C00, 0x7E00),
        ("signalling NaN + inf", 0xFD00, 0x7C00, 0x7E00),
        ("NaN + NaN", 0x7FFF, 0xFC01, 0x7E00),
    ],
    "bf16": [
        ("1 + 1", 0x3F80, 0x3F80, 0x4000),
        ("1 + -1 is +0", 0x3F80, 0xBF80, 0x0000),
        ("-0 + -0 is -0", 0x8000, 0x8000, 0x8000),
        ("max subnormal + min subnormal is min normal", 0x007F, 0x0001, 0x0080),
        ("tie rounds to even (down)", 0x3F80, 0x3B80, 0x3F80),
        ("tie rounds to even (up)", 0x3F81, 0x3B80, 0x3F82),
        ("max + half ulp: tie, odd, rounds to inf", 0x7F7F, 0x7B00, 0x7F80),
        ("1 + min subnormal rounds to 1", 0x3F80, 0x0001, 0x3F80),
        ("inf + -inf is NaN", 0x7F80, 0xFF80, 0x7FC0),
        ("signalling NaN", 0x7F81, 0x0000, 0x7FC0),
        ("negative NaN with payload", 0xFFC5, 0x3F80, 0x7FC0),
    ],
    "fp32": [
        ("1 + 1", 0x3F800000, 0x3F800000, 0x40000000),
        ("1 + -1 is +0", 0x3F800000, 0xBF800000, 0x00000000),
        ("-0 + -0 is -0", 0x80000000, 0x80000000, 0x80000000),
        ("max subnormal + min subnormal", 0x007FFFFF, 0x00000001, 0x00800000),
        ("tie rounds to even (down)", 0x3F800000, 0x33800000, 0x3F800000),
        ("tie rounds to even (up)", 0x3F800001, 0x33800000, 0x3F800002),
        ("just above a tie rounds up (sticky)", 0x3F800000, 0x33800001, 0x3F800001),
        ("max + half ulp: tie, odd, rounds to inf", 0x7F7FFFFF, 0x73000000, 0x7F800000),
        ("1 - min subnormal rounds to 1", 0x3F800000, 0x80000001, 0x3F800000),
        ("inf + -inf is NaN", 0x7F800000, 0xFF800000, 0x7FC00000),
        ("signalling NaN", 0x7F800001, 0x3F800000, 0x7FC00000),
        ("negative NaN with payload", 0xFFC12345, 0x3F800000, 0x7FC00000),
    ],
    "int8": [
        ("max + 1 wraps to min", 0x7F, 0x01, 0x80),
        ("min + -1 wraps to max", 0x80, 0xFF, 0x7F),
        ("min + min wraps to 0", 0x80, 0x80, 0x00),
        ("-1 + 1", 0xFF, 0x01, 0x00),
        ("max + max", 0x7F, 0x7F, 0xFE),
    ],
    "int32": [
        ("max + 1 wraps to min", 0x7FFFFFFF, 1, 0x80000000),
        ("min + -1 wraps to max", 0x80000000, 0xFFFFFFFF, 0x7FFFFFFF),
        ("-1 + -1", 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFE),
    ],
}


@pytest.mark.parametrize("name", list(DIRECTED))
def test_directed_corner_cases(name):
    cases = DIRECTED[name]
    raw = FORMATS[name].raw
    a = np.array([c[1] for c in cases] + [c[2] for c in cases], raw)
    b = np.array([c[2] for c in cases] + [c[1] for c in cases], raw)
    want = np.array([c[3] for c in cases] * 2, raw)
    got = simulate(name, a, b, lanes=len(a))
    wrong = [
        f"{cases[i % len(cases)][0]}: {a[i]:#x} + {b[i]:#x} = {got[i]:#x}, expected {want[i]:#x}"
        for i in np.flatnonzero(got != want)
    ]
    assert not wrong, "\n".join(wrong)
    # The hand-written expectations agree with the reference used for the random tests.
    assert np.array_equal(reference_add(FORMATS[name], a, b), want)


# --------------------------------------------------------------------------------------------
# Random operands: numpy, the NaN rule and the golden model


@pytest.mark.parametrize("name, n", [("fp16", 4096), ("bf16", 4096), ("fp32", 2048)])
def test_random_and_edge_floats_match_numpy_bit_for_bit(name, n):
    a, b = operand_pairs(FORMATS[name], n, seed=SEEDS[name])
    got = simulate(name, a, b)
    want = reference_add(FORMATS[name], a, b)
    assert np.array_equal(got, want), mismatch_report(name, a, b, got, want)
    assert np.array_equal(got, golden_add(name, a, b)), mismatch_report(
        name, a, b, got, golden_add(name, a, b)
    )


@pytest.mark.parametrize("name", INTS)
def test_random_and_edge_ints_wrap_like_twos_complement(name):
    a, b = operand_pairs(FORMATS[name], 1024, seed=7)
    got = simulate(name, a, b)
    want = reference_add(FORMATS[name], a, b)
    assert np.array_equal(got, want), mismatch_report(name, a, b, got, want)
    assert np.array_equal(got, golden_add(name, a, b))


@pytest.mark.parametrize("name", FLOATS)
def test_operand_generator_reaches_the_corners(name):
    """The random operands must exercise what the adder is tested for, or the tests above
    prove little: overflow, subnormal results, exact zeros of both signs, signalling NaN
    operands, and rounding ties both ways."""
    fmt = FORMATS[name]
    a, b = operand_pairs(fmt, 4096 if name != "fp32" else 2048, seed=SEEDS[name])
    s = reference_add(fmt, a, b)
    exp_ones = ((1 << fmt.exp_bits) - 1) << fmt.man_bits
    mag = (1 << (fmt.bits - 1)) - 1

    def finite(x):
        return (x & mag) < exp_ones

    sign = 1 << (fmt.bits - 1)
    counts = {
        "overflow to inf": np.sum(finite(a) & finite(b) & ((s & mag) == exp_ones)),
        "subnormal result": np.sum(((s & exp_ones) == 0) & ((s & mag) != 0)),
        "+0 from non-zero operands": np.sum((s == 0) & ((a & mag) != 0)),
        "-0 result": np.sum(s == sign),
        "signalling NaN operand": np.sum(
            ((a & mag) > exp_ones) & ((a & (1 << (fmt.man_bits - 1))) == 0)
        ),
    }
    # Ties: the exact sum lies half-way between the result and its neighbour on the other side.
    # float64 holds the exact sum of two fp16 or bf16 numbers, and of two fp32 numbers whose
    # exponents differ by less than 29.
    ok = finite(a) & finite(b) & finite(s) & ((s & mag) != 0)
    if name == "fp32":
        ea = (a.astype(np.int64) >> fmt.man_bits) & 0xFF
        eb = (b.astype(np.int64) >> fmt.man_bits) & 0xFF
        ok &= np.abs(ea - eb) < 29
    a, b, s = a[ok], b[ok], s[ok]

    def f64(bits):
        return bits.astype(fmt.raw).view(fmt.dtype).astype(np.float64)

    exact = np.abs(f64(a) + f64(b))
    r_mag = s & mag
    r, up, down = f64(r_mag), f64(r_mag + 1), f64(r_mag - 1)
    counts["ties rounded away from zero"] = np.sum((exact < r) & ((r - exact) * 2 == r - down))
    counts["ties rounded towards zero"] = np.sum((exact > r) & ((exact - r) * 2 == up - r))
    counts = {k: int(v) for k, v in counts.items()}
    low = {k: v for k, v in counts.items() if v < 10}
    assert not low, f"{name}: operand generator rarely reaches {low}; all counts: {counts}"


# --------------------------------------------------------------------------------------------
# Verilog


# A missing Verilator (needs mark) or C++ toolchain (ToolMissing) skips these tests, or fails
# them under CI: tests/conftest.py decides.


@pytest.mark.needs("verilator")
@pytest.mark.parametrize("name", INTS + FLOATS)
def test_verilog_converts_and_lints_clean(name):
    """verilator --lint-only -Wall finds nothing beyond the waivers lint_verilog explains,
    combinational and pipelined."""
    for dut, top in (
        (ElementAdder(name), f"adder_{name}"),
        (LaneAdder(name, 3), f"lanes_{name}"),
        (LaneAdder(name, 2, 3), f"lanes_{name}_a3"),
    ):
        text = verilog.convert(dut, name=top)  # warnings are errors in this suite
        assert f"module {top}(" in text
        problems = lint_verilog(text, BUILD_ROOT / "lint" / name)
        assert not problems, "\n".join(problems)


class _IgnoresTopBitOfA(IntAdder):
    def elaborate(self, platform) -> Module:
        m = Module()
        m.d.comb += self.s.eq(self.a[:-1] + self.b)
        return m


@pytest.mark.needs("verilator")
def test_lint_reports_an_ignored_input_bit():
    """The UNUSEDSIGNAL waiver must not hide an operand bit that the logic ignores."""
    text = verilog.convert(_IgnoresTopBitOfA(8), name="bad_adder")
    problems = lint_verilog(text, BUILD_ROOT / "lint" / "bad")
    assert any("UNUSEDSIGNAL" in p and "'a'" in p for p in problems), problems


@pytest.mark.needs("verilator")
@pytest.mark.parametrize("stages", [0, MAX_ADDER_STAGES])
def test_verilator_million_fp16_pairs(stages):
    """A million edge-heavy fp16 pairs through the converted Verilog (Verilator), the
    combinational adder and the one with a register at every step boundary."""
    res = sample_check(FORMATS["fp16"], 1_000_000, 2024, stages)
    assert res.count == 0, res.describe(FORMATS["fp16"])


# --------------------------------------------------------------------------------------------
# Slow: bulk and exhaustive checks through Verilator


@pytest.mark.slow
@pytest.mark.needs("verilator")
@pytest.mark.parametrize("name", ["bf16", "fp32", *INTS])
def test_verilator_million_pairs(name):
    res = sample_check(FORMATS[name], 1_000_000, 2024)
    assert res.count == 0, res.describe(FORMATS[name])


@pytest.mark.slow
@pytest.mark.needs("verilator")
@pytest.mark.parametrize("stages", range(1, MAX_ADDER_STAGES + 1))
@pytest.mark.parametrize("name", ["fp16", "bf16", "fp32", *INTS])
def test_verilator_million_pairs_pipelined(name, stages):
    res = sample_check(FORMATS[name], 1_000_000, 2024 + stages, stages)
    assert res.count == 0, res.describe(FORMATS[name])


@pytest.mark.slow
@pytest.mark.needs("verilator")
@pytest.mark.parametrize("stages", [0, MAX_ADDER_STAGES])
@pytest.mark.parametrize("name", ["fp16", "bf16"])
def test_exhaustive_every_pair(name, stages):
    """All 2^32 operand pairs (a few minutes each with two cores), through the combinational
    adder and through the one with a register at every step boundary (module docstring)."""
    res = exhaustive_check(FORMATS[name], stages=stages)
    assert res.count == 0, res.describe(FORMATS[name])


@pytest.mark.slow
@pytest.mark.needs("verilator")
@pytest.mark.parametrize("stages", range(MAX_ADDER_STAGES + 1))
@pytest.mark.parametrize("name", ["e5m2", "e4m3", "e3m4"])
def test_generic_float_adder_exhaustive_on_float8(name, stages):
    """FloatAdder at other (exponent, mantissa) sizes: every pair of three float8 formats, at
    every depth."""
    res = exhaustive_check(FORMATS[name], stages=stages)
    assert res.count == 0, res.describe(FORMATS[name])


def test_lane_adder_lanes_are_the_flits_lanes():
    """The uSwitch feeds a LaneAdder straight from a flit's data: same lanes, same bits."""
    adder = LaneAdder("bf16", 3)
    data = flit_layout(16, 3)["data"].shape
    assert adder.layout == data
    assert [data[i].offset for i in range(3)] == [0, 16, 32]  # lane 0 in the LSBs
    assert len(adder.a) == len(adder.s) == data.size == 48
