"""fred sensitivity's engine: each varied setting reaches the estimate it should."""

from pathlib import Path

import pytest

from fredfab.model.system import load_fabric
from fredfab.model.training import NPU, load_workload
from fredfab.sim.engines.sensitivity import (
    VARIABLES,
    check_values,
    scaled_fabric,
    sensitivity,
    with_seq,
)
from fredfab.sim.engines.training import compare, estimate

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "astra-sim"

FABS = ["mesh", "fred-d"]


def test_default_point_is_the_plain_comparison():
    # H100's 989 TFLOP/s is the NPU default: that point is `compare` itself.
    res = sensitivity("transformer-17b", "tflops", [989, 4500], fabrics=FABS)
    ref = compare("transformer-17b", fabrics=FABS)
    assert [e.time for e in res.points[0].result.estimates] == [e.time for e in ref.estimates]
    p = res.points[1]
    for f in ("mesh-5x4", "fred-d"):
        e = res.estimate(p, f)
        assert res.speedup(p, f) == pytest.approx(res.estimate(p, "mesh-5x4").time / e.time)
    # 4500 instead of 989 TFLOP/s: the GEMMs take 989/4500 of the time; the memory-bound
    # kernels (LayerNorm, dropout, GeLU, the embedding, the optimizer step) do not shrink,
    # nor do the GEMMs that 4500 TFLOP/s makes HBM-bound (their roofline, gemm.py):
    # c1 = G 989/4500 + M, c0 = G + M, and M is about a tenth of c0 at 989.
    c0, c1 = (res.estimate(q, "mesh-5x4").breakdown["compute"] for q in res.points)
    memory_bound = (c1 - c0 * 989 / 4500) / (1 - 989 / 4500)
    assert 0.02 * c0 < memory_bound < 0.15 * c0


def test_faster_compute_makes_communication_matter_more():
    res = sensitivity("transformer-17b", "tflops", fabrics=FABS)
    sp = [res.speedup(p, "fred-d") for p in res.points]
    assert sp == sorted(sp) and sp[-1] > sp[0]
    bound = res.comm_bound_from("mesh-5x4")
    for p in res.points:
        e = res.estimate(p, "mesh-5x4")
        assert res.comm_bound(p, "mesh-5x4") == (e.exposed_comm >= e.breakdown["compute"])
        if bound is not None and p.value < bound:
            assert not res.comm_bound(p, "mesh-5x4")


def test_link_bandwidth_scales_fabric_links_not_io():
    fab = load_fabric("mesh")
    x2 = scaled_fabric(fab, 2.0)
    io = set(fab.ios)
    for a, b in zip(fab.links, x2.links, strict=True):
        touches_io = a.src in io or a.dst in io
        assert b.bandwidth == (a.bandwidth if touches_io else 2 * a.bandwidth)
    # Twice the link bandwidth: the mesh's MP All-Reduces (blocking compute) take about half.
    kw = dict(samples_per_replica=1, microbatches=1, strategy="MP4-DP5-PP1")
    one = estimate("transformer-17b", fab, kw.pop("strategy"), **kw)
    two = estimate("transformer-17b", x2, "MP4-DP5-PP1", **kw)
    assert two.breakdown["compute"] == pytest.approx(one.breakdown["compute"], rel=1e-12)
    assert two.breakdown["mp"] == pytest.approx(one.breakdown["mp"] / 2, rel=0.05)


def test_sequence_length_rebuilds_the_transformer():
    wl = load_workload("transformer-17b")
    longer = with_seq(wl, 2048)
    assert longer.params == wl.params + 1024 * 4256  # learned positions grow with s
    assert longer.input_bytes == 2 * wl.input_bytes
    block = next(x for x in longer.layers if x.kind == "transformer")
    h, s = 4256, 2048
    assert block.fwd_flops == 24 * s * h * h + 4 * s * s * h
    with pytest.raises(ValueError, match="transformer"):
        with_seq(load_workload("resnet-152"), 512)


def test_samples_and_efficiency_reach_the_estimate():
    res = sensitivity("resnet-152", "samples", [8, 32], fabrics=["mesh"])
    assert [p.result.estimates[0].minibatch for p in res.points] == [160, 640]
    res = sensitivity("resnet-152", "efficiency", [0.25], fabrics=["mesh"])
    ref = estimate("resnet-152", "mesh", npu=NPU(efficiency=0.25))
    assert res.points[0].result.estimates[0].time == ref.time


@pytest.mark.parametrize(
    "name, values, msg",
    [
        ("efficiency", [0.0], "out of range"),
        ("efficiency", [1.5], "out of range"),
        ("seq", [100.5], "whole"),
        ("samples", [], "at least one"),
        ("tflops", list(range(1, 40)), "at most"),
        ("cats", [1], "choose one of"),
    ],
)
def test_bad_values_are_refused(name, values, msg):
    with pytest.raises(ValueError, match=msg):
        check_values(name, values)


def test_every_default_is_within_its_bounds():
    for v in VARIABLES.values():
        assert check_values(v.name, v.defaults) == v.defaults


def test_link_bandwidth_scales_an_astra_sim_topology():
    # A dims fabric's links must match its dimensions, so the dimensions are scaled.
    fab = load_fabric(EXAMPLES / "torus-4x8.toml")
    x2 = scaled_fabric(fab, 2.0)
    assert x2.routing == fab.routing and x2.num_npus == fab.num_npus
    assert [d.bandwidth for d in x2.dims.dims] == [2 * d.bandwidth for d in fab.dims.dims]
    for a, b in zip(fab.links, x2.links, strict=True):
        assert (b.src, b.dst, b.bandwidth) == (a.src, a.dst, 2 * a.bandwidth)
