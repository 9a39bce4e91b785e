import json
from pathlib import Path

import pytest

from fredfab.sim.cli import main


def test_estimate_json_breakdown_sums(capsys):
    assert main(["estimate", "--workload", "resnet-152", "--fabric", "mesh", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["status"] == "ok" and d["strategy"] == "MP1-DP20-PP1"
    assert sum(d["breakdown_s"].values()) == pytest.approx(d["time_s"])
    assert d["minibatch"] == 320 and d["memory"]["fits"]


def test_estimate_reports_does_not_fit(capsys):
    argv = ["estimate", "--workload", "transformer-17b", "--strategy", "MP1-DP20-PP1"]
    assert main(argv + ["--hbm-GB", "40"]) == 0
    out = capsys.readouterr().out
    # It says what it did not do and how to do it anyway (not "does-not-fit", the status).
    assert "does not fit in HBM: not estimated (--ignore-memory estimates it anyway)" in out


def test_compare_with_timing_card_and_plot(tmp_path, capsys):
    card = tmp_path / "card.json"
    card.write_text(
        json.dumps(
            {
                "schema": "fred-switch-timing/1",
                "generator": {},
                "simulator": "cosim-test",
                "latency_cycles": 9,
                "throughput": {
                    k: {"ready": 1.0, "backpressure": 0.9}
                    for k in ("all-reduce", "reduce", "multicast", "unicast")
                },
                "reconfiguration_cycles": 4,
                "config_load_cycles": 192,
            }
        )
    )
    plot = tmp_path / "c.svg"
    argv = ["compare", "--workload", "transformer-17b", "--timing-card", str(card)]
    assert main(argv + ["-o", str(plot)]) == 0
    out = capsys.readouterr().out
    assert str(card) in out and "fred-d" in out and "speedup" in out
    assert plot.read_text().lstrip().startswith("<?xml")


def test_sweep_json(capsys):
    argv = ["sweep", "--workload", "resnet-152", "--fabric", "fred-d", "-j", "1"]
    assert main(argv + ["--json", "--no-plot"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["best"]["fred-d"]["status"] == "ok"
    assert len(d["estimates"]) + len(d["invalid"]) == 18


@pytest.mark.parametrize(
    "argv",
    [
        ["estimate", "--workload", "gpt-5"],
        ["estimate", "--workload", "resnet-152", "--strategy", "MP2-DP2"],
        ["estimate", "--workload", "resnet-152", "--strategy", "MP3-DP7"],
        ["estimate", "--workload", "resnet-152", "--microbatches", "3"],
        ["estimate", "--workload", "resnet-152", "--placement", "mp-dp"],
        ["estimate", "--workload", "resnet-152", "--timing-card", "/nonexistent.json"],
        ["compare", "--workload", "resnet-152", "--fabric", "nope", "--no-plot"],
        ["sweep", "--workload", "resnet-152", "-j", "0"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fred ") and "\n" not in err


def test_estimate_ignore_memory_is_flagged(capsys):
    argv = ["estimate", "--workload", "transformer-17b", "--strategy", "MP1-DP20-PP1"]
    assert main(argv + ["--hbm-GB", "40", "--ignore-memory"]) == 0
    out = capsys.readouterr().out
    assert "EXCEEDS HBM CAPACITY" in out and "time per iteration" in out
    assert main(argv + ["--hbm-GB", "40", "--ignore-memory", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["status"] == "ok" and d["fits"] is False and not d["memory"]["fits"]


def test_estimate_uneven_heads_note(capsys):
    argv = ["estimate", "--workload", "transformer-17b", "--strategy", "MP10-DP2-PP1"]
    assert main(argv + ["--microbatches", "1"]) == 0
    assert "note: uneven head split: MP 10 over 28 heads gives ranks 3 or 2" in (
        capsys.readouterr().out
    )


def test_sweep_study_table(capsys):
    argv = ["sweep", "--workload", "transformer-17b", "--fabric", "mesh", "--fabric", "fred-d"]
    assert main(argv + ["-j", "2", "--no-plot", "--ignore-memory"]) == 0
    out = capsys.readouterr().out
    assert "not applicable" not in out  # MP 5, 10, 20 now run on 28 heads
    # Pure DP exceeds 80 GB: estimated, and flagged on both fabrics.
    row = next(r for r in out.splitlines() if r.startswith("MP1-DP20-PP1"))
    assert row.count("!") == 2
    study = out.split("reduction of exposed communication vs mesh-5x4")[1]
    rows = [r for r in study.splitlines() if r.startswith("MP")]
    assert len(rows) == 36  # 18 strategies x 2 fabrics
    assert "fred-d: exposes" in out and "on average over 18 strategies" in out
    assert "! exceeds HBM capacity (estimated with --ignore-memory)" in study
    # Without --ignore-memory nothing is marked, and the legend of the mark is not printed.
    assert "never ranked best" in out
    assert main(argv + ["-j", "2", "--no-plot"]) == 0
    out = capsys.readouterr().out
    study = out.split("reduction of exposed communication vs mesh-5x4")[1]
    assert "!" not in study and "never ranked best" not in out


def test_sensitivity_names_the_hbm_mark_only_when_it_is_used(capsys):
    argv = ["sensitivity", "--workload", "transformer-17b", "--vary", "tflops", "--values", "989"]
    assert main([*argv, "--no-plot"]) == 0
    assert "! exceeds HBM" not in capsys.readouterr().out
    assert (
        main(
            [*argv, "--no-plot", "--hbm-GB", "40", "--strategy", "MP1-DP20-PP1", "--ignore-memory"]
        )
        == 0
    )
    assert "! exceeds HBM (--ignore-memory)" in capsys.readouterr().out


def test_sensitivity_json_and_plot(tmp_path, capsys):
    plot = tmp_path / "s.svg"
    argv = ["sensitivity", "--workload", "resnet-152", "--fabric", "mesh", "--fabric", "fred-d"]
    argv += ["--vary", "link-bw", "--values", "2,0.5", "-o", str(plot), "--json"]
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    assert [p["value"] for p in d["points"]] == [0.5, 2.0]  # sorted
    assert d["baseline"] == "mesh-5x4" and d["plot"] == str(plot)
    for p in d["points"]:
        mesh, fred = p["fabrics"]
        assert fred["speedup"] == pytest.approx(mesh["time_s"] / fred["time_s"])
        assert fred["comm_bound"] == (fred["exposed_comm_s"] >= fred["breakdown_s"]["compute"])
    assert plot.read_text().lstrip().startswith("<?xml")


def test_sensitivity_table_names_the_turning_point(capsys):
    # Faster NPUs alone no longer turn the mesh communication-bound: the memory-bound
    # kernels (timed at HBM bandwidth) keep compute above the exposed communication; slower
    # links do.
    argv = ["sensitivity", "--workload", "transformer-17b", "--fabric", "mesh"]
    argv += ["--fabric", "fred-d", "--vary", "link-bw", "--values", "1,0.05", "--no-plot"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "mesh-5x4 is communication-bound from link-bw = 0.05; there:" in out
    assert "fred-d:" in out and "x faster" in out


def test_sensitivity_where_nothing_fits_still_reports_and_plots(tmp_path, capsys):
    plot = tmp_path / "none.png"
    argv = ["sensitivity", "--workload", "transformer-17b", "--fabric", "mesh", "--hbm-GB", "10"]
    argv += ["--vary", "samples", "--values", "16,128", "-o", str(plot)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("does-not-fit") == 2
    assert "mesh-5x4 was estimated at no value" in out
    assert plot.read_bytes().startswith(b"\x89PNG")


REPO = Path(__file__).resolve().parents[3]
ASTRA_TEXT = REPO / "docs" / "workloads" / "astra-hybrid-transformer.txt"
TORUS = REPO / "examples" / "astra-sim" / "torus-4x8.toml"


def test_compare_over_different_npu_counts_compares_throughput(capsys):
    """Issue 25: 20 and 32 NPUs run minibatches of 160 and 256; the speedup must compare
    samples per second, not times of different minibatches, and say so."""
    argv = ["compare", "--workload", str(ASTRA_TEXT), "--fabric", "mesh", "--fabric", str(TORUS)]
    assert main([*argv, "--no-plot", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    mesh, torus = d["fabrics"]
    assert (mesh["minibatch"], torus["minibatch"]) == (160, 256)
    assert d["speedup_of"] == "samples_per_s" and d["same_minibatch"] is False
    assert torus["speedup"] == pytest.approx(torus["samples_per_s"] / mesh["samples_per_s"])
    assert torus["speedup"] != pytest.approx(mesh["time_s"] / torus["time_s"])
    assert main([*argv, "--no-plot"]) == 0
    out = capsys.readouterr().out
    assert "minibatch 160 on mesh-5x4 (MP2-DP10-PP1), 256 on torus-4x8 (MP2-DP16-PP1)" in out
    assert "speedup: training throughput (samples/s)" in out and "do not compare" in out
    assert f"{torus['speedup']:.2f}x" in out


def test_json_writes_no_plot_unless_asked(tmp_path, monkeypatch, capsys):
    """Issue 25: --json wrote a PNG under ./build."""
    monkeypatch.chdir(tmp_path)
    argv = ["compare", "--workload", "resnet-152", "--fabric", "mesh", "--json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["plot"] is None
    assert list(tmp_path.iterdir()) == []
    assert main([*argv, "-o", "c.svg"]) == 0
    assert json.loads(capsys.readouterr().out)["plot"] == "c.svg"
    assert (tmp_path / "c.svg").is_file()
    phases = ["phases", "--fabric", "mesh", "--strategy", "MP2-DP5-PP2", "--size", "1MiB"]
    assert main([*phases, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["plot"] is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.svg"]
