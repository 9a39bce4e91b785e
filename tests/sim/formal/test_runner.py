"""The proof runner and `make formal`'s command: verdicts, names of what failed, the
counterexample's VCD, the summary file, and bad input."""

from __future__ import annotations

import json

import pytest
from amaranth.asserts import AnySeq
from amaranth.hdl import Assert, Cover, Signal

from fredfab.sim.formal import __main__ as formal_cli
from fredfab.sim.formal.properties import all_proofs
from fredfab.sim.formal.runner import check_messages, harness_module, run, sby_script


def _counter_harness(limit: int):
    """A counter that counts while a free input is high; asserts it stays below ``limit``."""
    m = harness_module()
    count = Signal(4)
    with m.If(AnySeq(1)):
        m.d.sync += count.eq(count + 1)
    m.d.comb += Assert(count < limit, "count stays small")
    m.d.comb += Cover(count == 2, "count reaches two")
    return m


@pytest.mark.needs("sby")
def test_a_failing_proof_names_the_assertion_and_writes_a_vcd(tmp_path):
    verdict = run(lambda: _counter_harness(3), "bmc", 6, tmp_path)
    assert verdict.result == "fail"
    assert any(f.startswith("count stays small:") for f in verdict.failed)
    assert verdict.trace is not None and verdict.trace.exists()
    assert verdict.trace.read_text().startswith("$")  # a VCD header
    text = verdict.explain()
    assert str(verdict.trace) in text and "gtkwave" in text


@pytest.mark.needs("sby")
def test_a_bound_too_short_to_fail_passes_and_a_cover_is_reached(tmp_path):
    assert run(lambda: _counter_harness(3), "bmc", 3, tmp_path / "b").result == "pass"
    cover = run(lambda: _counter_harness(16), "cover", 4, tmp_path / "c")
    assert cover.result == "pass" and cover.trace is not None


@pytest.mark.needs("sby")
def test_an_unreachable_cover_fails(tmp_path):
    verdict = run(lambda: _counter_harness(16), "cover", 2, tmp_path)
    assert verdict.result == "fail"
    assert any("count reaches two" in f for f in verdict.failed)


def test_check_messages_read_from_rtlil():
    text = 'cell $check $7\n    parameter \\FORMAT "o0: the sum"\n'
    assert check_messages(text) == {"7": "o0: the sum"}


@pytest.mark.parametrize(("mode", "depth"), [("induct", 2), ("bmc", 0), ("prove", -1)])
def test_sby_script_refuses_bad_modes_and_depths(mode, depth):
    with pytest.raises(ValueError):
        sby_script(mode, depth, "yices", 10)


def test_proof_names_are_unique_and_every_proof_has_a_negative_control():
    proofs = all_proofs()
    assert len({p.name for p in proofs}) == len(proofs)
    assert all(p.negative and p.claim for p in proofs)
    assert any(p.fast for p in proofs) and any(not p.fast for p in proofs)


def test_cli_lists_and_refuses_unknown_patterns(capsys):
    assert formal_cli.main(["--list", "--only", "skid.*"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out] == ["skid.rules", "skid.order"]
    assert formal_cli.main(["--only", "no.such.proof"]) == 2
    assert capsys.readouterr().err.startswith("fred-formal: error: no proof matches")


def test_cli_refuses_a_bad_job_count(capsys):
    with pytest.raises(SystemExit) as exc:
        formal_cli.main(["-j", "0"])
    assert exc.value.code == 2


@pytest.mark.needs("sby")
def test_cli_writes_the_summary(tmp_path, capsys):
    code = formal_cli.main(["--only", "skid.rules", "--negative", "-o", str(tmp_path)])
    assert code == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    (entry,) = summary["properties"]
    assert entry["name"] == "skid.rules" and entry["mode"] == "prove"
    assert entry["result"] == "pass" and entry["depth"] == 4 and entry["seconds"] > 0
    (mutant,) = summary["negative_controls"]
    assert mutant["result"] == "fail" and mutant["trace"].endswith(".vcd")
    assert "skid.rules" in capsys.readouterr().out
