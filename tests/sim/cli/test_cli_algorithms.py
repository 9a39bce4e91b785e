"""`fred collective` / `fred phases`: --algorithm, --list-algorithms, bandwidth reporting."""

import json

import pytest

from fredfab.model.system.registry import algorithms
from fredfab.sim.cli import main


def strict_json(text: str):
    """Parse JSON refusing the non-standard Infinity and NaN constants."""

    def refuse(name):
        raise AssertionError(f"JSON contains {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("command", ["collective", "phases"])
def test_help_names_every_registered_algorithm(command, capsys):
    assert main([command, "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for a in algorithms():
        # argparse may break a long name at a hyphen: compare without spaces.
        assert a.name in out.replace("- ", "-")
    if command == "collective":
        assert "algbw = size / time" in out and "2(N-1)/N" in out


def test_list_algorithms_says_where_each_applies(capsys):
    argv = ["collective", "--list-algorithms", "--fabric", "fred-a", "--fabric", "fred-d"]
    assert main([*argv, "--json"]) == 0
    rows = {r["algorithm"]: r for r in strict_json(capsys.readouterr().out)["algorithms"]}
    assert set(rows) == {a.name for a in algorithms()}
    assert rows["in-switch-all-reduce"]["applies"] == {"fred-a": False, "fred-d": True}
    assert rows["hierarchical-ring-pipelined"]["applies"] == {"fred-a": True, "fred-d": True}
    assert rows["direct"]["applies"] == {"fred-a": False, "fred-d": False}  # p2p only
    assert main(argv) == 0
    assert "hierarchical-ring-pipelined  [all-reduce]" in capsys.readouterr().out


def test_collective_json_names_algorithm_candidates_and_both_bandwidths(capsys):
    argv = ["collective", "--fabric", "fred-d", "--op", "reduce-scatter", "--group", "0,1"]
    assert main([*argv, "--size", "4GiB", "--json"]) == 0
    (row,) = strict_json(capsys.readouterr().out)
    assert row["algorithm"] == "ring"
    cands = {c["algorithm"]: c for c in row["candidates"]}
    assert cands["ring"]["status"] == "chosen" and cands["ring"]["time_s"] == row["time_s"]
    # The in-switch reduce-scatter's bound (two serial D/2 steps) is already twice the ring.
    assert cands["in-switch-reduce-scatter"]["bound_s"] > 1.9 * row["time_s"]
    assert row["algbw_GBps"] == pytest.approx(2**32 / row["time_s"] / 1e9)
    assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"] / 2)
    assert row["bound_s"] <= row["time_s"] <= 1.001 * row["bound_s"]
    forced = [*argv, "--size", "4GiB", "--json", "--algorithm", "in-switch-reduce-scatter"]
    assert main(forced) == 0
    (slow,) = strict_json(capsys.readouterr().out)
    assert slow["algorithm"] == "in-switch-reduce-scatter"
    assert slow["time_s"] == pytest.approx(2 * row["time_s"], rel=1e-3)


def test_collective_table_prints_bound_algbw_and_busbw(capsys):
    assert main(["collective", "--fabric", "fred-a", "--size", "256MiB"]) == 0
    out = capsys.readouterr().out
    assert "algbw GB/s" in out and "busbw GB/s" in out and "bound" in out
    assert "hierarchical-ring-pipelined" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["collective", "--fabric", "fred-c", "--size", "0"], "at least 1 byte"),
        (["collective", "--fabric", "fred-c", "--size", "1MiB", "--group", "3"], "at least 2"),
        (["collective", "--fabric", "fred-c", "--size", "1MiB", "--group", "3", "--json"], "2"),
        (["collective", "--fabric", "fred-c"], "give --size"),
        (["collective", "--fabric", "fred-c", "--size", "1MiB", "--algorithm", "x"], "unknown"),
        (["collective", "--fabric", "fred-c", "--size", "1MiB", "--algorithm", "direct"], "p2p"),
        (
            ["collective", "--fabric", "fred-a", "--size", "1MiB", "--group", "0,1,4"]
            + ["--algorithm", "hierarchical-ring"],
            "does not apply",
        ),
        (["phases", "--strategy", "MP2-DP5-PP2", "--size", "0", "--no-plot"], "--size 0"),
        (
            ["phases", "--strategy", "MP2-DP5-PP2", "--size", "1MiB", "--pp-size", "0"]
            + ["--no-plot"],
            "--pp-size 0",
        ),
        (
            ["phases", "--strategy", "MP2-DP5-PP2", "--size", "1MiB", "--no-plot"]
            + ["--algorithm", "direct-rounds"],
            "none of the phases",
        ),
    ],
)
def test_no_rate_and_bad_algorithms_are_one_line_errors(argv, message, capsys):
    assert main(argv) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    err = cap.err.strip()
    assert "\n" not in err and message in err


def test_phases_json_is_strict_and_names_algorithms(capsys):
    argv = ["phases", "--fabric", "fred-d", "--strategy", "MP2-DP5-PP2", "--size", "16MiB"]
    assert main([*argv, "--no-plot", "--json", "--algorithm", "ring"]) == 0
    res = strict_json(capsys.readouterr().out)["fabrics"]["fred-d"]
    assert res["DP"]["algorithms"] == ["ring"] and res["PP"]["algorithms"] == ["direct"]
    assert res["DP"]["candidates"][0]["algorithm"] == "ring"
    assert main([*argv, "--no-plot"]) == 0
    assert "algorithms: MP " in capsys.readouterr().out
