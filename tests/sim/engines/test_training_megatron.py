"""What Megatron-LM runs, in the training model: interleaved 1F1B, sequence parallelism,
selective recomputation, split pipeline sends; and GPU clusters (ASTRA-sim-style [dims]
fabrics without I/O controllers) as fabrics of a training estimate."""

import pytest

from fredfab.model.training.npu_files import load_npu
from fredfab.model.validation.calibration import frozen
from fredfab.model.validation.suite import load_suite
from fredfab.sim.engines.training import estimate
from fredfab.sim.engines.validation import cluster, workload

SC21 = next(d for d in load_suite() if d.name == "megatron-sc21-table1")
ROW = next(p for p in SC21.points if p.name == "39.1B")  # tensor 8, pipeline 2, 512 GPUs


def _estimate(**kw):
    r = ROW.run
    dp = r["gpus"] // (r["tensor"] * r["pipeline"])
    per = r["batch"] // dp
    settings = dict(
        execution="weight-stationary",
        samples_per_replica=per,
        microbatches=per // r["microbatch"],
        recompute="full",
        placement=r["placement"],
        zero_stage=0,
        dp_overlap=False,
    )
    settings.update(kw)
    return estimate(
        workload(ROW),
        cluster(SC21, r["gpus"] // 8, frozen()),
        f"MP{r['tensor']}-DP{dp}-PP{r['pipeline']}",
        npu=load_npu("a100"),
        ignore_memory=True,
        **settings,
    )


@pytest.fixture(scope="module")
def plain():
    return _estimate()


def test_a_cluster_without_io_controllers_has_no_io_phases(plain):
    assert plain.ok and plain.breakdown["input"] == 0 and plain.breakdown["weights"] == 0
    assert plain.payload_fraction == 1.0  # no FRED packet headers on a GPU cluster
    assert plain.npu["name"] == "a100" and plain.library["name"] == "nccl-2.17"


def test_weight_streaming_needs_io_controllers():
    with pytest.raises(ValueError, match="I/O controllers"):
        _estimate(execution="weight-streaming")


def test_interleaved_schedule_shrinks_the_bubble(plain):
    inter = _estimate(virtual_stages=2)
    assert inter.breakdown["bubble"] < 0.75 * plain.breakdown["bubble"]
    assert inter.breakdown["compute"] == pytest.approx(plain.breakdown["compute"], rel=1e-6)


def test_selective_recomputation_costs_less_compute_and_more_memory_than_full(plain):
    sel = _estimate(recompute="selective")
    none = _estimate(recompute="none")
    assert none.breakdown["compute"] < sel.breakdown["compute"] < plain.breakdown["compute"]
    assert plain.memory.total < sel.memory.total < none.memory.total


def test_sequence_parallelism_splits_activation_memory(plain):
    sp = _estimate(recompute="selective", sequence_parallel=True)
    sel = _estimate(recompute="selective")
    assert sp.memory.total < sel.memory.total


def test_split_pipeline_sends_move_less_than_whole_activations():
    split = _estimate(pp_scatter_gather=True)
    whole = _estimate(pp_scatter_gather=False)
    assert split.breakdown["pp"] < whole.breakdown["pp"]


def test_interleaving_without_pipeline_stages_is_refused():
    with pytest.raises(ValueError, match="PP >= 2"):
        estimate("transformer-17b", "mesh-5x4", "MP2-DP10-PP1", virtual_stages=2)
