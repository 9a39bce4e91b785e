"""`fred cosim --packet`: bad command lines fail with one line before anything runs; a good
one runs the standard packet scenarios and reports them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fredfab.sim.cli import EXIT_BAD_INPUT, main
from fredfab.sim.verify.cosim import shared_build_root
from fredfab.sim.verify.packet.scenarios import standard

ROOT = shared_build_root()


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--packet-flits", "0"], "--packet-flits: 0 is out of range 1..64"),
        (["--packet-flits", "65"], "out of range 1..64"),
        (["--data-depth", "16"], "--data-depth: 16 is out of range 1..15"),
        (["--data-depth", "x"], "'x' is not an integer"),
        (["--drop", "0.6"], "--drop: 0.6 is out of range 0..0.5"),
        (["--corrupt", "-0.1"], "--corrupt: -0.1 is out of range"),
        (["--drop", "nan"], "--drop: nan is out of range"),
        # In the option's range, but below what the fault model's 20-bit draw can hold.
        (["--silence", "1e-9"], "fault rates: silence must be 0 or at least 2**-20"),
        (["--soak", "5000", "--silence", "1e-9"], "silence must be 0 or at least 2**-20"),
        (["--soak", "10"], "--soak: 10 is out of range"),
        (["--lanes", "1", "--dtype", "int8"], "flits of at least 48 bits"),
        (["--flows", "0:1"], "--flows does not apply to --packet"),
        (["--scenario", "reduce"], "--scenario does not apply to --packet"),
        (["--waves", "--soak", "5000"], "--waves traces the standard scenarios, not a --soak"),
        (["--timing-card"], "--timing-card does not apply to --packet"),
        (["--fabric", "fred-b"], "--fabric does not apply to --packet"),
        (["--hw-soak-threads", "2"], "--hw-soak-threads needs --hw-soak"),
        (["--hw-soak", "1000", "--hw-soak-threads", "3"], "invalid choice: 3"),
    ],
)
def test_bad_packet_options(extra, message, capsys, tmp_path):
    code = main(["cosim", "--packet", "-P", "4", "--root", str(tmp_path / "out"), *extra])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out").exists()  # nothing was built


@pytest.mark.parametrize(
    "option",
    [["--drop", "0.1"], ["--soak", "5000"], ["--data-depth", "2"], ["--hw-soak-threads", "2"]],
)
def test_packet_options_need_packet(option, capsys, tmp_path):
    code = main(["cosim", "-P", "4", "--root", str(tmp_path), *option])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and f"{option[0]} needs --packet" in err


@pytest.mark.needs("icarus")
def test_packet_standard_scenarios_as_json(capsys):
    """The happy path: every standard scenario passes, the fault scenario runs at the rates
    given (faults seen, the lost flits replayed by link-level retry, on by default) and
    goodput is payload flits per cycle per port."""
    argv = ["cosim", "--packet", "--sim", "icarus", "-P", "4", "--m", "3", "--lanes", "4"]
    argv += ["--dtype", "bf16", "--packets", "6", "--drop", "0.02", "--corrupt", "0"]
    assert main([*argv, "--root", str(ROOT), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] and out["variant"] == "fred_clos_p4_m3_l4_bf16_r1_pk8_d4"
    rows = {r["scenario"]: r for r in out["scenarios"]}
    assert list(rows) == [s.name for s in standard(4)]
    faulty = rows["three_phases_faults"]
    assert faulty["dropped"] > 0 and faulty["corrupted"] == 0 and faulty["link_replays"] > 0
    clean = rows["mp_allreduce"]
    assert clean["retransmissions"] == clean["dropped"] == clean["link_replays"] == 0
    # MP pairs: 2 flows x 2 receivers x 6 packets of 8 payload flits.
    assert clean["packets"] == 24
    assert clean["goodput"] == pytest.approx(24 * 8 / clean["cycles"] / 4, abs=1e-4)
    assert 0 < faulty["goodput"] < clean["goodput"]


@pytest.mark.needs("verilator")
def test_packet_soak_from_the_command_line(capsys):
    """--soak runs rounds of random faulty traffic until the cycles are reached, at the
    soak's default fault rates unless told otherwise."""
    argv = ["cosim", "--packet", "-P", "4", "--m", "3", "--lanes", "4", "--dtype", "bf16"]
    assert main([*argv, "--soak", "6000", "--corrupt", "0.002", "--root", str(ROOT), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] and out["soak_cycles"] >= 6000 and out["errors"] == []
    assert (out["drop"], out["corrupt"]) == (1e-3, 0.002)
    assert sum(r["cycles"] for r in out["scenarios"]) == out["soak_cycles"]
    assert all(r["passed"] and r["packets"] > 0 for r in out["scenarios"])


@pytest.mark.needs("icarus")
def test_packet_waves(capsys):
    """Issue 25: --waves was refused with --packet. The trace lands in the run folder."""
    argv = ["cosim", "--packet", "--sim", "icarus", "-P", "2", "--lanes", "4", "--dtype", "bf16"]
    assert main([*argv, "--packets", "2", "--waves", "--root", str(ROOT), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] and out["waves"] is not None
    waves = Path(out["waves"])
    assert waves.parent == Path(out["run_dir"]) and waves.suffix == ".fst"
    assert waves.stat().st_size > 1000
