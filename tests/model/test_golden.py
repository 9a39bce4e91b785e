"""Golden arithmetic: the hardware add, reduction trees, reference sums and error bounds."""

from __future__ import annotations

from fractions import Fraction

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

from fredfab.model.dtypes import (
    ELEMENT_TYPES,
    FLOAT_TYPES,
    INT_TYPES,
    ElementType,
    from_bits,
    random_data,
    to_bits,
)
from fredfab.model.golden import (
    Tree,
    add,
    check_within_bound,
    error_bound,
    left_fold_tree,
    reduce_tree,
    reference_sum,
    tree_depth,
    tree_leaves,
    validate_tree,
)

FP16, BF16, FP32 = (ELEMENT_TYPES[n] for n in ("fp16", "bf16", "fp32"))
INT8, INT32 = ELEMENT_TYPES["int8"], ELEMENT_TYPES["int32"]


def f(et: ElementType, *values: float) -> np.ndarray:
    return np.array(values, dtype=et.dtype)


def bits(x: np.ndarray, et: ElementType) -> list[int]:
    return [int(v) for v in np.atleast_1d(to_bits(x, et))]


# --------------------------------------------------------------------------------------------
# an IEEE 754 add on exact rationals, independent of numpy

# (stored fraction bits, exponent bits), stated here rather than taken from ElementType.
LAYOUT = {"fp16": (10, 5), "bf16": (7, 8), "fp32": (23, 8)}
NAN = "nan"


def decode(b: int, m: int, e: int) -> tuple[int, Fraction | str]:
    """(sign, value) of a bit pattern; value is a Fraction, "inf" or NAN."""
    sign = b >> (m + e)
    exp = (b >> m) & ((1 << e) - 1)
    frac = b & ((1 << m) - 1)
    bias = (1 << (e - 1)) - 1
    if exp == (1 << e) - 1:
        return sign, "inf" if frac == 0 else NAN
    if exp == 0:
        mag = Fraction(frac, 1 << m) * Fraction(2) ** (1 - bias)
    else:
        mag = (1 + Fraction(frac, 1 << m)) * Fraction(2) ** (exp - bias)
    return sign, -mag if sign else mag


def round_to_bits(x: Fraction, zero_sign: int, m: int, e: int) -> int:
    """Round an exact rational to the nearest format value, ties to even; overflow to inf."""
    bias = (1 << (e - 1)) - 1
    sign_bit = 1 << (m + e)
    if x == 0:
        return sign_bit if zero_sign else 0
    sign = sign_bit if x < 0 else 0
    a = abs(x)
    exp = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** exp > a:
        exp -= 1
    while Fraction(2) ** (exp + 1) <= a:
        exp += 1
    exp = max(exp, 1 - bias)  # below emin the quantum stays at the subnormal spacing
    q = a / Fraction(2) ** (exp - m)
    n = q.numerator // q.denominator
    r = q - n
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2 == 1):
        n += 1
    if n == 1 << (m + 1):  # rounding carried into the next binade
        n >>= 1
        exp += 1
    if exp > bias:
        return sign | (((1 << e) - 1) << m)
    if n < 1 << m:  # subnormal (exp == emin)
        return sign | n
    return sign | ((exp + bias) << m) | (n - (1 << m))


def ieee_add(a: int, b: int, m: int, e: int) -> int | str:
    """Bits of a + b per IEEE 754 (round to nearest even), or NAN."""
    sa, va = decode(a, m, e)
    sb, vb = decode(b, m, e)
    if NAN in (va, vb):
        return NAN
    inf = ((1 << e) - 1) << m
    if va == "inf" and vb == "inf":
        return NAN if sa != sb else (sa << (m + e)) | inf
    if va == "inf" or vb == "inf":
        s = sa if va == "inf" else sb
        return (s << (m + e)) | inf
    assert isinstance(va, Fraction) and isinstance(vb, Fraction)
    # An exact zero sum is +0, except (-0) + (-0) = -0.
    return round_to_bits(va + vb, sa & sb, m, e)


