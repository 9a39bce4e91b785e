"""`fred estimate/compare/sweep --workload file.txt` run an ASTRA-sim text workload."""

import json

from fredfab.sim.cli import main

WORKLOAD = """\
HYBRID_TRANSFORMER model_parallel_NPU_group: 2
2
attn -1 100000 ALLREDUCE 1048576 100000 ALLREDUCE 1048576 50000 ALLREDUCE 4194304 10
mlp -1 200000 NONE 0 200000 ALLREDUCE 1048576 100000 ALLREDUCE 8388608 10
"""


def test_estimate_compare_and_sweep_an_astra_file(tmp_path, capsys):
    path = tmp_path / "tiny.txt"
    path.write_text(WORKLOAD)
    argv = ["estimate", "--workload", str(path), "--fabric", "fred-d", "--json"]
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["workload"] == "tiny" and d["strategy"] == "MP2-DP10-PP1" and d["status"] == "ok"
    assert d["breakdown_s"]["mp"] > 0 and d["breakdown_s"]["dp"] > 0
    assert main(argv + ["--astra-clock-GHz", "2"]) == 0
    fast = json.loads(capsys.readouterr().out)
    assert fast["compute_busy_s"] < d["compute_busy_s"]
    assert main(["compare", "--workload", str(path), "--no-plot"]) == 0
    out = capsys.readouterr().out
    assert "tiny, MP2-DP10-PP1" in out and "mesh-5x4" in out and "fred-d" in out
    argv = ["sweep", "--workload", str(path), "--fabric", "fred-d", "-j", "1", "--no-plot"]
    assert main(argv + ["--json"]) == 0
    sw = json.loads(capsys.readouterr().out)
    # MP must divide the file's group of 2: MP 4, 5, 10 and 20 apply nowhere.
    assert {e["strategy"].split("-")[0] for e in sw["estimates"]} == {"MP1", "MP2"}


def test_a_bad_file_is_a_one_line_error(tmp_path, capsys):
    path = tmp_path / "bad.txt"
    path.write_text(WORKLOAD.replace("ALLREDUCE 4194304", "ALLREDUCE 4MiB"))
    assert main(["estimate", "--workload", str(path)]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"{path}:3: layer 'attn': weight-gradient comm size '4MiB' is not an integer" in err


def test_sensitivity_honours_the_astra_clock(tmp_path, capsys):
    """Issue 25: `fred sensitivity` took --astra-clock-GHz and ignored it."""
    path = tmp_path / "tiny.txt"
    path.write_text(WORKLOAD)
    times = {}
    for ghz in ("1", "2"):
        est = ["estimate", "--workload", str(path), "--fabric", "mesh", "--json"]
        assert main([*est, "--astra-clock-GHz", ghz]) == 0
        expected = json.loads(capsys.readouterr().out)["time_s"]
        argv = ["sensitivity", "--workload", str(path), "--fabric", "mesh", "--vary", "link-bw"]
        argv += ["--values", "1", "--no-plot", "--json", "--astra-clock-GHz", ghz]
        assert main(argv) == 0
        (point,) = json.loads(capsys.readouterr().out)["points"]
        times[ghz] = point["fabrics"][0]["time_s"]
        assert times[ghz] == expected
    assert times["2"] < times["1"]  # the compute cycles run twice as fast


def test_the_astra_clock_is_refused_where_it_cannot_apply(capsys):
    argv = ["sensitivity", "--workload", "resnet-152", "--astra-clock-GHz", "2", "--no-plot"]
    assert main(argv) == 2
    assert "applies only to ASTRA-sim text workloads" in capsys.readouterr().err


def test_a_workload_with_no_work_is_refused(tmp_path, capsys):
    # Every layer's compute and communication 0: the iteration takes no time, and its
    # throughput, speed-ups and shares would be 0 / 0 (estimate, sweep and sensitivity used
    # to end in a TypeError or a ZeroDivisionError).
    path = tmp_path / "empty.txt"
    path.write_text("DATA\n1\nmlp\t-1\t0\tNONE\t0\t0\tNONE\t0\t0\tNONE\t0\t0\n")
    for argv in (
        ["estimate"],
        ["estimate", "--json"],
        ["sweep", "-j", "1", "--no-plot"],
        ["sensitivity", "--no-plot"],
        ["compare", "--no-plot"],
    ):
        assert main([*argv, "--workload", str(path)]) == 2, argv
        err = capsys.readouterr().err
        assert f"{path}: its training iteration takes no time" in err, argv
