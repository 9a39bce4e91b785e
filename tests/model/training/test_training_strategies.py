"""Uneven MP head splits, and exposed communication apart from the pipeline bubble."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fredfab.model.system import Strategy
from fredfab.model.training import NPU, Layout, TrainingConfig, split_stages
from fredfab.model.training.iteration import stationary, streaming
from fredfab.model.training.memory import memory
from fredfab.model.training.parallel import MPSplit, factorizations, mp_split
from fredfab.model.training.timeline import CATEGORIES, EXPOSED_KINDS, exposed
from fredfab.model.training.workload import workload_from_dict
from tests.model.training.test_training_iteration import FixedComm, toy

#: An NPU whose HBM never limits a layer: compute time is FLOPs / rate exactly.
FAST_HBM = NPU(peak_flops=1e12, efficiency=1.0, hbm_bandwidth=1e30, gemm=None)


def small_transformer(heads: int, hidden: int = 84, layers: int = 2):
    return workload_from_dict(
        {
            "schema": "fred-workload/1",
            "name": "tiny",
            "transformer": {
                "layers": layers,
                "hidden": hidden,
                "heads": heads,
                "seq": 16,
                "vocab": 100,
            },
        }
    )


@pytest.mark.parametrize(
    "mp, heads, largest, divisor",
    [(2, 28, 14, 2), (5, 28, 6, 28 / 6), (10, 28, 3, 28 / 3), (20, 28, 2, 14), (28, 28, 1, 28)],
)
def test_split_gives_the_slowest_rank_the_ceiling(mp, heads, largest, divisor):
    s = MPSplit(mp, heads)
    assert s.largest == largest and s.divisor == pytest.approx(divisor)
    assert s.even == (heads % mp == 0)
    # Every head is owned: ranks hold the ceiling or the floor, summing to the heads.
    counts = [heads // mp + (1 if r < heads % mp else 0) for r in range(mp)]
    assert sum(counts) == heads and max(counts) == s.largest
    assert (s.note() == "") == s.even
    if not s.even:
        assert f"{largest} or {heads // mp} heads" in s.note()


def test_more_ranks_than_heads_is_rejected():
    with pytest.raises(ValueError, match="exceeds the 4 heads"):
        MPSplit(5, 4)


def test_only_transformers_split_unevenly():
    assert mp_split(small_transformer(7), 2).units == 7
    assert mp_split(toy(), 3).units is None  # explicit layers: any MP divides


@pytest.mark.parametrize("mp", [1, 2, 3, 4, 5, 6, 7])
def test_uneven_split_compute_and_memory_follow_the_largest_rank(mp):
    heads = 7
    wl = small_transformer(heads)
    a = wl.arrays()
    share = -(-heads // mp) / heads  # ceil(heads / MP) of the heads
    cfg = TrainingConfig(strategy=Strategy(mp=mp), samples_per_replica=2)
    ranges = [(0, wl.num_layers)]
    sch = stationary(wl, cfg, FAST_HBM, Layout(cfg.strategy), FixedComm(), ranges, "none")
    flops = float((a["fwd_flops"] + a["bwd_flops"]).sum()) * 2  # two samples
    assert sch.schedule().breakdown["compute"] == pytest.approx(flops * share / 1e12, rel=1e-9)
    mem = memory(wl, cfg, FAST_HBM, ranges, "none", 1)
    assert mem.weights == pytest.approx(2 * float(a["params"].sum()) * share, rel=1e-12)


def test_even_split_is_unchanged():
    # MP dividing the heads: the divisor is MP itself, bit for bit.
    wl = small_transformer(heads=6, hidden=84)
    for mp in (1, 2, 3, 6):
        assert mp_split(wl, mp).divisor == mp


def test_exposed_kinds_cover_every_communication_category():
    comm = {c for cats in EXPOSED_KINDS.values() for c in cats}
    assert comm == set(CATEGORIES) - {"compute", "bubble"}


@st.composite
def configurations(draw):
    n_layers = draw(st.integers(1, 6))
    npus = draw(st.sampled_from([1, 2, 4, 6, 8]))
    strat = draw(st.sampled_from([s for s in factorizations(npus) if s.pp <= n_layers]))
    execution = draw(st.sampled_from(["weight-stationary", "weight-streaming"]))
    m = draw(st.integers(1, 4))
    samples = m * draw(st.integers(1, 3))
    ar = {"op": "all-reduce", "bytes": 8}
    wl = toy(
        n_layers=n_layers,
        params=draw(st.integers(1, 10**6)),
        fwd=draw(st.floats(1e9, 1e12)),
        input_bytes=4,
        mp_comm=[{**ar, "pass": "fwd"}, {**ar, "pass": "bwd"}],
    )
    times = {
        k: draw(st.floats(0, 2))
        for k in (
            "all_reduce",
            "reduce_scatter",
            "all_gather",
            "io_broadcast",
            "io_reduce",
            "p2p",
        )
    }
    cfg = TrainingConfig(
        strategy=strat,
        execution=execution,
        samples_per_replica=samples,
        microbatches=m,
        zero_stage=draw(st.sampled_from([0, 1, 2])),
        pipeline=draw(st.sampled_from(["1f1b", "gpipe"])),
        dp_bucket_bytes=draw(st.sampled_from([1.0, 1e6, 1e9])),
    )
    return wl, cfg, FixedComm(**times)


@settings(max_examples=150, deadline=None)
@given(configurations())
def test_compute_bubble_and_exposed_kinds_add_up_to_the_iteration(config):
    wl, cfg, comm = config
    layout = Layout(cfg.strategy)
    npu = NPU(peak_flops=1e12, efficiency=1.0, gemm=None, hbm_efficiency=1.0)
    if cfg.execution == "weight-stationary":
        a = wl.arrays()
        ranges = split_stages(a["fwd_flops"] + a["bwd_flops"] + 1, cfg.strategy.pp)
        tl = stationary(wl, cfg, npu, layout, comm, ranges, "none")
    else:
        tl = streaming(wl, cfg, npu, layout, comm, "none", 1)
    sch = tl.schedule()
    br = sch.breakdown
    ex = exposed(br)
    assert set(ex) == {"mp", "dp", "pp", "io"} and all(v >= 0 for v in ex.values())
    total = br["compute"] + br["bubble"] + sum(ex.values())
    assert total == pytest.approx(sch.makespan, rel=1e-9, abs=1e-12)
    # The bubble is waiting for compute: it is in none of the kinds.
    assert sum(ex.values()) == pytest.approx(sch.makespan - br["compute"] - br["bubble"], abs=1e-9)
    assert ex["io"] == pytest.approx(br["input"] + br["weights"])


def test_a_pure_pipeline_exposes_no_communication_but_a_bubble():
    wl = toy(n_layers=4)
    cfg = TrainingConfig(strategy=Strategy(pp=4), samples_per_replica=4, microbatches=4)
    ranges = split_stages(np.ones(4), 4)
    sch = stationary(
        wl,
        cfg,
        NPU(1e12, 1.0, gemm=None, hbm_efficiency=1.0),
        Layout(cfg.strategy),
        FixedComm(),
        ranges,
        "none",
    )
    br = sch.schedule().breakdown
    assert br["bubble"] > 0 and sum(exposed(br).values()) == 0