def test_fraction_reference_on_known_cases() -> None:
    m, e = LAYOUT["fp16"]
    assert ieee_add(0x3C00, 0x3C00, m, e) == 0x4000  # 1 + 1 = 2
    assert ieee_add(0x6800, 0x3C00, m, e) == 0x6800  # 2048 + 1: tie, to even 2048
    assert ieee_add(0x6801, 0x3C00, m, e) == 0x6802  # 2050 + 1: tie, to even 2052
    assert ieee_add(0x7BFF, 0x4C00, m, e) == 0x7C00  # 65504 + 16: tie, rounds to inf
    assert ieee_add(0x7BFF, 0x4BFF, m, e) == 0x7BFF  # 65504 + 15.99: stays finite
    assert ieee_add(0x0001, 0x0001, m, e) == 0x0002  # subnormals add exactly
    assert ieee_add(0x03FF, 0x0001, m, e) == 0x0400  # into the smallest normal
    assert ieee_add(0x8000, 0x8000, m, e) == 0x8000  # -0 + -0 = -0
    assert ieee_add(0x3C00, 0xBC00, m, e) == 0x0000  # 1 - 1 = +0
    assert ieee_add(0x7C00, 0xFC00, m, e) == NAN


def pair_sample(rng: np.random.Generator, et: ElementType, n: int) -> tuple[np.ndarray, ...]:
    """Operand bit patterns: uniform, close exponents (real rounding), and tiny values."""
    m, e = LAYOUT[et.name]
    full = 1 << et.bits
    k = n // 3
    a1 = rng.integers(0, full, size=k)
    b1 = rng.integers(0, full, size=k)
    a2 = rng.integers(0, full, size=k)
    shift = rng.integers(-(m + 3), m + 4, size=k) << m  # exponent within +-(m+3) of a's
    b2 = (a2 & ((1 << (m + e)) - 1)) + shift
    b2 = np.clip(b2, 0, ((1 << e) - 1) << m) & ~((1 << m) - 1)
    b2 |= rng.integers(0, 1 << m, size=k) | (rng.integers(0, 2, size=k) << (m + e))
    small = (3 << m) - 1  # exponent fields 0..2: subnormals and the lowest normals
    a3 = rng.integers(0, small, size=n - 2 * k) | (rng.integers(0, 2, size=n - 2 * k) << (m + e))
    b3 = rng.integers(0, small, size=n - 2 * k) | (rng.integers(0, 2, size=n - 2 * k) << (m + e))
    a = np.concatenate([a1, a2, a3]).astype(et.raw_dtype)
    b = np.concatenate([b1, b2, b3]).astype(et.raw_dtype)
    return a, b


@pytest.mark.parametrize(("et", "n"), [(FP16, 60000), (BF16, 12000), (FP32, 12000)], ids=str)
def test_add_matches_exact_rational_rounding(et: ElementType, n: int) -> None:
    m, e = LAYOUT[et.name]
    assert (et.mantissa_bits, et.exponent_bits) == (m, e)
    a, b = pair_sample(np.random.default_rng(2024), et, n)
    got = to_bits(add(from_bits(a, et), from_bits(b, et), et), et)
    bad = []
    for x, y, g in zip(a.tolist(), b.tolist(), got.tolist(), strict=True):
        want = ieee_add(x, y, m, e)
        if (want == NAN and g != et.canonical_nan) or (want != NAN and g != want):
            bad.append((hex(x), hex(y), hex(g), want if want == NAN else hex(want)))
    assert not bad, f"{len(bad)} wrong adds, e.g. {bad[:5]}"


# --------------------------------------------------------------------------------------------
# add() against numpy, and the NaN rule


