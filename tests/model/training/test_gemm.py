"""The GEMM timing model: tile and wave quantization, the tile's L2 bound, the HBM roofline,
and the transformer layer's GEMMs against the workload's FLOP count."""

import math

import pytest

from fredfab.model.errors import InputError
from fredfab.model.training.gemm import CUBLAS_TILES, Gemm, GemmModel
from fredfab.model.training.gemm_shapes import (
    backward,
    lm_head,
    transformer_block,
    transformer_gemms,
)
from fredfab.model.training.npu_files import load_npu
from fredfab.model.training.workload import transformer_layers

PEAK = 312e12
ONE_TILE = GemmModel(sms=108, tiles=((256, 128),), tile_k=64)
FAST = 1e30  # HBM without limit


def t(model, g, eff=1.0, hbm=FAST):
    return model.time(g, PEAK, eff, hbm)


def test_a_full_wave_of_full_tiles_runs_at_the_efficiency():
    g = Gemm(1, 256 * 12, 128 * 9, 4096)  # 108 tiles, one wave
    assert t(ONE_TILE, g, 0.7) == pytest.approx(g.flops / (0.7 * PEAK))
    assert ONE_TILE.efficiency(g, PEAK, 0.7, FAST) == pytest.approx(0.7)


def test_one_tile_more_than_the_sms_takes_a_second_wave():
    full = Gemm(1, 256 * 12, 128 * 9, 4096)
    more = Gemm(1, 256 * 12 + 1, 128 * 9, 4096)  # a 13th row of tiles: 117 tiles, 2 waves
    assert t(ONE_TILE, more) == pytest.approx(2 * t(ONE_TILE, full))


def test_tile_quantization_in_m_n_and_k():
    base = t(ONE_TILE, Gemm(1, 256, 128, 64))
    assert t(ONE_TILE, Gemm(1, 200, 100, 64)) == pytest.approx(base)  # padded to one tile
    assert t(ONE_TILE, Gemm(1, 256, 128, 65)) == pytest.approx(2 * base)  # a second K block


def test_a_batched_gemm_counts_the_tiles_of_every_member():
    assert t(ONE_TILE, Gemm(108, 256, 128, 64)) == pytest.approx(t(ONE_TILE, Gemm(1, 256, 128, 64)))
    assert t(ONE_TILE, Gemm(109, 256, 128, 64)) == pytest.approx(
        2 * t(ONE_TILE, Gemm(1, 256, 128, 64))
    )


def test_the_library_takes_the_fastest_tile_and_small_tiles_are_l2_bound():
    thin = Gemm(1, 8192, 64, 8192)  # N = 64: a 256x128 tile wastes half of itself
    small = GemmModel(sms=108, tiles=CUBLAS_TILES, tile_k=64)
    assert t(small, thin) < t(ONE_TILE, thin)
    l2 = 7219e9
    bound = GemmModel(sms=108, tiles=((64, 64),), tile_k=64, l2_bandwidth=l2)
    free = GemmModel(sms=108, tiles=((64, 64),), tile_k=64)
    g = Gemm(1, 64 * 108, 64, 4096)
    # A 64x64 tile does 32 FLOPs per operand byte: 32 x 7219 GB/s < 312 TFLOP/s.
    assert t(bound, g) == pytest.approx(g.flops / (32 * l2))
    assert t(free, g) == pytest.approx(g.flops / PEAK)


def test_a_gemm_with_little_reuse_is_hbm_bound():
    g = Gemm(64, 2048, 2048, 64)  # attention scores of head size 64: writes s x s per head
    hbm = 2039e9
    assert t(ONE_TILE, g, hbm=hbm) == pytest.approx(g.hbm_bytes / hbm)
    assert g.hbm_bytes / hbm > t(ONE_TILE, g)


def test_efficiency_never_exceeds_the_full_tile_one():
    a100 = load_npu("a100")
    for m, n, k in [(2048, 9600, 25600), (100, 100, 100), (32768, 6912, 2304), (2048, 96, 2048)]:
        e = a100.gemm.efficiency(Gemm(1, m, n, k), a100.peak_flops, a100.efficiency, a100.hbm_rate)
        assert 0 < e <= a100.efficiency + 1e-12


@pytest.mark.parametrize(
    ("h", "a", "mp", "b"), [(2304, 24, 1, 16), (6144, 64, 8, 1), (4256, 28, 5, 2)]
)
def test_the_block_gemms_are_the_workload_flops(h, a, mp, b):
    s, v = 2048, 51200
    block, head = transformer_layers(1, h, a, s, v, flash_attention=False)[1:]
    lg = transformer_block(h, a, s, b, mp)
    share = math.ceil(a / mp) / a  # the slowest rank's heads
    assert sum(g.flops for g in lg.fwd) == pytest.approx(block.fwd_flops * b * share)
    assert sum(g.flops for g in lg.bwd) == pytest.approx(block.bwd_flops * b * share)
    assert sum(g.flops for g in lg.attention_core) == pytest.approx(4 * s * s * h * b * share)
    lh = lm_head(h, s, v, b, mp)
    assert sum(g.flops for g in lh.fwd) == pytest.approx(head.fwd_flops * b * math.ceil(v / mp) / v)


def test_backward_transposes_the_operands():
    dA, dB = backward(Gemm(3, 10, 20, 30))
    assert (dA.m, dA.n, dA.k) == (10, 30, 20) and (dB.m, dB.n, dB.k) == (30, 20, 10)
    assert dA.batch == dB.batch == 3


def test_only_transformer_shapes_have_gemms():
    assert transformer_gemms({"blocks": [3, 4]}, 1, 1) is None
    shape = {"layers": 2, "hidden": 64, "heads": 4, "seq": 16, "vocab": 100}
    assert set(transformer_gemms(shape, 1, 1)) == {"transformer", "head"}


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"sms": 0}, "sms"),
        ({"tile_k": 0}, "tile_k"),
        ({"tiles": ()}, "tiles"),
        ({"tiles": ((0, 64),)}, "tiles"),
        ({"l2_bandwidth": -1.0}, "l2_GBps"),
    ],
)
def test_bad_gemm_models_are_refused(kw, match):
    args = {"sms": 108, "tiles": CUBLAS_TILES, "tile_k": 64, **kw}
    with pytest.raises(InputError, match=match):
        GemmModel(**args)
