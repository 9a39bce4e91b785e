"""Export, read, estimate: a workload written as Chakra traces runs as long as its direct
estimate (the trace simulator shares links between communication the training model costs
apart, so the round trip is exact where no two communication tasks overlap)."""

import json
import re
import signal

import pytest

from fredfab.model.chakra import read_trace, write_trace
from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.system import load_fabric
from fredfab.model.training.config import NPU
from fredfab.sim.cli import main
from fredfab.sim.engines.chakra_export import export_chakra
from fredfab.sim.engines.dag import simulate_trace
from fredfab.sim.engines.training import estimate


def round_trip(tmp_path, workload, fabric, strategy=None):
    job = export_chakra(workload, fabric, strategy)
    write_trace(tmp_path / "x", job.ranks, job.comm_groups, compress=True)
    res = simulate_trace(read_trace(tmp_path / "x"), load_fabric(fabric))
    return job, res, estimate(workload, fabric, strategy)


@pytest.mark.parametrize("fabric", ["mesh-5x4", "fred-d"])
def test_data_parallel_round_trip_is_exact(tmp_path, fabric):
    job, res, est = round_trip(tmp_path, "resnet-152", fabric)
    assert res.time == pytest.approx(est.time, rel=1e-12)
    # Every rank alike: compute, then one All-Reduce per gradient bucket over all 20.
    assert len({tuple(r) for r in job.ranks}) == 1
    assert [sorted(g) for g in job.comm_groups.values()] == [list(range(20))]
    kinds = {n.kind for n in job.ranks[0]}
    assert kinds == {"COMP", "COMM_COLL", "MEM_LOAD"}
    assert res.breakdown["all-reduce"] == pytest.approx(est.exposed["dp"], rel=1e-6)


@pytest.mark.slow
def test_pipeline_round_trip(tmp_path):
    # PP 2: sends and receives between the stages; MP collectives per layer.
    _, res, est = round_trip(tmp_path, "transformer-17b", "mesh-5x4", "MP1-DP10-PP2")
    assert res.time == pytest.approx(est.time, rel=1e-4)


def test_split_pipeline_send_round_trip(tmp_path):
    # MP 2 and PP 2: a stage's output goes across as one piece per MP rank (a COMM_SEND and
    # its COMM_RECV), then the receiving MP group All-Gathers it (the training model times
    # the two as one task; the exporter used to find no recorded call that long).
    job, res, est = round_trip(tmp_path, "transformer-17b", "fred-d", "MP2-DP5-PP2")
    assert res.time == pytest.approx(est.time, rel=1e-4)
    for rank in job.ranks:
        for node in rank:
            if node.kind == "COMM_RECV":
                after = [n for n in rank if node.id in n.deps]
                assert [n.collective for n in after] == [CollectiveKind.ALL_GATHER]
                assert abs(after[0].size - 2 * node.size) <= 1  # the whole activation


def test_each_task_is_written_as_its_own_kind_of_transfer():
    # A task is matched to its recorded calls by time and groups; a weight load and a
    # gradient store of the same layer group tie on both (as do ZeRO's All-Gather and its
    # Reduce-Scatter), and the earlier call used to win: every gradient store was written
    # as a MEM_LOAD, every ZeRO All-Gather as a Reduce-Scatter.
    def kinds(job, prefix):
        return {
            (n.kind, n.collective)
            for rank in job.ranks
            for n in rank
            if re.fullmatch(prefix, n.name)
        }

    job = export_chakra("gpt3-175b", "fred-d", "MP2-DP5-PP2")  # weight streaming
    assert kinds(job, r"R\d+\.\d+") == {("MEM_STORE", None)}
    assert kinds(job, r"W\d+\.(fwd|bwd)\.\d+") == {("MEM_LOAD", None)}
    interleaved = {"virtual_stages": 2, "microbatches": 4}  # ZeRO's All-Gather per stage
    job = export_chakra("transformer-17b", "fred-d", "MP2-DP5-PP2", **interleaved)
    assert kinds(job, r"AG\d+") == {("COMM_COLL", CollectiveKind.ALL_GATHER)}
    assert kinds(job, r"DP\d+") == {("COMM_COLL", CollectiveKind.REDUCE_SCATTER)}


def test_a_deep_pipeline_exports(tmp_path):
    # Twenty stages: what a rank waits for used to be walked afresh along every path back
    # through the stages, which never finished; each (task, rank) is worked out once now.
    def too_long(*_):
        raise TimeoutError("the export of a 20-stage pipeline took over 60 s")

    old = signal.signal(signal.SIGALRM, too_long)
    signal.alarm(60)
    try:
        job, res, est = round_trip(tmp_path, "gpt3-175b", "fred-a", "MP1-DP1-PP20")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert job.strategy == "MP1-DP1-PP20"
    assert res.time == pytest.approx(est.time, rel=1e-2)