@pytest.mark.parametrize("et", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("edge", [False, True])
def test_add_equals_numpy_except_nan_payload(et: ElementType, edge: bool) -> None:
    x = random_data(np.random.default_rng(11), et, (2, 20000), edge_cases=edge)
    got = add(x[0], x[1], et)
    with np.errstate(all="ignore"):
        ref = np.add(x[0], x[1])
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(to_bits(got, et)[~nan], to_bits(ref, et)[~nan])
    assert (to_bits(got, et)[nan] == et.canonical_nan).all()
    if edge:
        assert nan.sum() > 100 and np.isinf(got).sum() > 100


@pytest.mark.parametrize("et", FLOAT_TYPES, ids=str)
def test_nan_results_are_canonical(et: ElementType) -> None:
    sign = 1 << (et.bits - 1)
    inf = ((1 << et.exponent_bits) - 1) << et.mantissa_bits
    quiet = 1 << (et.mantissa_bits - 1)
    nans = [inf | quiet | 1, sign | inf | quiet | 5, inf | 3, et.canonical_nan]  # incl. sNaN
    one = int(to_bits(np.ones((), et.dtype), et))
    for nb in nans:
        nan = from_bits(np.array([nb], et.raw_dtype), et)
        onev = from_bits(np.array([one], et.raw_dtype), et)
        assert bits(add(nan, onev, et), et) == [et.canonical_nan]
        assert bits(add(onev, nan, et), et) == [et.canonical_nan]
        assert bits(add(nan, nan, et), et) == [et.canonical_nan]
    pinf = from_bits(np.array([inf], et.raw_dtype), et)
    ninf = from_bits(np.array([sign | inf], et.raw_dtype), et)
    assert bits(add(pinf, ninf, et), et) == [et.canonical_nan]  # numpy gives the negative NaN
    assert bits(add(pinf, pinf, et), et) == [inf]
    assert bits(add(ninf, onev, et), et) == [sign | inf]


@pytest.mark.parametrize("et", FLOAT_TYPES, ids=str)
def test_float_corner_cases(et: ElementType) -> None:
    tiny = np.array([et.smallest_subnormal], et.dtype)
    assert bits(add(tiny, tiny, et), et) == [2]  # gradual underflow, no flush to zero
    assert bits(add(-tiny, tiny, et), et) == [0]  # exact cancellation gives +0
    negz = f(et, -0.0)
    assert bits(add(negz, negz, et), et) == [1 << (et.bits - 1)]
    assert bits(add(negz, f(et, 0.0), et), et) == [0]
    big = np.array([et.max_value], et.dtype)
    half_ulp = f(et, 2.0 ** (et.emax - et.mantissa_bits - 1))
    assert np.isposinf(add(big, half_ulp, et)).all()  # tie at max rounds to even = overflow
    below = np.nextafter(half_ulp, f(et, 0.0)) if et.name != "bf16" else f(et, 0.0)
    assert bits(add(big, below, et), et) == bits(big, et)
    assert np.isneginf(add(-big, -big, et)).all()


def test_add_broadcasts_and_keeps_0d() -> None:
    r = add(np.float16(1.5), np.float16(2.25), FP16)
    assert isinstance(r, np.ndarray) and r.shape == () and float(r) == 3.75
    r = add(f(FP16, 1.0, 2.0), np.float16(1.0), FP16)
    assert r.tolist() == [2.0, 3.0]


def test_add_rejects_other_dtypes() -> None:
    with pytest.raises(ValueError, match="expected float16"):
        add(f(FP16, 1.0), f(FP32, 1.0), FP16)
    with pytest.raises(ValueError, match="operand a"):
        add(np.array([1]), np.array([1], np.int32), INT32)


@pytest.mark.parametrize("et", INT_TYPES, ids=str)
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_int_add_wraps(et: ElementType, data: st.DataObject) -> None:
    info = np.iinfo(et.dtype)
    xs = data.draw(st.lists(st.integers(info.min, info.max), min_size=1, max_size=20))
    ys = data.draw(st.lists(st.integers(info.min, info.max), min_size=len(xs), max_size=len(xs)))
    got = add(np.array(xs, et.dtype), np.array(ys, et.dtype), et)
    span = 1 << et.bits
    want = [(x + y - info.min) % span + info.min for x, y in zip(xs, ys, strict=True)]
    assert got.dtype == et.dtype and got.tolist() == want


def test_int_wrap_examples() -> None:
    assert add(np.int8(127), np.int8(1), INT8) == -128
    assert add(np.int8(-128), np.int8(-1), INT8) == 127
    assert add(np.int8(-128), np.int8(-128), INT8) == 0
    i32 = np.array([2**31 - 1, -(2**31)], np.int32)
    assert add(i32, i32, INT32).tolist() == [-2, 0]


# --------------------------------------------------------------------------------------------
# reduction trees


def test_tree_helpers() -> None:
    t = ((0, 1), (2, (3, 5)))
    assert tree_leaves(t) == (0, 1, 2, 3, 5)
    assert tree_depth(t) == 3 and tree_depth(4) == 0
    assert left_fold_tree([3, 1, 2]) == ((1, 2), 3)
    assert left_fold_tree([7]) == 7
    assert validate_tree(t, leaves=[5, 3, 2, 1, 0]) == t


@pytest.mark.parametrize(
    ("tree", "msg"),
    [
        ([0, 1], "neither a port"),
        ((0, 1, 2), "neither a port"),
        ((0,), "neither a port"),
        ((True, 1), "bool"),
        ((0, -1), "negative"),
        (((0, 1), 1), "more than once"),
        ("01", "neither a port"),
    ],
)
def test_malformed_trees_are_rejected(tree: object, msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        validate_tree(tree)  # type: ignore[arg-type]


def test_tree_leaf_set_checked() -> None:
    with pytest.raises(ValueError, match="missing \\[2\\]; unexpected \\[3\\]"):
        validate_tree((0, (1, 3)), leaves=[0, 1, 2])


def test_reduce_tree_missing_leaf() -> None:
    with pytest.raises(ValueError, match="needs port\\(s\\) \\[2\\]"):
        reduce_tree(((0, 1), 2), {0: f(FP16, 1.0), 1: f(FP16, 1.0)}, FP16)
    with pytest.raises(ValueError, match="port 1 has dtype float32"):
        reduce_tree((0, 1), {0: f(FP16, 1.0), 1: f(FP32, 1.0)}, FP16)


def test_reduce_tree_follows_the_order() -> None:
    # fp16 has 11 significant bits: spacing 2 at 2048, so 2048 + 1 is a tie (to even: 2048).
    inputs = {0: f(FP16, 2048.0), 1: f(FP16, 1.0), 2: f(FP16, 1.0)}
    left = reduce_tree(((0, 1), 2), inputs, FP16)
    right = reduce_tree((0, (1, 2)), inputs, FP16)
    # by hand: (2048 + 1) + 1 = 2048 + 1 = 2048; 2048 + (1 + 1) = 2048 + 2 = 2050
    assert left.tolist() == [2048.0] and right.tolist() == [2050.0]
    step = add(inputs[0], inputs[1], FP16)
    assert step.tolist() == [2048.0]
    assert bits(left, FP16) == bits(add(step, inputs[2], FP16), FP16)
    assert bits(right, FP16) == bits(add(inputs[0], add(inputs[1], inputs[2], FP16), FP16), FP16)
    # the input arrays are not modified, and a single leaf returns a copy
    single = reduce_tree(1, inputs, FP16)
    single[0] = 5
    assert inputs[1].tolist() == [1.0]


@st.composite
def trees(draw: st.DrawFn, ports: list[int]) -> Tree:
    """A random binary tree over a random permutation of ``ports``."""
    perm = draw(st.permutations(ports))

    def build(items: list[int]) -> Tree:
        if len(items) == 1:
            return items[0]
        k = draw(st.integers(1, len(items) - 1))
        return (build(items[:k]), build(items[k:]))

    return build(list(perm))


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=st.integers(2, 9))
def test_reduce_tree_is_a_sequence_of_adds(data: st.DataObject, n: int) -> None:
    ports = sorted(data.draw(st.sets(st.integers(0, 31), min_size=n, max_size=n)))
    tree = data.draw(trees(ports))
    x = random_data(np.random.default_rng(n), FP16, (n, 64), edge_cases=True)
    inputs = dict(zip(ports, x, strict=True))

    def by_hand(t: Tree) -> np.ndarray:
        return inputs[t] if isinstance(t, int) else add(by_hand(t[0]), by_hand(t[1]), FP16)

    assert np.array_equal(
        to_bits(reduce_tree(tree, inputs, FP16), FP16), to_bits(by_hand(tree), FP16)
    )


# --------------------------------------------------------------------------------------------
# reference sum and error bound


def test_reference_sum_integers_wrap_exactly() -> None:
    x = [np.array([100, -128], np.int8)] * 3
    assert reference_sum(x).tolist() == [44.0, -128.0]  # 300 mod 256 = 44; -384 mod 256 = -128
    big = [np.array([2**31 - 1], np.int32)] * 5
    assert reference_sum(big).tolist() == [float(((5 * (2**31 - 1) + 2**31) % 2**32) - 2**31)]


def test_reference_sum_floats_exact_and_nonfinite() -> None:
    x = [f(FP32, 1e30, 1.0, np.inf, np.inf, np.nan), f(FP32, 1.0, 2.0**-30, -np.inf, 1.0, 1.0)]
    x.append(f(FP32, -1e30, -1.0, 1.0, 1.0, 1.0))
    ref = reference_sum(x)
    assert ref[0] == 1.0  # the large terms cancel exactly, the 1 survives
    assert ref[1] == 2.0**-30
    assert np.isnan(ref[2]) and ref[3] == np.inf and np.isnan(ref[4])
    with pytest.raises(ValueError, match="share dtype and shape"):
        reference_sum([f(FP16, 1.0), f(FP32, 1.0)])


@pytest.mark.parametrize("et", FLOAT_TYPES, ids=str)
def test_reference_sum_is_the_rounded_exact_sum(et: ElementType) -> None:
    x = random_data(np.random.default_rng(8), et, (6, 2000), edge_cases=True)
    m, e = LAYOUT[et.name]
    ref = reference_sum(list(x))
    raw = to_bits(x, et).astype(np.int64)
    for c in range(0, 2000, 7):  # exact Fractions, then one rounding to float64
        vals = [decode(int(b), m, e) for b in raw[:, c]]
        if any(v == NAN for _, v in vals):
            assert np.isnan(ref[c])
        elif any(v == "inf" for _, v in vals):
            signs = {s for s, v in vals if v == "inf"}
            assert (
                np.isnan(ref[c])
                if len(signs) == 2
                else ref[c] == (-np.inf, np.inf)[1 - signs.pop()]
            )
        else:
            assert ref[c] == float(sum(v for _, v in vals))


def test_error_bound_formula() -> None:
    u = 2.0**-11
    bound = error_bound([f(FP16, 1.0, -3.0), f(FP16, 2.0, 0.5)], 1, FP16)
    gamma = u / (1 - u)
    assert (bound >= np.array([3.0, 3.5]) * gamma).all()
    assert np.allclose(bound, np.array([3.0, 3.5]) * gamma, rtol=1e-5, atol=0)
    # depth multiplies: gamma_3 = 3u / (1 - 3u)
    bound3 = error_bound([f(FP16, 1.0)] * 4, 3, FP16)
    assert np.allclose(bound3, 4 * 3 * u / (1 - 3 * u), rtol=1e-5, atol=0)
    assert error_bound([f(FP16, 1.0)] * 4, 0, FP16).tolist() == [0.0]
    assert error_bound([np.array([5], np.int32)] * 3, 2, INT32).tolist() == [0.0]
    with pytest.raises(ValueError, match="depth must be >= 0"):
        error_bound([f(FP16, 1.0)], -1, FP16)


def test_error_bound_is_nearly_tight() -> None:
    # 1 + 2^-11 is a tie in fp16 and rounds to 1: error 2^-11 against a bound of about 2^-11.
    a, b = f(FP16, 1.0), f(FP16, 2.0**-11)
    computed = add(a, b, FP16)
    err = abs(float(computed[0]) - float(reference_sum([a, b])[0]))
    assert err == 2.0**-11
    assert err / error_bound([a, b], 1, FP16)[0] > 0.998


@pytest.mark.parametrize("et", FLOAT_TYPES, ids=str)
@settings(max_examples=25, deadline=None)
@given(data=st.data(), n=st.integers(1, 16), seed=st.integers(0, 2**32 - 1))
def test_random_trees_stay_within_bound(
    et: ElementType, data: st.DataObject, n: int, seed: int
) -> None:
    tree = data.draw(trees(list(range(n))))
    x = random_data(np.random.default_rng(seed), et, (n, 256))
    computed = reduce_tree(tree, dict(enumerate(x)), et)
    assert np.isfinite(computed).all()
    assert check_within_bound(computed, list(x), tree_depth(tree), et).all()
    if n >= 2:
        # Not vacuous: the sum missing its last leaf is flagged, and so is a result moved
        # by twice the bound plus one ulp.
        dropped = reduce_tree(left_fold_tree(range(n - 1)), dict(enumerate(x)), et)
        assert not check_within_bound(dropped, list(x), tree_depth(tree), et).all()
        bound = error_bound(list(x), tree_depth(tree), et)
        off = (computed.astype(np.float64) + 2 * bound + 2 * np.abs(computed)).astype(et.dtype)
        assert not check_within_bound(off, list(x), tree_depth(tree), et).any()


@pytest.mark.parametrize("et", FLOAT_TYPES, ids=str)
def test_edge_case_sums_pass_the_order_free_check(et: ElementType) -> None:
    rng = np.random.default_rng(5)
    for n in (2, 3, 5, 8):
        x = random_data(rng, et, (n, 3000), edge_cases=True)
        for tree in (left_fold_tree(range(n)), _balanced(list(range(n)))):
            computed = reduce_tree(tree, dict(enumerate(x)), et)
            assert check_within_bound(computed, list(x), tree_depth(tree), et).all()
        assert np.isnan(computed).any() and np.isinf(computed).any()


def test_order_free_check_catches_wrong_special_values() -> None:
    x = [f(FP16, 1.0, np.inf, np.nan, 60000.0, 1.0), f(FP16, 2.0, 1.0, 1.0, 60000.0, -1.0)]
    good = f(FP16, 3.0, np.inf, np.nan, np.inf, 0.0)
    assert check_within_bound(good, x, 1, FP16).tolist() == [True] * 5
    wrong = f(FP16, np.nan, 1.0, np.inf, np.nan, -np.inf)
    # 1+2 is not NaN; inf+1 is not finite; NaN input gives NaN; no -inf can arise from +-1;
    # 60000+60000 overflows to +inf only (one sign cannot make a NaN)
    assert check_within_bound(wrong, x, 1, FP16).tolist() == [False] * 5


def test_integer_check_is_exact() -> None:
    x = [np.array([2**31 - 1, 5], np.int32), np.array([1, 6], np.int32)]
    assert check_within_bound(np.array([-(2**31), 11], np.int32), x, 1, INT32).tolist() == [
        True,
        True,
    ]
    assert check_within_bound(np.array([2**31 - 1, 12], np.int32), x, 1, INT32).tolist() == [
        False,
        False,
    ]


def _balanced(ports: list[int]) -> Tree:
    if len(ports) == 1:
        return ports[0]
    h = len(ports) // 2
    return (_balanced(ports[:h]), _balanced(ports[h:]))
