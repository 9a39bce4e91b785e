"""Iteration task graphs with closed-form collective costs, and the memory model."""

import numpy as np
import pytest

from fredfab.model.system import Strategy
from fredfab.model.training import NPU, Layout, TrainingConfig, load_workload, split_stages
from fredfab.model.training.iteration import stationary, streaming
from fredfab.model.training.memory import MAX_ACCUMULATION, choose_policy, memory
from fredfab.model.training.parallel import factorizations
from fredfab.model.training.workload import workload_from_dict


class FixedComm:
    """Every collective of kind ``op`` takes a fixed time (0 for empty transfers)."""

    def __init__(self, **times):
        self.times = {k.replace("_", "-"): v for k, v in times.items()}
        self.calls = []

    def time(self, op, groups, sizes):
        self.calls.append((op, len(groups), tuple(sizes)))
        return self.times.get(op, 0.0) if max(sizes) > 0 else 0.0


def toy(n_layers=1, params=1000, fwd=1e12, input_bytes=0, mp_comm=()):
    return workload_from_dict(
        {
            "schema": "fred-workload/1",
            "name": "toy",
            "input_bytes": input_bytes,
            "layers": [
                {
                    "name": "l",
                    "params": params,
                    "fwd_flops": fwd,
                    "in_bytes": 0,
                    "out_bytes": 8,
                    "hbm_bytes": 0,
                    "repeat": n_layers,
                    "mp_comm": list(mp_comm),
                }
            ],
        }
    )


# 1 s per 1e12 FLOP and the datasheet HBM rate, every GEMM at that rate: easy arithmetic.
NPU1 = NPU(peak_flops=1e12, efficiency=1.0, gemm=None, hbm_efficiency=1.0)


def run_stationary(wl, st, comm, **kw):
    cfg = TrainingConfig(strategy=st, **kw)
    a = wl.arrays()
    ranges = split_stages(a["fwd_flops"] + a["bwd_flops"] + 1, st.pp)
    return stationary(wl, cfg, NPU1, Layout(st), comm, ranges, "none").schedule()


def test_data_parallel_single_layer_closed_form():
    wl = toy(params=1000, input_bytes=4)
    comm = FixedComm(io_broadcast=0.5, all_reduce=0.75)
    s = run_stationary(wl, Strategy(dp=2), comm, samples_per_replica=1)
    opt = 28 * 1000 / NPU1.hbm_bandwidth
    # input, forward 1 s, backward 2 s, gradient All-Reduce (nothing left to overlap), step.
    assert s.makespan == pytest.approx(0.5 + 1 + 2 + 0.75 + opt)
    assert s.breakdown["input"] == pytest.approx(0.5) and s.breakdown["dp"] == pytest.approx(0.75)
    assert s.breakdown["compute"] == pytest.approx(3 + opt)
    assert ("all-reduce", 1, (2000.0,)) in comm.calls  # FP16 gradients, one DP group


def test_dp_buckets_overlap_backward():
    # Two layers, each its own bucket (cap below one layer's gradients): the last layer's
    # reduction (0.75 s) hides under the first layer's backward (2 s); one stays exposed.
    wl = toy(n_layers=2, params=1000)
    comm = FixedComm(all_reduce=0.75)
    s = run_stationary(wl, Strategy(dp=2), comm, samples_per_replica=1, dp_bucket_bytes=100)
    assert s.breakdown["dp"] == pytest.approx(0.75)
    opt = 28 * 2000 / NPU1.hbm_bandwidth
    assert s.makespan == pytest.approx(2 * 3 + 0.75 + opt)


def test_zero_reduce_scatters_then_all_gathers():
    wl = toy(params=1000)
    comm = FixedComm(reduce_scatter=0.25, all_gather=0.5, all_reduce=99.0)
    s = run_stationary(wl, Strategy(dp=4), comm, samples_per_replica=1, zero_stage=2)
    opt = 28 * 1000 / 4 / NPU1.hbm_bandwidth  # the optimizer updates a 1/DP shard
    assert s.makespan == pytest.approx(3 + 0.25 + opt + 0.5)
    assert s.breakdown["dp"] == pytest.approx(0.75)


