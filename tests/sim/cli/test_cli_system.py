import json

import pytest

from fredfab.sim.cli import main


def test_collective_json(capsys):
    assert (
        main(["collective", "--fabric", "fred-d", "--group", "0-19", "--size", "64MiB", "--json"])
        == 0
    )
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["algorithm"] == "in-switch-all-reduce"
    assert rows[0]["time_s"] == pytest.approx(2**26 / 3e12, rel=1e-2)


def test_a_time_on_a_coarse_event_grid_says_so(capsys):
    """A 1 ms grid made a 404.5 ns All-Reduce 3 ms, with nothing to say it was the grid."""
    argv = ["collective", "--fabric", "fred-d", "--size", "1MiB", "--json"]
    assert main(argv) == 0
    exact = json.loads(capsys.readouterr().out)[0]
    assert not any("resolution" in n for n in exact["notes"])
    for ns, coarse in ((1_000_000, True), (1, False)):
        assert main([*argv, "--resolution-ns", str(ns)]) == 0
        row = json.loads(capsys.readouterr().out)[0]
        (note,) = [n for n in row["notes"] if n.startswith(f"--resolution-ns {ns}:")]
        steps = row["time_s"] / (ns * 1e-9)
        assert f"{steps:.4g} steps of the event grid" in note
        assert ("the grid is coarse for it" in note) is coarse
    assert row["time_s"] == pytest.approx(exact["time_s"], abs=1e-9)  # 1 ns: within a step


def test_collective_table_lists_every_fabric(capsys):
    assert main(["collective", "--size", "1MiB", "--op", "reduce-scatter"]) == 0
    out = capsys.readouterr().out
    for name in ("mesh-5x4", "fred-a", "fred-b", "fred-c", "fred-d"):
        assert name in out


@pytest.mark.parametrize(
    "argv",
    [
        ["collective", "--fabric", "mesh", "--size", "lots"],
        ["collective", "--fabric", "mesh", "--size", "1MiB", "--group", "0-40"],
        ["collective", "--fabric", "nope", "--size", "1MiB"],
        ["collective", "--fabric", "mesh", "--size", "1MiB", "--op", "scatter-gather"],
        ["phases", "--strategy", "MP2-DP5-PP4", "--size", "1MiB", "--no-plot"],
        ["phases", "--strategy", "MP2-DP5", "--no-plot"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fred ") and "\n" not in err


def test_phases_writes_a_plot_and_json(tmp_path, capsys):
    out = tmp_path / "p.svg"
    assert (
        main(
            [
                "phases",
                "--fabric",
                "mesh",
                "--fabric",
                "fred-d",
                "--strategy",
                "MP2-DP5-PP2",
                "--size",
                "16MiB",
                "-o",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert out.read_text().lstrip().startswith("<?xml")
    assert set(data["fabrics"]) == {"mesh-5x4", "fred-d"}
    assert (
        data["fabrics"]["fred-d"]["DP"]["busbw_GBps"]
        > data["fabrics"]["mesh-5x4"]["DP"]["busbw_GBps"]
    )