@pytest.mark.slow
def test_weight_streaming_round_trip(tmp_path):
    # Weight loads and gradient stores through the I/O controllers as MEM_LOAD / MEM_STORE.
    job, res, est = round_trip(tmp_path, "transformer-1t", "fred-c")
    assert {n.kind for n in job.ranks[0]} >= {"MEM_LOAD", "MEM_STORE"}
    assert res.time == pytest.approx(est.time, rel=1e-9)


def test_round_trip_with_another_npu(tmp_path):
    # Gradient buckets are told apart by their compute time, which the NPU sets.
    npu = NPU(efficiency=0.3)
    job = export_chakra("resnet-152", "fred-b", npu=npu)
    write_trace(tmp_path / "n", job.ranks, job.comm_groups)
    res = simulate_trace(read_trace(tmp_path / "n"), load_fabric("fred-b"), npu=npu)
    assert res.time == pytest.approx(estimate("resnet-152", "fred-b", npu=npu).time, rel=1e-12)


def test_fred_export_then_estimate(tmp_path, capsys):
    prefix = tmp_path / "rn"
    argv = ["export", "--chakra", "--workload", "resnet-152", "--fabric", "mesh-5x4"]
    assert main([*argv, "-o", str(prefix), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ranks"] == 20 and (tmp_path / "rn.19.et").is_file()
    assert main(["estimate", "--workload", str(prefix), "--fabric", "mesh-5x4", "--json"]) == 0
    via = json.loads(capsys.readouterr().out)["time_s"]
    assert main(["estimate", "--workload", "resnet-152", "--fabric", "mesh-5x4", "--json"]) == 0
    assert via == pytest.approx(json.loads(capsys.readouterr().out)["time_s"], rel=1e-12)
    assert main(["export", "--workload", "resnet-152"]) == 2  # --chakra is the format
    capsys.readouterr()
    assert main(["export", "--chakra", "--workload", str(prefix)]) == 2
    assert "is a Chakra trace already" in capsys.readouterr().err


def test_fred_export_ignore_memory_writes_what_does_not_fit(tmp_path, capsys):
    # gpt3-175b weight-stationary on MP1-DP4-PP5 needs far more than 80 GB an NPU.
    argv = ["export", "--chakra", "--workload", "gpt3-175b", "--fabric", "fred-a"]
    argv += ["--strategy", "MP1-DP4-PP5", "--execution", "weight-stationary"]
    assert main([*argv, "-o", str(tmp_path / "no")]) == 2
    assert "does not fit" in capsys.readouterr().err
    assert not list(tmp_path.glob("no.*"))
    assert main([*argv, "-o", str(tmp_path / "yes"), "--ignore-memory", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert any("does not fit, written anyway" in n for n in out["notes"])
    assert (tmp_path / "yes.19.et").is_file()


def test_fred_export_names_the_files_it_writes(tmp_path, capsys):
    argv = ["export", "--chakra", "--workload", "resnet-152", "--fabric", "fred-b"]
    assert main([*argv, "-o", str(tmp_path / "z"), "--gzip"]) == 0
    out = capsys.readouterr().out
    assert f"{tmp_path / 'z'}.0.et.gz ... {tmp_path / 'z'}.19.et.gz" in out
    # A folder is not a prefix (it used to write ./adir.0.et beside the folder).
    assert main([*argv, "-o", f"{tmp_path}/"]) == 2
    assert "names a folder: give a prefix" in capsys.readouterr().err
    assert not list(tmp_path.parent.glob(f"{tmp_path.name}.*"))
    # A prefix that is also a folder's name is a prefix: the files go beside the folder.
    (tmp_path / "runs").mkdir()
    assert main([*argv, "-o", str(tmp_path / "runs")]) == 0
    assert (tmp_path / "runs.0.et").is_file()


def test_a_trace_that_cannot_be_written_is_named_as_asked(tmp_path):
    # The error names PREFIX.r.et, not the temporary name the file is written under; the
    # temporary file and the ranks written before it are removed (no partial job).
    from fredfab.model.chakra.trace import TraceNode

    (tmp_path / "p.2.et").mkdir()  # rank 2's file cannot replace a folder
    rank = [TraceNode(0, "c", "COMP", duration=1.0)]
    with pytest.raises(OSError) as err:
        write_trace(tmp_path / "p", [rank, [*rank], [*rank], [*rank]])
    assert err.value.filename == str(tmp_path / "p.2.et")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.2.et"]