def test_megatron_mp_blocks_compute():
    ar = {"op": "all-reduce", "bytes": 8}
    wl = toy(n_layers=3, mp_comm=[{**ar, "pass": "fwd"}] * 2 + [{**ar, "pass": "bwd"}] * 2)
    comm = FixedComm(all_reduce=0.125)
    s = run_stationary(wl, Strategy(mp=2), comm, samples_per_replica=4, microbatches=4)
    # Per microbatch (1 sample): 3 layers x (0.5 + 1) s compute (MP halves FLOPs), 12 ARs.
    assert s.breakdown["mp"] == pytest.approx(4 * 12 * 0.125)
    assert s.breakdown["compute"] == pytest.approx(4 * 4.5 + 28 * 1500 / NPU1.hbm_bandwidth)


@pytest.mark.parametrize("pipeline", ["1f1b", "gpipe"])
def test_pipeline_bubble(pipeline):
    wl = toy(n_layers=4)
    P, m = 4, 6
    s = run_stationary(
        wl, Strategy(pp=P), FixedComm(), samples_per_replica=m, microbatches=m, pipeline=pipeline
    )
    opt = 28 * 1000 / NPU1.hbm_bandwidth
    assert s.makespan == pytest.approx((m + P - 1) * 3 + opt)
    assert s.breakdown["bubble"] == pytest.approx((P - 1) * 3)


def test_weight_streaming_io_bound_closed_form():
    # Compute ~0: N forward loads, then the backward reuses the 2 resident groups and the
    # N gradient reductions run back to back from the turn: T = N t_b + N t_r (t_b = t_r).
    N = 5
    wl = toy(n_layers=N, fwd=0.0)
    cfg = TrainingConfig(strategy=Strategy(dp=4), execution="weight-streaming")
    comm = FixedComm(io_broadcast=1.0, io_reduce=1.0)
    s = streaming(wl, cfg, NPU1, Layout(cfg.strategy), comm, "none", 1).schedule()
    assert s.makespan == pytest.approx(2 * N, rel=1e-6)
    assert s.breakdown["weights"] == pytest.approx(2 * N, rel=1e-6)
    loads = [c for c in comm.calls if c[0] == "io-broadcast" and max(c[2]) > 0]
    assert len({c for c in loads}) == 1  # identical layers: one distinct stream


def test_weight_streaming_compute_bound_hides_streams():
    N = 6
    wl = toy(n_layers=N, fwd=1e12)  # 1 s forward, 2 s backward per layer and sample
    cfg = TrainingConfig(
        strategy=Strategy(dp=4), execution="weight-streaming", samples_per_replica=1
    )
    comm = FixedComm(io_broadcast=0.25, io_reduce=0.25)
    s = streaming(wl, cfg, NPU1, Layout(cfg.strategy), comm, "none", 1).schedule()
    # Only the first load and the last reduction are exposed.
    assert s.makespan == pytest.approx(N * 3 + 0.5)
    assert s.breakdown["weights"] == pytest.approx(0.5)


def test_weight_streaming_accumulation_repeats_passes():
    wl = toy(n_layers=3, fwd=1e12)
    comm = FixedComm(io_broadcast=0.25, io_reduce=0.25)
    cfg = TrainingConfig(
        strategy=Strategy(dp=4), execution="weight-streaming", samples_per_replica=4
    )
    one = streaming(wl, cfg, NPU1, Layout(cfg.strategy), comm, "none", 1).schedule()
    four = streaming(wl, cfg, NPU1, Layout(cfg.strategy), comm, "none", 4).schedule()
    # Same compute in total (4 passes of 1 sample), 4x the gradient reductions.
    assert four.breakdown["compute"] == pytest.approx(one.breakdown["compute"])
    assert sum(1 for c in comm.calls if c[0] == "io-reduce") >= 2


