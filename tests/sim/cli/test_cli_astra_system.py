"""`--system FILE` (ASTRA-sim's system layer) and `--network-model` on fred collective and
fred estimate."""

import json

import pytest

from fredfab.model.chakra import write_trace
from fredfab.model.chakra.trace import TraceNode
from fredfab.sim.cli import main

NETWORK = "topology: [ Ring, Switch ]\nnpus_count: [ 4, 4 ]\nbandwidth: [ 50.0, 25.0 ]\n"
NETWORK += "latency: [ 500.0, 500.0 ]\n"
SYSTEM = {
    "scheduling-policy": "LIFO",
    "endpoint-delay": 10,
    "active-chunks-per-dimension": 1,
    "preferred-dataset-splits": 1,
    "all-reduce-implementation": ["ring", "halvingDoubling"],
    "all-to-all-implementation": ["ring", "direct"],
    "collective-optimization": "localBWAware",
    "roofline-enabled": 1,
    "peak-perf": 100,
    "local-mem-bw": 2000,
}


@pytest.fixture
def files(tmp_path):
    net, sys_ = tmp_path / "net.yml", tmp_path / "sys.json"
    net.write_text(NETWORK)
    sys_.write_text(json.dumps(SYSTEM))
    return net, sys_


def test_collective_runs_the_system_files_algorithm(files, capsys):
    net, sys_ = files
    argv = ["collective", "--fabric", str(net), "--size", "64MiB", "--json"]
    assert main([*argv, "--system", str(sys_)]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert (
        row["algorithm"] == "astra-system:ring,halving-doubling:serial-chunks"
        and row["chunks"] == 1
    )
    said = {d["key"]: d["here"] for d in row["system"]}
    assert set(said) == set(SYSTEM)  # every key of the file, mapped or not modelled
    assert said["endpoint-delay"].startswith("not modelled")
    assert said["preferred-dataset-splits"] == "1: chunks per collective"
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)[0]["algorithm"] != row["algorithm"]
    # The text output lists the mapping before the table.
    assert main(argv[:-1] + ["--system", str(sys_)]) == 0
    out = capsys.readouterr().out
    assert "system file" in out and "scheduling-policy: not modelled" in out


def test_network_models_differ_as_documented(files, capsys):
    net, _ = files
    times = {}
    for model in ("cut-through", "congestion-unaware", "congestion-aware"):
        argv = ["collective", "--fabric", str(net), "--size", "64MiB", "--chunks", "4"]
        assert main([*argv, "--network-model", model, "--json"]) == 0
        times[model] = json.loads(capsys.readouterr().out)[0]["time_s"]
    # Without link sharing, pipelined chunks overlap on the same links for free.
    assert times["congestion-unaware"] < times["cut-through"]
    assert times["congestion-aware"] >= times["cut-through"] * (1 - 1e-6)


def test_bad_system_files(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    for content, message in (
        ({"all-reduce-implementation": ["ring"], "colour": 1}, "unknown key 'colour'"),
        ({"all-reduce-implementation": ["spiral"]}, "'spiral' is not an ASTRA-sim"),
        ({"preferred-dataset-splits": 0}, "'preferred-dataset-splits' must be"),
        # Keys not modelled are still of the type ASTRA-sim reads (accepted before).
        ({"endpoint-delay": "x"}, "'endpoint-delay' must be a number, got 'x'"),
        ({"model-shared-bus": "yes"}, "'model-shared-bus' must be a number, got 'yes'"),
        ({"local-mem-trace-filename": 1}, "'local-mem-trace-filename' must be a string, got 1"),
        ({"scheduling-policy": "SJF"}, "must be 'LIFO', 'FIFO', 'EXPLICIT', got 'SJF'"),
        ({"collective-optimization": "fast"}, "must be 'baseline', 'localBWAware', got 'fast'"),
    ):
        bad.write_text(json.dumps(content))
        assert (
            main(["collective", "--fabric", "fred-d", "--size", "1MiB", "--system", str(bad)]) == 2
        )
        err = capsys.readouterr().err
        assert err.startswith("fred collective: error: ") and message in err


def test_flags_written_as_booleans_load_as_astra_sim_reads_them(tmp_path):
    """ASTRA-sim compares its flags with 0 and converts booleans to numbers: true passes."""
    from fredfab.model.system.astra_system import load_astra_system

    f = tmp_path / "sys.json"
    f.write_text(json.dumps({**SYSTEM, "trace-enabled": True, "model-shared-bus": False}))
    assert load_astra_system(f).raw["trace-enabled"] is True


def test_estimate_a_trace_with_the_system_file(files, tmp_path, capsys):
    net, sys_ = files
    comp = TraceNode(0, "mm", "COMP", num_ops=10**12, size=10**6)
    ar = TraceNode(1, "ar", "COMM_COLL", (0,), 1, comm_type=0, size=2**26)
    write_trace(tmp_path / "j", [[comp, ar]] * 16)
    argv = ["estimate", "--workload", str(tmp_path / "j"), "--fabric", str(net), "--json"]
    assert main([*argv, "--system", str(sys_), "--network-model", "congestion-unaware"]) == 0
    d = json.loads(capsys.readouterr().out)
    # The roofline of the file: 10^12 FLOPs at 100 TFLOP/s, no efficiency factor.
    assert d["breakdown_s"]["compute"] == pytest.approx(0.01)
    assert d["algorithms"] == {"astra-system:ring,halving-doubling:serial-chunks": 1}
    assert d["payload_fraction"] == 1.0 and d["network_model"] == "congestion-unaware"
    assert main(["estimate", "--workload", "resnet-152", "--system", str(sys_)]) == 2
    assert "--system applies to a Chakra trace" in capsys.readouterr().err
