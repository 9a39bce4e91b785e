"""`fred cost --fpga`: the smallest Clos switch placed and routed on the ECP5 and its measured
Fmax written into a timing card; with the slow suite, P = 2 and 4 in one run (about a minute
on an idle machine)."""

import json
from pathlib import Path

import pytest

from fredfab.hw.params import SwitchParams
from fredfab.model.system import SwitchTiming
from fredfab.model.timing_card import TimingCard, default_card
from fredfab.sim.cli import EXIT_BAD_INPUT, main

SMALL = SwitchParams(ports=2, m=3, lanes=1, dtype="bf16")


def _card(tmp_path, params: SwitchParams) -> str:
    card = TimingCard.from_dict(default_card().to_dict() | {"generator": params.to_dict()})
    path = tmp_path / "card.json"
    path.write_text(card.to_json())
    return str(path)


def _place(tmp_path, capsys, ports: str) -> tuple[Path, dict[int, dict]]:
    """Run `fred cost --fpga` on the Clos switches of ``ports``, with the card of SMALL."""
    out = tmp_path / "cost"
    argv = ["cost", "--fpga", f"--ports={ports}", "--arch=clos", "--lanes=1", "--dtype=bf16"]
    argv += [f"--out={out}", "--json", f"--timing-card={_card(tmp_path, SMALL)}"]
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows == json.loads((out / "fpga.json").read_text())
    for r in rows:
        assert r["status"] == "ok"
        assert 0 < r["luts"] <= r["lut_capacity"]
        assert r["ffs"] > 0 and r["carry"] > 0  # registered stages, floating-point adders
        assert r["fmax_mhz"] > 0
        work = out / "fpga" / r["variant"]
        assert all((work / f).is_file() for f in ("netlist.json", "nextpnr.log", "report.json"))
    return out, {r["ports"]: r for r in rows}


@pytest.mark.needs("yosys", "nextpnr-ecp5")
def test_smallest_switch_places_routes_and_clocks_a_card(tmp_path, capsys):
    out, by_ports = _place(tmp_path, capsys, "2")
    assert sorted(by_ports) == [2]
    # The card of the P = 2 switch now carries that switch's Fmax, and the model uses it.
    card = TimingCard.from_json((out / f"{SMALL.name}.timing.json").read_text())
    assert card.clock_hz == pytest.approx(by_ports[2]["fmax_mhz"] * 1e6)
    assert "nextpnr-ecp5" in card.clock_source and "not the paper's ASIC clock" in card.clock_source
    assert SwitchTiming(card).clock_hz == card.clock_hz


@pytest.mark.slow
@pytest.mark.needs("yosys", "nextpnr-ecp5")
def test_fpga_cost_grows_with_ports(tmp_path, capsys):
    """P = 2 and 4 in one run (two processes): the larger switch takes more LUTs and FFs."""
    _, by_ports = _place(tmp_path, capsys, "2,4")
    assert sorted(by_ports) == [2, 4]
    assert by_ports[4]["luts"] > by_ports[2]["luts"]
    assert by_ports[4]["ffs"] > by_ports[2]["ffs"]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--ports=4"], "describes fred_clos_p2_m3_l1_bf16_r1, which this run does not"),
        (["--ports=2", "--lanes=2"], "does not place and route"),
    ],
)
def test_a_card_for_a_variant_not_in_the_run_is_refused(tmp_path, capsys, extra, message):
    argv = ["cost", "--fpga", "--arch=clos", f"--out={tmp_path}", *extra]
    assert main([*argv, f"--timing-card={_card(tmp_path, SMALL)}"]) == EXIT_BAD_INPUT
    assert message in capsys.readouterr().err


def test_a_card_needs_the_fpga_run(tmp_path, capsys):
    argv = ["cost", "--ports=2", f"--out={tmp_path}", f"--timing-card={_card(tmp_path, SMALL)}"]
    assert main(argv) == EXIT_BAD_INPUT
    assert "add --fpga" in capsys.readouterr().err


def test_a_placer_seed_needs_the_fpga_run(tmp_path, capsys):
    # It used to be ignored: the generic synthesis ran, minutes of it, without a placer.
    assert main(["cost", "--ports=2", f"--out={tmp_path}", "--seed=5"]) == EXIT_BAD_INPUT
    assert "--seed is the FPGA placer's: add --fpga" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
