"""Golden arithmetic of the FRED datapath: one hardware add, reduction trees, error bounds.

A FRED switch reduces a flow inside its R/RD-uSwitches (paper §4): every
uSwitch that reduces performs one element-wise add of its two inputs, so a flow's result is a
binary tree of adds whose shape depends on the routing. This module defines that add bit-exactly
and evaluates any tree, so that a network model (or RTL) that reports its trees can be checked
bit for bit, and gives an order-free reference and error bound for checks that do not know the
tree.

The add (``add``):

* Integers (int8/int16/int32): two's complement, wrapping modulo 2^bits, like a plain adder.
* Floats (fp16/bf16/fp32): IEEE 754 addition with round-to-nearest-even, gradual underflow
  (full subnormals, no flush-to-zero), infinities and signed zeros as IEEE specifies, which is
  exactly numpy's result in that dtype.
* NaN rule (ours, not numpy's): every NaN result is the canonical quiet NaN of the type:
  sign 0, exponent all ones, quiet bit set, zero payload: fp16 0x7E00, bf16 0x7FC0,
  fp32 0x7FC00000 (the RISC-V convention). Which results are NaN follows IEEE/numpy: a NaN
  operand (quiet or signalling) gives NaN, and inf + -inf gives NaN. Payloads are not kept
  because numpy's own payloads are not a usable hardware contract: they differ between dtypes
  and compilers (with numpy 2.x on x86-64, fp32 propagates the first operand's payload, fp16 the
  second operand's, ml_dtypes bf16 drops it, and inf - inf yields the x86 default NaN with the
  sign bit set). Canonicalising also makes a reduction's NaN independent of the tree shape.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeAlias

import numpy as np

from fredfab.model.dtypes import ElementType, to_bits

Tree: TypeAlias = "int | tuple[Tree, Tree]"
"""A reduction tree: a port number (leaf) or a pair (left, right) of trees, e.g. ((0, 1), 2).
Each pair is one hardware add whose left operand is the first element."""


# --------------------------------------------------------------------------------------------
# one hardware add


def add(a: np.ndarray | np.generic, b: np.ndarray | np.generic, et: ElementType) -> np.ndarray:
    """One element-wise hardware add of two operands of element type ``et`` (see module doc).

    Both operands must already have dtype ``et.dtype`` (a silent conversion would hide an extra
    rounding); they broadcast like numpy arrays. Returns a new array (0-d for scalars).
    """
    x = _operand(a, et, "a")
    y = _operand(b, et, "b")
    shape = np.broadcast_shapes(x.shape, y.shape)
    if not et.is_float:
        # Unsigned add wraps modulo 2^bits without numpy overflow checks; reinterpreting the bits
        # is two's complement wrap-around.
        out = np.empty(shape, et.raw_dtype)
        np.add(x.view(et.raw_dtype), y.view(et.raw_dtype), out=out)
        return out.view(et.dtype)
    out = np.empty(shape, et.dtype)
    with np.errstate(all="ignore"):  # overflow and inf - inf are results here, not errors
        # numpy (and ml_dtypes for bf16) computes fp16/bf16 as float32 add then rounds to the
        # target type. That double rounding is innocuous: float32 has 24 >= 2p + 2 bits for
        # p = 11 (fp16) and p = 8 (bf16), and its exponent range covers the targets' subnormals,
        # so the result equals a single correctly rounded add (Figueroa 1995). fp32 is native.
        np.add(x, y, out=out)
    nan = np.isnan(out)
    if nan.any():
        to_bits(out, et)[nan] = et.canonical_nan
    return out


def _operand(v: np.ndarray | np.generic, et: ElementType, what: str) -> np.ndarray:
    arr = np.asarray(v)
    if arr.dtype != et.dtype:
        raise ValueError(
            f"add: operand {what} has dtype {arr.dtype}, expected {et.dtype} for {et.name} "
            f"(convert explicitly, e.g. np.asarray(x, dtype=et.dtype))"
        )
    return arr


# --------------------------------------------------------------------------------------------
# reduction trees


def validate_tree(tree: Tree, leaves: Iterable[int] | None = None) -> Tree:
    """Check that ``tree`` is well formed; return it unchanged.

    Well formed: every node is a non-negative int port or a 2-tuple of trees, and no port occurs
    twice (a port's data enters a flow once). If ``leaves`` is given, the tree's ports must be
    exactly that set. Raises ValueError saying what is wrong.
    """
    seen: list[int] = []
    _collect(tree, seen, tree)
    dup = sorted({p for p in seen if seen.count(p) > 1})
    if dup:
        raise ValueError(f"tree {tree!r}: port(s) {dup} occur more than once")
    if leaves is not None:
        want = set(leaves)
        if set(seen) != want:
            missing, extra = sorted(want - set(seen)), sorted(set(seen) - want)
            raise ValueError(
                f"tree {tree!r} has leaves {sorted(seen)}, expected {sorted(want)}"
                + (f"; missing {missing}" if missing else "")
                + (f"; unexpected {extra}" if extra else "")
            )
    return tree


def _collect(node: object, out: list[int], whole: object) -> None:
    if isinstance(node, bool):
        raise ValueError(f"tree {whole!r}: {node!r} is a bool, not a port")
    if isinstance(node, int | np.integer):
        if node < 0:
            raise ValueError(f"tree {whole!r}: port {node} is negative")
        out.append(int(node))
        return
    if isinstance(node, tuple) and len(node) == 2:
        _collect(node[0], out, whole)
        _collect(node[1], out, whole)
        return
    raise ValueError(
        f"tree {whole!r}: node {node!r} is neither a port (int) nor a pair (left, right)"
    )


def tree_leaves(tree: Tree) -> tuple[int, ...]:
    """Ports of ``tree`` from left to right."""
    out: list[int] = []
    _collect(tree, out, tree)
    return tuple(out)


def tree_depth(tree: Tree) -> int:
    """Number of adds on the longest leaf-to-root path (0 for a single port)."""
    validate_tree(tree)
    return _depth(tree)


def _depth(node: Tree) -> int:
    if isinstance(node, tuple):
        return 1 + max(_depth(node[0]), _depth(node[1]))
    return 0


def left_fold_tree(ports: Iterable[int]) -> Tree:
    """The default order: sorted ports folded from the left, ((p0, p1), p2), ..."""
    items = sorted(int(p) for p in ports)
    if not items:
        raise ValueError("left_fold_tree: needs at least one port")
    tree: Tree = items[0]
    for p in items[1:]:
        tree = (tree, p)
    return validate_tree(tree)


def reduce_tree(tree: Tree, inputs: Mapping[int, np.ndarray], et: ElementType) -> np.ndarray:
    """Sum ``inputs`` over the ports of ``tree`` with one ``add`` per internal node.

    The left operand of each add is the first element of the pair, which matters for NaN-free
    results only through rounding (float addition is commutative, so swapping the operands of
    one add changes nothing; regrouping does). Ports of ``inputs`` outside the tree are ignored;
    a leaf missing from ``inputs`` raises ValueError. A single-port tree returns a copy of that
    port's data.
    """
    validate_tree(tree)
    missing = sorted(set(tree_leaves(tree)) - set(inputs))
    if missing:
        raise ValueError(
            f"reduce_tree: tree {tree!r} needs port(s) {missing}, inputs has {sorted(inputs)}"
        )
    return _eval(tree, inputs, et)


def _eval(node: Tree, inputs: Mapping[int, np.ndarray], et: ElementType) -> np.ndarray:
    if isinstance(node, tuple):
        return add(_eval(node[0], inputs, et), _eval(node[1], inputs, et), et)
    leaf = np.asarray(inputs[node])
    if leaf.dtype != et.dtype:
        raise ValueError(f"reduce_tree: port {node} has dtype {leaf.dtype}, expected {et.dtype}")
    return leaf.copy()


# --------------------------------------------------------------------------------------------
# order-free reference and error bound


def reference_sum(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Order-free sum of same-shaped arrays, as float64.

    Integers: summed exactly, then wrapped to the arrays' type (so it equals any tree of
    ``add``). Floats: the exact sum rounded once to float64 (``math.fsum`` per element, a Python
    loop meant for test-sized data; fp16 takes an exact vectorised path), which is far more
    precise than any format here; non-finite inputs follow IEEE: NaN if any input is NaN or both
    +inf and -inf occur, else +-inf if an infinity occurs.
    """
    stack = _stack(arrays)
    if stack.dtype.kind in "iu":
        bits = stack.dtype.itemsize * 8
        total = stack.astype(np.int64).sum(axis=0)  # exact: at most 2^31 * n, n < 2^32
        half = np.int64(1) << (bits - 1)
        return ((total + half) % (2 * half) - half).astype(np.float64)
    with np.errstate(invalid="ignore"):  # signalling NaNs; inf - inf
        wide = stack.astype(np.float64)  # exact for fp16/bf16/fp32
        if stack.dtype == np.float16 and len(stack) <= 4096:
            # fp16 values are multiples of 2^-24 below 2^16: up to 4096 of them add exactly in
            # float64's 53 bits in any order, and numpy's inf/NaN rules are the ones above.
            return wide.sum(axis=0)
    flat = wide.reshape(len(wide), -1)
    out = np.empty(flat.shape[1], np.float64)
    for c in range(flat.shape[1]):
        col = flat[:, c]
        if np.isfinite(col).all():
            out[c] = math.fsum(col)
        elif np.isnan(col).any() or (np.inf in col and -np.inf in col):
            out[c] = np.nan
        else:
            out[c] = np.inf if np.inf in col else -np.inf
    return out.reshape(wide.shape[1:])


def error_bound(arrays: Sequence[np.ndarray], depth: int, et: ElementType) -> np.ndarray:
    """Bound on |computed - exact| for a tree of ``add`` of depth ``depth`` over ``arrays``.

    |computed - exact| <= gamma_d * sum_i |x_i|, gamma_d = d*u / (1 - d*u), u = 2^-p, where p is
    the precision including the hidden bit and d the tree depth (Higham, Accuracy and Stability
    of Numerical Algorithms, 2nd ed., section 4.2: each x_i passes through at most d roundings,
    each a factor (1 + delta) with |delta| <= u).

    It holds whenever no intermediate sum overflows; a finite result of finite inputs implies
    that (an overflow gives inf, which no later add turns finite again). Results that are
    inf/NaN are checked separately (``check_within_bound``): NaN iff an input is NaN or an inf
    meets an inf of the other sign, inf only if an input is inf or partial sums can overflow.
    Gradual underflow keeps the bound valid: a sum of two floats that lands in the subnormal
    range is exactly representable (both operands are multiples of the smallest subnormal, and
    so is their sum), so such an add has delta = 0; results in the normal range obey the usual
    |delta| <= u. With flush-to-zero this would fail.

    Integers wrap exactly: the bound is 0. The bound is returned as float64, inflated by a
    relative 2^-20 (a millionth of the bound, irrelevant to what it catches) so that float64
    rounding in sum |x_i| and in the comparison cannot raise false alarms for fp32.
    """
    if depth < 0:
        raise ValueError(f"error_bound: depth must be >= 0, got {depth}")
    stack = _stack(arrays)
    if stack.dtype != et.dtype:
        raise ValueError(f"error_bound: arrays have dtype {stack.dtype}, expected {et.dtype}")
    if not et.is_float:
        return np.zeros(stack.shape[1:], np.float64)
    du = depth * et.unit_roundoff
    if du >= 1:
        raise ValueError(f"error_bound: depth {depth} too large for {et.name} (d*u >= 1)")
    gamma = du / (1 - du)
    # inf/NaN inputs give inf/NaN bounds (inf * 0 at depth 0): they are checked apart.
    with np.errstate(invalid="ignore"):
        total = np.abs(stack.astype(np.float64)).sum(axis=0)
        return total * gamma * (1 + 2.0**-20)


def check_within_bound(
    computed: np.ndarray, arrays: Sequence[np.ndarray], depth: int, et: ElementType
) -> np.ndarray:
    """Boolean mask, per element: is ``computed`` consistent with some depth-``depth`` tree?

    Finite result: all inputs finite and |computed - reference_sum| <= error_bound.
    NaN result: allowed iff an input is NaN, or +inf and -inf can both arise (from inputs or
    from partial sums that can overflow). +inf result: no input NaN, +inf can arise, and no
    input is -inf (an infinite input reaches the root, where the two would give NaN); -inf
    likewise. "+inf can arise" means an input is +inf or the positive inputs add up, with the
    rounding allowance of the bound, to at least the overflow threshold (max finite + half an
    ulp): every computed partial sum is sum x_i (1 + theta_i) with |theta_i| <= gamma_d, so it
    stays below (1 + gamma_d) * (sum of positive x_i). This order-free check is necessary, not
    sufficient: only a known tree (``reduce_tree``) gives the exact answer. Integers must match
    exactly.
    """
    stack = _stack(arrays)
    comp = np.asarray(computed)
    if comp.dtype != et.dtype or comp.shape != stack.shape[1:]:
        raise ValueError(
            f"check_within_bound: computed is {comp.dtype}{comp.shape}, expected "
            f"{et.dtype}{stack.shape[1:]}"
        )
    ref = reference_sum(list(stack))
    if not et.is_float:
        return comp.astype(np.float64) == ref
    bound = error_bound(list(stack), depth, et)
    grow = 1 + depth * et.unit_roundoff / (1 - depth * et.unit_roundoff)
    threshold = float(et.max_value) + 2.0 ** (et.emax - et.mantissa_bits - 1)
    with np.errstate(invalid="ignore"):  # signalling NaNs, inf - inf
        wide = stack.astype(np.float64)
        c = comp.astype(np.float64)
        any_nan = np.isnan(wide).any(axis=0)
        finite_in = np.isfinite(wide).all(axis=0)
        pos = np.where(wide > 0, wide, 0).sum(axis=0)
        neg = np.where(wide < 0, -wide, 0).sum(axis=0)
        can_pos = pos * grow >= threshold  # includes +inf inputs (pos = inf)
        can_neg = neg * grow >= threshold
        ok_finite = finite_in & np.isfinite(c) & (np.abs(c - ref) <= bound)
    ok_nan = np.isnan(c) & (any_nan | (can_pos & can_neg))
    # An infinite input always reaches the root, where it meets any infinity of the other sign.
    ok_pinf = (c == np.inf) & ~any_nan & can_pos & ~np.isneginf(wide).any(axis=0)
    ok_ninf = (c == -np.inf) & ~any_nan & can_neg & ~np.isposinf(wide).any(axis=0)
    return ok_finite | ok_nan | ok_pinf | ok_ninf


def _stack(arrays: Sequence[np.ndarray]) -> np.ndarray:
    arrays = [np.asarray(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to sum")
    dtypes = {a.dtype for a in arrays}
    shapes = {a.shape for a in arrays}
    if len(dtypes) != 1 or len(shapes) != 1:
        raise ValueError(
            f"arrays must share dtype and shape, got dtypes {sorted(map(str, dtypes))} "
            f"and shapes {sorted(shapes)}"
        )
    return np.stack(arrays)
