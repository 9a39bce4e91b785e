"""Element types carried by the FRED datapath, and test data for them.

The switch adds elements of one type at a time (paper §4 does not
fix the adder format; gradients are FP16). The project supports three integer and three float
formats. Every type has an unsigned *raw* dtype of the same width: hardware sees bit patterns, so
tests compare results as raw bits (``to_bits``), which also makes NaN and signed-zero handling
explicit instead of relying on float comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from fredfab.model.errors import InputError


@dataclass(frozen=True)
class ElementType:
    """One datapath element format.

    ``exponent_bits`` and ``mantissa_bits`` (stored fraction bits, without the hidden bit) are 0
    for integers. ``raw_dtype`` is the unsigned integer dtype of the same width. ``scalar``
    names the numpy scalar type of the values (``dtype``): one of numpy's, or ``bfloat16``
    from ml_dtypes.
    """

    name: str
    scalar: str
    bits: int
    is_float: bool
    exponent_bits: int
    mantissa_bits: int
    raw_dtype: np.dtype

    @cached_property
    def dtype(self) -> np.dtype:
        """numpy's dtype of the values. ml_dtypes (bfloat16) is imported on first use only:
        loading it takes about a second, which every command that never makes a bf16 array
        (routing, the system and training models) would otherwise pay at start-up."""
        if self.scalar == "bfloat16":
            import ml_dtypes

            return np.dtype(ml_dtypes.bfloat16)
        return np.dtype(self.scalar)

    @property
    def precision(self) -> int:
        """Significand precision p including the hidden bit (floats only)."""
        self._need_float("precision")
        return self.mantissa_bits + 1

    @property
    def unit_roundoff(self) -> float:
        """u = 2^-p: the relative error bound of one round-to-nearest operation."""
        return 2.0**-self.precision

    @property
    def bias(self) -> int:
        self._need_float("bias")
        return (1 << (self.exponent_bits - 1)) - 1

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal number (also the exponent of the subnormals)."""
        return 1 - self.bias

    @property
    def emax(self) -> int:
        """Exponent of the largest finite number."""
        return self.bias

    @property
    def canonical_nan(self) -> int:
        """Bit pattern of the canonical quiet NaN: sign 0, exponent all ones, quiet bit only.

        fp16 0x7E00, bf16 0x7FC0, fp32 0x7FC00000 (the RISC-V convention); see golden.add.
        """
        self._need_float("canonical_nan")
        return canonical_nan(self.exponent_bits, self.mantissa_bits)

    @property
    def min_value(self) -> np.generic:
        """Most negative finite value (integer minimum, or -largest finite float)."""
        if self.is_float:
            return -self.max_value
        return self.dtype.type(np.iinfo(self.dtype).min)

    @property
    def max_value(self) -> np.generic:
        """Largest finite value."""
        if self.is_float:
            exp = (1 << self.exponent_bits) - 2
            mant = (1 << self.mantissa_bits) - 1
            return from_bits(np.array((exp << self.mantissa_bits) | mant, self.raw_dtype), self)[()]
        return self.dtype.type(np.iinfo(self.dtype).max)

    @property
    def smallest_subnormal(self) -> np.generic:
        """Smallest positive float, 2^(emin - mantissa_bits)."""
        self._need_float("smallest_subnormal")
        return from_bits(np.array(1, self.raw_dtype), self)[()]

    def _need_float(self, what: str) -> None:
        if not self.is_float:
            raise ValueError(f"{what} is defined for float element types only, not {self.name}")

    def __str__(self) -> str:
        return self.name


def canonical_nan(exponent_bits: int, mantissa_bits: int) -> int:
    """The only NaN the switch's adders produce, for any IEEE-style binary format: sign 0,
    exponent all ones, only the quiet bit (the fraction MSB) set. One definition for the
    golden model (``ElementType.canonical_nan``) and the RTL (hw/adder.py)."""
    exp_ones = (1 << exponent_bits) - 1
    return (exp_ones << mantissa_bits) | (1 << (mantissa_bits - 1))


