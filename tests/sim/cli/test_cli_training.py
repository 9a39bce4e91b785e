import json

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
    assert "does not fit" in capsys.readouterr().out


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
