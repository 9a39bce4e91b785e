"""The time of one GEMM on a GPU-like NPU: tiles, waves and rooflines (why big GEMMs run
closer to peak than small ones).

A GEMM C[M, N] = A[M, K] B[K, N] (``batch`` independent ones for a batched GEMM) runs as
NVIDIA's "Matrix Multiplication Background" user guide (DU-09799-001, 2023) describes it:

* the output is cut into tiles of Tm x Tn, one thread block each; a tile steps through K in
  blocks of Tk (padded up to a whole block: *tile quantization* in K), and the tiles cut M
  and N up to whole tiles (*tile quantization*: ceil(M/Tm) ceil(N/Tn) tiles);
* the tiles run in *waves* of one tile per SM (the 1 thread block per SM of the large
  tensor-core tiles); the last wave may be partly empty (*wave quantization*:
  ceil(tiles / SMs) waves, each as long as one tile);
* a tile's main loop runs at ``efficiency`` of the SM's share of peak (the one calibrated
  number: the share of peak a full tile sustains, instruction issue and pipeline stalls),
  or slower when its operands cannot arrive from L2 fast enough: a Tm x Tn tile does
  2 Tm Tn Tk FLOPs per (Tm + Tn) Tk FP16 elements it loads, Tm Tn / (Tm + Tn) FLOP/byte
  (the guide's "larger tiles have more data reuse"); an L2 of ``l2_bandwidth`` shared by the
  SMs bounds it;
* the kernel as a whole moves at least A, B and C through HBM once (FP16), a roofline with
  the NPU's HBM bandwidth (the guide's math- and memory-bound GEMMs);
* the library takes the tile shape that is fastest for the GEMM (cuBLAS's heuristics choose
  among the shapes the guide lists: 256x128 and 128x256 the most efficient, down to 64x64).

Its constants are an NPU's (its file's ``[gemm]`` table, npu_files): the SM count, the tile
shapes, Tk and the L2 bandwidth. fredfab.model.training.gemm_shapes lists the GEMMs of a
transformer layer.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from fredfab.model.errors import InputError

#: Bytes per operand element (FP16/BF16 GEMMs, paper §7.3's FP16).
ELEMENT_BYTES = 2
#: The tile shapes (Tm, Tn) cuBLAS uses for FP16 tensor-core GEMMs, most efficient first
#: (NVIDIA, Matrix Multiplication Background User's Guide, DU-09799-001, sec. 2.3).
CUBLAS_TILES = (
    (256, 128),
    (128, 256),
    (128, 128),
    (256, 64),
    (64, 256),
    (128, 64),
    (64, 128),
    (64, 64),
)
#: K block of CUTLASS's default FP16 tensor-core threadblock, 128 x 256 x 64 (NVIDIA/cutlass
#: include/cutlass/gemm/device/default_gemm_configuration.h, DefaultGemmConfiguration for
#: OpClassTensorOp on Sm80, at commit 044405ce10e21d44b65ccd40c4fc2bec68789dad).
CUTLASS_TILE_K = 64


@dataclass(frozen=True)
class Gemm:
    """``batch`` GEMMs of C[m, n] = A[m, k] B[k, n]."""

    batch: int
    m: int
    n: int
    k: int

    @property
    def flops(self) -> float:
        return 2.0 * self.batch * self.m * self.n * self.k

    @property
    def hbm_bytes(self) -> float:
        """A, B and C through HBM once (FP16)."""
        return float(
            ELEMENT_BYTES * self.batch * (self.m * self.k + self.k * self.n + self.m * self.n)
        )


@dataclass(frozen=True)
class GemmModel:
    """The tiling of an NPU's GEMM library (module docstring)."""

    #: Streaming multiprocessors: tiles that run at once.
    sms: int
    #: Output tile shapes (Tm, Tn) the library chooses among.
    tiles: tuple[tuple[int, int], ...]
    #: K block of a tile's main loop.
    tile_k: int
    #: L2 bandwidth (bytes/s) the SMs share; 0 = no L2 bound (not published for the NPU).
    l2_bandwidth: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.sms, int) or self.sms < 1:
            raise InputError(f"[gemm] sms must be a whole number >= 1, got {self.sms!r}")
        if not isinstance(self.tile_k, int) or self.tile_k < 1:
            raise InputError(f"[gemm] tile_k must be a whole number >= 1, got {self.tile_k!r}")
        if not self.tiles:
            raise InputError("[gemm] tiles must list at least one [Tm, Tn] shape")
        for t in self.tiles:
            if len(t) != 2 or not all(isinstance(x, int) and x >= 1 for x in t):
                raise InputError(f"[gemm] tiles: each is [Tm, Tn] of whole numbers >= 1, got {t!r}")
        if not self.l2_bandwidth >= 0:
            raise InputError(f"[gemm] l2_GBps must be >= 0, got {self.l2_bandwidth!r}")

    def time(self, g: Gemm, peak_flops: float, efficiency: float, hbm_bandwidth: float) -> float:
        """Seconds of ``g`` on an NPU of ``peak_flops`` whose full tiles sustain
        ``efficiency`` of it, with ``hbm_bandwidth`` bytes/s of HBM."""
        if g.flops == 0:
            return 0.0
        return _time(self, g, peak_flops, efficiency, hbm_bandwidth)

    def efficiency(self, g: Gemm, peak_flops: float, efficiency: float, hbm: float) -> float:
        """The share of peak ``g`` achieves (its FLOPs / (time x peak))."""
        return g.flops / (self.time(g, peak_flops, efficiency, hbm) * peak_flops)


#: The paper's wafer NPU is H100-like (paper §6.1): an H100 SXM5's 132 SMs (NVIDIA H100
#: datasheet), cuBLAS's tiles; no L2 bound (NVIDIA publishes no H100 L2 bandwidth). The
#: default of config.NPU, as the shipped wafer and h100 NPU files state.
H100_GEMM = GemmModel(sms=132, tiles=CUBLAS_TILES, tile_k=CUTLASS_TILE_K)


@functools.lru_cache(maxsize=4096)
def _time(model: GemmModel, g: Gemm, peak: float, eff: float, hbm: float) -> float:
    per_sm = peak / model.sms * eff
    k_pad = math.ceil(g.k / model.tile_k) * model.tile_k
    best = math.inf
    for tm, tn in model.tiles:
        rate = per_sm
        if model.l2_bandwidth > 0:
            # FLOPs per operand byte of the main loop: 2 Tm Tn Tk / ((Tm + Tn) Tk x 2 bytes).
            intensity = 2 * tm * tn / ((tm + tn) * ELEMENT_BYTES)
            rate = min(rate, intensity * model.l2_bandwidth / model.sms)
        tiles = g.batch * math.ceil(g.m / tm) * math.ceil(g.n / tn)
        waves = math.ceil(tiles / model.sms)
        best = min(best, waves * 2.0 * tm * tn * k_pad / rate)
    return max(best, g.hbm_bytes / hbm)
