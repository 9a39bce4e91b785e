"""The switch timing card is chosen explicitly: a command gives the same output wherever it
runs, whatever cards lie under the working directory, and names the card it used."""

import json

import pytest

from fredfab.model.timing_card import default_card
from fredfab.sim.cli import main

COLLECTIVE = ["collective", "--fabric", "fred-d", "--op", "reduce-scatter", "--group", "0-19"]
COLLECTIVE += ["--size", "64KiB"]


def _slow_card() -> dict:
    d = default_card().to_dict()
    d["simulator"] = "verilator 5.048"
    d["latency_cycles"] = 1000  # far from the built-in card, so picking it up would show
    return d


def _run(argv, capsys) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("json_out", [False, True])
def test_same_output_from_a_directory_with_a_card_in_build_timing(
    tmp_path, monkeypatch, capsys, json_out
):
    argv = COLLECTIVE + (["--json"] if json_out else [])
    plain = tmp_path / "plain"
    plain.mkdir()
    checkout = tmp_path / "checkout"
    (checkout / "build/timing").mkdir(parents=True)
    (checkout / "build/timing/fred-ports8.json").write_text(json.dumps(_slow_card()))
    monkeypatch.chdir(plain)
    here = _run(argv, capsys)
    monkeypatch.chdir(checkout)
    there = _run(argv, capsys)
    assert here == there
    assert "built-in" in here
    # Named explicitly, the same card does change the result.
    named = _run(argv + ["--timing-card", "build/timing/fred-ports8.json"], capsys)
    assert named != here and "build/timing/fred-ports8.json" in named


def test_collective_json_names_the_card_latency_and_clock(capsys):
    rows = json.loads(_run(COLLECTIVE + ["--fabric", "mesh", "--json"], capsys))
    by_fabric = {r["fabric"]: r["switch_timing"] for r in rows}
    assert by_fabric["mesh-5x4"] is None  # a mesh has no switches
    t = by_fabric["fred-d"]
    assert t["card"] == "built-in" and t["clock_GHz"] == 1.0
    assert t["latency_cycles"] == default_card().latency_cycles
    assert t["hop_latency_ns"] == pytest.approx(default_card().latency_cycles)


def test_phases_and_estimate_name_the_card(tmp_path, capsys):
    card = tmp_path / "card.json"
    card.write_text(json.dumps(_slow_card()))
    argv = ["phases", "--strategy", "MP2-DP5-PP2", "--size", "1MiB", "--fabric", "fred-a"]
    out = _run(argv + ["--no-plot", "--timing-card", str(card)], capsys)
    assert f"switch timing card: {card} (1000 cycles per hop at 1 GHz = 1000 ns; clock " in out
    d = json.loads(_run(argv + ["--no-plot", "--json"], capsys))
    assert d["switch_timing"]["fred-a"]["card"] == "built-in"
    argv = ["estimate", "--workload", "resnet-152", "--fabric", "fred-d", "--json"]
    d = json.loads(_run(argv, capsys))
    assert d["timing_card"] == "built-in" and d["switch_timing"]["clock_GHz"] == 1.0
    out = _run(["estimate", "--workload", "resnet-152", "--fabric", "fred-d"], capsys)
    assert "switch timing card: built-in (" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["estimate", "--workload", "resnet-152", "--fabric", "fred-d"],
        ["collective", "--fabric", "fred-d", "--size", "1MiB"],
        ["phases", "--strategy", "MP2-DP5-PP2", "--size", "1MiB", "--no-plot"],
        ["compare", "--workload", "resnet-152", "--no-plot"],
    ],
    ids=["estimate", "collective", "phases", "compare"],
)
@pytest.mark.parametrize("content", ['{"schema": "x"}\n', "not json\n"], ids=["schema", "json"])
def test_a_bad_card_is_blamed_not_the_fabric_file(tmp_path, monkeypatch, capsys, argv, content):
    """Issue 25: a broken --timing-card was reported against the shipped fabric's file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text(content)
    assert main([*argv, "--timing-card", "bad.json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"fred {argv[0]}: error: timing card") and "bad.json" in err
    assert ".toml" not in err