def _int(name: str, scalar: str, raw: type) -> ElementType:
    bits = np.dtype(raw).itemsize * 8
    return ElementType(name, scalar, bits, False, 0, 0, np.dtype(raw))


def _float(
    name: str, scalar: str, raw: type, exponent_bits: int, mantissa_bits: int
) -> ElementType:
    bits = np.dtype(raw).itemsize * 8
    assert bits == 1 + exponent_bits + mantissa_bits
    return ElementType(name, scalar, bits, True, exponent_bits, mantissa_bits, np.dtype(raw))


ELEMENT_TYPES: dict[str, ElementType] = {
    et.name: et
    for et in (
        _int("int8", "int8", np.uint8),
        _int("int16", "int16", np.uint16),
        _int("int32", "int32", np.uint32),
        _float("fp16", "float16", np.uint16, 5, 10),
        _float("bf16", "bfloat16", np.uint16, 8, 7),
        _float("fp32", "float32", np.uint32, 8, 23),
    )
}
"""All supported element types by name."""

FLOAT_TYPES: tuple[ElementType, ...] = tuple(et for et in ELEMENT_TYPES.values() if et.is_float)
INT_TYPES: tuple[ElementType, ...] = tuple(et for et in ELEMENT_TYPES.values() if not et.is_float)


def element_type(name: str | ElementType) -> ElementType:
    """Look up an element type by name (an ElementType passes through unchanged)."""
    if isinstance(name, ElementType):
        return name
    try:
        return ELEMENT_TYPES[name]
    except (KeyError, TypeError):
        allowed = ", ".join(ELEMENT_TYPES)
        raise InputError(f"unknown element type {name!r}; allowed: {allowed}") from None


def to_bits(array: np.ndarray | np.generic, et: ElementType) -> np.ndarray:
    """Reinterpret an array of ``et.dtype`` as its raw unsigned bit patterns (no conversion)."""
    a = np.asarray(array)
    if a.dtype != et.dtype:
        raise ValueError(f"to_bits: array has dtype {a.dtype}, expected {et.dtype} for {et.name}")
    return a.view(et.raw_dtype)


def from_bits(raw: np.ndarray | np.generic | int, et: ElementType) -> np.ndarray:
    """Reinterpret raw unsigned bit patterns as an array of ``et.dtype`` (no conversion)."""
    r = np.asarray(raw)
    if r.dtype != et.raw_dtype:
        if r.dtype.kind not in "iu" or r.size and (r.min() < 0 or r.max() >> et.bits):
            raise ValueError(
                f"from_bits: expected {et.raw_dtype} bit patterns (0..2^{et.bits}-1) for "
                f"{et.name}, got {r.dtype}"
            )
        r = r.astype(et.raw_dtype)
    return r.view(et.dtype)