def test_memory_hand_computed_zero2():
    wl = load_workload("transformer-17b")
    st = Strategy(mp=2, dp=5, pp=2)
    cfg = TrainingConfig(strategy=st, samples_per_replica=16, microbatches=8, zero_stage=2)
    a = wl.arrays()
    ranges = split_stages(a["fwd_flops"] + a["bwd_flops"] + 1, 2)
    rep = memory(wl, cfg, NPU(), ranges, "none", 1)
    lo, hi = ranges[rep.stage]
    p = sum(x.params / 2 for x in wl.layers[lo:hi])
    assert rep.weights == pytest.approx(2 * p)
    assert rep.gradients == pytest.approx(2 * p / 5)
    assert rep.optimizer == pytest.approx(12 * p / 5)
    # 1F1B: stage s holds min(m, PP - s) microbatches of 2 samples.
    stash = sum(x.stash_bytes / 2 + x.stash_replicated_bytes for x in wl.layers[lo:hi])
    assert rep.activations == pytest.approx(min(8, 2 - rep.stage) * 2 * stash)


def test_policy_picks_the_first_candidate_that_fits():
    wl = load_workload("transformer-1t")
    cfg = TrainingConfig(
        strategy=Strategy(dp=20), execution="weight-streaming", samples_per_replica=16
    )
    rep = choose_policy(wl, cfg, NPU(), [(0, wl.num_layers)])
    assert rep.fits
    smaller = [k for k in range(1, rep.accumulation) if 16 % k == 0]
    for acc in smaller:
        for rec in ("none", "full"):
            assert not memory(wl, cfg, NPU(), [(0, wl.num_layers)], rec, acc).fits
    # With a smaller HBM nothing fits, and the report says so.
    assert not choose_policy(wl, cfg, NPU(hbm_bytes=8e9), [(0, wl.num_layers)]).fits


def test_accumulation_passes_stop_at_their_limit():
    # GPT-3 with 65,536 samples per replica would need 4,096 passes, which took minutes to
    # build: past MAX_ACCUMULATION a batch does not fit (the CLI's bound is the same).
    from fredfab.sim.cli.arguments import ACCUMULATION
    from fredfab.sim.engines.training import prepare

    assert ACCUMULATION == (1, MAX_ACCUMULATION)
    rep = prepare("gpt3-175b", "fred-d", samples_per_replica=65536).memory
    assert not rep.fits and rep.accumulation == MAX_ACCUMULATION
    assert rep.describe().endswith("accumulation 1024 (the most passes tried)")
    assert prepare("gpt3-175b", "fred-d", samples_per_replica=1024).memory.fits


def test_factorizations_and_stage_split():
    fs = factorizations(20)
    assert len(fs) == 18 and all(s.workers == 20 for s in fs)
    assert len({str(s) for s in fs}) == 18
    r = split_stages(np.ones(10), 4)
    assert r[0][0] == 0 and r[-1][1] == 10 and all(b > a for a, b in r)
    assert [b - a for a, b in r] in ([3, 2, 3, 2], [2, 3, 2, 3], [3, 3, 2, 2], [2, 2, 3, 3])
    with pytest.raises(ValueError, match="layers"):
        split_stages(np.ones(3), 4)


def test_layout_paper_placement_and_alternative():
    st = Strategy(mp=2, dp=5, pp=2)
    lay = Layout(st)
    assert lay.mp_groups(0)[0] == (0, 1) and lay.mp_groups(1)[0] == (2, 3)
    assert lay.dp_groups(0)[0] == (0, 4, 8, 12, 16)
    alt = Layout(st, "dp-mp-pp")
    assert alt.dp_groups(0)[0] == (0, 1, 2, 3, 4)
    every = sorted(u for p in range(2) for g in alt.mp_groups(p) for u in g)
    assert every == list(range(20))
    with pytest.raises(ValueError, match="placement"):
        Layout(st, "mp-dp")
