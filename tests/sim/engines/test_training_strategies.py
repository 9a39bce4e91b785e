"""Every strategy on the engine: uneven head splits, --ignore-memory, exposed communication by
kind, and the sweep's study (reductions against the mesh)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fredfab.model.training import NPU, factorizations
from fredfab.sim.engines.training import estimate, sweep


@settings(max_examples=12, deadline=None)
@given(
    strategy=st.sampled_from([str(s) for s in factorizations(20)]),
    fabric=st.sampled_from(["mesh", "fred-a", "fred-d"]),
    workload=st.sampled_from(["transformer-17b", "gpt3-175b"]),
)
def test_compute_bubble_and_exposed_add_up_on_the_simulator(strategy, fabric, workload):
    e = estimate(workload, fabric, strategy, sweep_settings=True, ignore_memory=True)
    assert e.ok
    assert set(e.exposed) == {"mp", "dp", "pp", "io"}
    parts = e.breakdown["compute"] + e.breakdown["bubble"] + e.exposed_comm
    assert parts == pytest.approx(e.time, rel=1e-9)
    d = e.to_dict()
    assert d["exposed_comm_s"] == pytest.approx(
        e.time - d["breakdown_s"]["compute"] - d["bubble_s"]
    )


def test_uneven_heads_run_with_a_note_and_cost_the_largest_share():
    # MP5 over 28 heads: ranks hold 6 or 5; MP4 holds 7 each. The busiest NPU's compute of
    # the transformer blocks scales with the heads it holds: 6/7 of MP4's.
    # The GEMMs' share: HBM without limit, so that the memory-bound kernels (LayerNorms and
    # dropouts are replicated on MP ranks, they do not shrink with the heads), the weights
    # and the optimizer step take no time; every GEMM at one rate (no GEMM model, whose tile
    # quantization would move the ratio by a few percent).
    kw = dict(samples_per_replica=1, microbatches=1, npu=NPU(hbm_bandwidth=1e30, gemm=None))
    five = estimate("transformer-17b", "fred-d", "MP5-DP4-PP1", **kw)
    four = estimate("transformer-17b", "fred-d", "MP4-DP5-PP1", **kw)
    assert any("MP 5 over 28 heads gives ranks 6 or 5" in n for n in five.notes)
    assert not any(n.startswith("uneven") for n in four.notes)
    # Not exactly 6/7: the LM head's vocabulary split follows the heads too, the
    # embedding has no FLOPs.
    assert five.breakdown["compute"] / four.breakdown["compute"] == pytest.approx(6 / 7, rel=0.005)


def test_every_strategy_of_transformer_17b_applies():
    res = sweep("transformer-17b", fabrics=["fred-d"], processes=1, ignore_memory=True)
    assert not res.invalid and len(res.estimates) == 18
    over = [e for e in res.estimates if not e.fits]
    assert [e.strategy for e in over] == ["MP1-DP20-PP1"]  # 82.5 GB per NPU
    assert all(e.ok for e in res.estimates)
    assert res.best()["fred-d"].fits  # a strategy that does not fit is never the best
    assert any("does not fit, estimated anyway" in n for n in over[0].notes)


def test_ignore_memory_estimates_and_flags():
    kw = dict(npu=NPU(hbm_bytes=40e9))
    skipped = estimate("transformer-17b", "fred-d", "MP1-DP20-PP1", **kw)
    forced = estimate("transformer-17b", "fred-d", "MP1-DP20-PP1", ignore_memory=True, **kw)
    assert skipped.status == "does-not-fit" and skipped.time is None
    assert forced.ok and not forced.fits and forced.time > 0
    assert forced.memory == skipped.memory  # the same (least-HBM) policy, reported
    assert forced.to_dict()["fits"] is False


def test_sweep_reduction_against_the_mesh():
    res = sweep("transformer-17b", fabrics=["mesh", "fred-d"], processes=1)
    assert res.baseline == "mesh-5x4"
    rs = []
    for e in res.estimates:
        r = res.reduction(e)
        base = next(x for x in res.estimates if x.fabric == "mesh-5x4" and x.strategy == e.strategy)
        if not (e.ok and base.ok):
            assert r is None
            continue
        assert r == pytest.approx(1 - e.exposed_comm / base.exposed_comm)
        if e.fabric == "fred-d":
            rs.append(r)
    mean, n = res.mean_reduction()["fred-d"]
    assert n == len(rs) and mean == pytest.approx(sum(rs) / len(rs))
    assert res.mean_reduction()["mesh-5x4"] == (0.0, n)
    # FRED-D's in-switch collectives expose less than the mesh on every strategy.
    assert all(res.reduction(e) > 0 for e in res.estimates if e.fabric == "fred-d" and e.ok)