def random_data(
    rng: np.random.Generator,
    et: ElementType,
    shape: int | tuple[int, ...],
    edge_cases: bool = False,
) -> np.ndarray:
    """Random test data of element type ``et``.

    Without ``edge_cases``: integers are uniform over the whole range (so sums wrap often);
    floats are ``normal * 2^k`` with k spread over half the exponent range, so that adds round at
    many exponent differences while sums of thousands of values stay far from overflow (the
    error-bound checks need finite sums).

    With ``edge_cases`` about a third of the elements are replaced by values from an edge pool:
    floats: +-0, +-inf, NaNs (quiet, signalling, negative, with payloads), +-largest finite,
    +-smallest normal, +-smallest subnormal, fresh random subnormals, 3/4 of the largest finite
    (two of them overflow), half an ulp of the largest finite (max + it rounds to inf by
    ties-to-even), and +-1, +-(1+ulp) (which cancel exactly against each other); integers: min,
    max, min+1, max-1, -1, 0, 1. The pool is small, so random pairs meet often. In addition, when
    the array has at least two rows, axis 0 is treated as the operand axis (e.g. ports) and some
    columns get planted interactions between two random rows: an exact cancellation (x, -x) and
    a same-sign overflow pair (3/4 max twice; for integers max twice or min twice).

    Edge-case float data contains signalling NaNs on purpose (the hardware must turn them into
    the canonical NaN too). numpy raises "invalid" when it converts or computes with them, so
    run float conversions of such data under ``np.errstate(invalid="ignore")``, or compare bit
    patterns (``to_bits``), which never converts.
    """
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    if et.is_float:
        k = rng.integers(-(et.emax // 2), et.emax // 2 - 3, size=n)
        flat = (rng.standard_normal(n) * np.exp2(k)).astype(et.dtype)
    else:
        info = np.iinfo(et.dtype)
        flat = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=np.int64)
        flat = flat.astype(et.dtype)
    if not edge_cases or n == 0:
        return flat.reshape(shape)

    pool = _edge_pool(et)
    pick = rng.random(n) < 0.35
    flat[pick] = pool[rng.integers(0, len(pool), size=int(pick.sum()))]
    if et.is_float:
        # Fresh random subnormals: exponent field 0, random non-zero fraction, random sign.
        sub = rng.random(n) < 0.05
        m = int(sub.sum())
        raw = rng.integers(1, 1 << et.mantissa_bits, size=m, dtype=np.int64)
        raw |= rng.integers(0, 2, size=m, dtype=np.int64) << (et.bits - 1)
        flat[sub] = from_bits(raw.astype(et.raw_dtype), et)
    data = flat.reshape(shape)
    if len(shape) >= 1 and shape[0] >= 2:
        _plant_pairs(rng, et, data)
    return data


def _edge_pool(et: ElementType) -> np.ndarray:
    if not et.is_float:
        info = np.iinfo(et.dtype)
        vals = [info.min, info.max, info.min + 1, info.max - 1, -1, 0, 1]
        return np.array(vals, dtype=et.dtype)
    sign = 1 << (et.bits - 1)
    exp_ones = ((1 << et.exponent_bits) - 1) << et.mantissa_bits
    quiet = 1 << (et.mantissa_bits - 1)
    one = et.bias << et.mantissa_bits
    max_bits = int(to_bits(np.asarray(et.max_value), et))
    three_quarter_max = (max_bits & ~((1 << et.mantissa_bits) - 1)) | quiet  # 1.5 * 2^emax
    half_ulp_max = (et.emax - et.mantissa_bits - 1 + et.bias) << et.mantissa_bits
    raw = [
        0,
        sign,  # +-0
        exp_ones,
        sign | exp_ones,  # +-inf
        et.canonical_nan,
        sign | exp_ones | quiet | 1,  # negative quiet NaN with payload
        exp_ones | 1,  # signalling NaN
        max_bits,
        sign | max_bits,
        1 << et.mantissa_bits,
        sign | (1 << et.mantissa_bits),  # +-smallest normal
        1,
        sign | 1,  # +-smallest subnormal
        three_quarter_max,
        sign | three_quarter_max,
        half_ulp_max,
        one,
        sign | one,
        one | 1,
        sign | one | 1,
    ]
    return from_bits(np.array(raw, dtype=et.raw_dtype), et)


def _plant_pairs(rng: np.random.Generator, et: ElementType, data: np.ndarray) -> None:
    """Plant cancellation and overflow pairs between two rows of axis 0, in place."""
    rows = data.shape[0]
    cols = data.reshape(rows, -1)  # a view: data is contiguous here
    ncols = cols.shape[1]
    big = et.dtype.type(0.75) * et.max_value if et.is_float else et.max_value
    for kind in ("cancel", "overflow"):
        chosen = np.flatnonzero(rng.random(ncols) < 0.08)
        for c in chosen:
            i, j = rng.choice(rows, size=2, replace=False)
            if kind == "cancel":
                x = cols[i, c]
                if et.is_float:
                    cols[j, c] = -x
                else:  # two's complement: -min == min, which also cancels (min + min wraps to 0)
                    half = 1 << (et.bits - 1)
                    cols[j, c] = (-int(x) + half) % (2 * half) - half
            else:
                v = big if rng.random() < 0.5 else (-big if et.is_float else et.min_value)
                cols[i, c] = v
                cols[j, c] = v
