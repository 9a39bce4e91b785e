"""Element types: layouts, bit views, and the random/edge-case data generator."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from fredfab.model.dtypes import (
    ELEMENT_TYPES,
    FLOAT_TYPES,
    INT_TYPES,
    ElementType,
    element_type,
    from_bits,
    random_data,
    to_bits,
)

FP16, BF16, FP32 = (ELEMENT_TYPES[n] for n in ("fp16", "bf16", "fp32"))


def test_names_and_lookup() -> None:
    assert list(ELEMENT_TYPES) == ["int8", "int16", "int32", "fp16", "bf16", "fp32"]
    assert element_type("bf16").dtype == np.dtype(ml_dtypes.bfloat16)
    assert element_type(FP16) is FP16
    with pytest.raises(ValueError, match="allowed: int8, int16, int32, fp16, bf16, fp32"):
        element_type("fp64")
    with pytest.raises(ValueError, match="unknown element type"):
        element_type(["fp16"])  # type: ignore[arg-type]


@pytest.mark.parametrize("et", FLOAT_TYPES, ids=str)
def test_float_layout_matches_finfo(et: ElementType) -> None:
    fi = ml_dtypes.finfo(et.dtype) if et.name == "bf16" else np.finfo(et.dtype)
    assert et.mantissa_bits == fi.nmant
    assert et.exponent_bits == fi.nexp
    assert et.bits == 1 + et.exponent_bits + et.mantissa_bits == et.raw_dtype.itemsize * 8
    assert et.max_value == fi.max
    assert et.smallest_subnormal == fi.smallest_subnormal
    assert et.emin == fi.minexp and et.emax == fi.maxexp - 1
    assert et.unit_roundoff == 2.0 ** -(fi.nmant + 1)


@pytest.mark.parametrize("et", INT_TYPES, ids=str)
def test_int_layout(et: ElementType) -> None:
    info = np.iinfo(et.dtype)
    assert (et.min_value, et.max_value) == (info.min, info.max)
    assert et.raw_dtype.kind == "u" and et.raw_dtype.itemsize == et.dtype.itemsize
    with pytest.raises(ValueError, match="float element types only"):
        _ = et.precision


def test_canonical_nan_patterns() -> None:
    # The hardware contract (RISC-V canonical NaN), stated as literals on purpose.
    assert FP16.canonical_nan == 0x7E00
    assert BF16.canonical_nan == 0x7FC0
    assert FP32.canonical_nan == 0x7FC00000
    for et in FLOAT_TYPES:
        assert np.isnan(from_bits(et.canonical_nan, et))


def test_known_bit_patterns() -> None:
    one = {FP16: 0x3C00, BF16: 0x3F80, FP32: 0x3F800000}
    for et, bits in one.items():
        assert int(to_bits(np.ones((), et.dtype), et)) == bits
    assert int(to_bits(np.array(-1, np.int8), ELEMENT_TYPES["int8"])) == 0xFF
    assert int(to_bits(np.array(-2, np.int32), ELEMENT_TYPES["int32"])) == 0xFFFFFFFE


@pytest.mark.parametrize("et", ELEMENT_TYPES.values(), ids=str)
def test_bits_round_trip(et: ElementType) -> None:
    rng = np.random.default_rng(7)
    raw = rng.integers(0, 1 << et.bits, size=5000, dtype=np.uint64).astype(et.raw_dtype)
    values = from_bits(raw, et)
    assert values.dtype == et.dtype
    assert np.array_equal(to_bits(values, et), raw)


def test_bit_views_reject_wrong_types() -> None:
    with pytest.raises(ValueError, match="expected float16"):
        to_bits(np.zeros(3, np.float32), FP16)
    with pytest.raises(ValueError, match="bit patterns"):
        from_bits(np.array([1 << 16]), FP16)
    with pytest.raises(ValueError, match="bit patterns"):
        from_bits(np.array([1.0]), FP16)


@pytest.mark.parametrize("et", ELEMENT_TYPES.values(), ids=str)
def test_random_data_shape_dtype_and_determinism(et: ElementType) -> None:
    a = random_data(np.random.default_rng(3), et, (4, 2, 50), edge_cases=True)
    b = random_data(np.random.default_rng(3), et, (4, 2, 50), edge_cases=True)
    assert a.shape == (4, 2, 50) and a.dtype == et.dtype
    assert np.array_equal(to_bits(a, et), to_bits(b, et))
    assert random_data(np.random.default_rng(3), et, 17).shape == (17,)


@pytest.mark.parametrize("et", FLOAT_TYPES, ids=str)
def test_plain_float_data_is_finite_and_far_from_overflow(et: ElementType) -> None:
    x = random_data(np.random.default_rng(1), et, (1000, 64))
    assert np.isfinite(x).all()
    # Sums over 1000 rows stay finite, so the error-bound checks see no overflow.
    assert np.abs(x.astype(np.float64)).sum(axis=0).max() < float(et.max_value) / 4
    # ... and the values span many binades, so adds round at many alignments.
    exps = np.frexp(x[x != 0].astype(np.float64))[1]
    assert exps.max() - exps.min() >= 8


@pytest.mark.parametrize("et", FLOAT_TYPES, ids=str)
def test_float_edge_cases_are_present(et: ElementType) -> None:
    x = random_data(np.random.default_rng(2), et, (8, 400), edge_cases=True)
    raw = to_bits(x, et).astype(np.int64)
    sign = 1 << (et.bits - 1)
    mag = raw & (sign - 1)
    exp_field = mag >> et.mantissa_bits
    max_bits = int(to_bits(np.asarray(et.max_value), et))
    inf_bits = ((1 << et.exponent_bits) - 1) << et.mantissa_bits
    quiet = 1 << (et.mantissa_bits - 1)
    assert (raw == 0).any() and (raw == sign).any()
    assert (raw == inf_bits).any() and (raw == sign | inf_bits).any()
    nan = (mag > inf_bits) & (mag < 2 * inf_bits)
    assert (raw == et.canonical_nan).any()
    assert (nan & (raw >= sign)).any()  # negative NaN
    assert (nan & (mag & quiet == 0)).any()  # signalling NaN
    assert (mag == max_bits).any()
    assert (raw == 1).any() and (raw == sign | 1).any()
    # random subnormals, other than the smallest one
    assert ((exp_field == 0) & (mag > 1)).sum() >= 20
    with np.errstate(invalid="ignore"):  # casting a signalling NaN raises "invalid"
        wide = x.astype(np.float64)
    # planted exact cancellation: some column holds x and -x (x != 0) in two rows
    cancel = [
        c
        for c in range(x.shape[1])
        if any(v != 0 and np.isfinite(v) and (wide[:, c] == -v).any() for v in wide[:, c])
    ]
    assert len(cancel) >= 10
    # planted overflow pairs: two finite same-sign values whose sum exceeds the largest finite
    big = np.abs(wide) >= 0.7 * float(et.max_value)
    assert ((big & np.isfinite(wide) & (wide > 0)).sum(axis=0) >= 2).any()
    assert ((big & np.isfinite(wide) & (wide < 0)).sum(axis=0) >= 2).any()


@pytest.mark.parametrize("et", INT_TYPES, ids=str)
def test_int_edge_cases_are_present(et: ElementType) -> None:
    x = random_data(np.random.default_rng(4), et, (4, 300), edge_cases=True)
    info = np.iinfo(et.dtype)
    for v in (info.min, info.max, -1, 0, 1):
        assert (x == v).any(), v
    # both kinds of wrap occur between rows: some column sums out of range
    s = x.astype(np.int64).sum(axis=0)
    assert (s > info.max).any() and (s < info.min).any()
