"""The suite's own rules (tests/conftest.py): missing simulators fail under CI, and the slow
slice rotates through the whole slow suite."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fredfab.sim.verify.toolchain import ToolMissing
from tests import conftest, simulators, slow_slice
from tests.slow_slice import (
    budget_seconds,
    choose,
    durations_from_report,
    estimate,
    partition,
    seed_from,
)


@pytest.fixture
def no_icarus(monkeypatch):
    monkeypatch.setitem(simulators.TOOLS, "icarus", lambda: False)
    monkeypatch.setitem(simulators.TOOLS, "verilator", lambda: True)


@pytest.mark.parametrize("value", ["true", "1", "yes", "True"])
def test_missing_simulator_fails_under_ci(no_icarus, monkeypatch, value):
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception, match="not installed: icarus.*CI is set"):
        simulators.require("icarus", "verilator")


@pytest.mark.parametrize("value", [None, "", "false", "0", "no"])
def test_missing_simulator_skips_outside_ci(no_icarus, monkeypatch, value):
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.skip.Exception, match="not installed: icarus"):
        simulators.require("icarus")


def test_installed_simulators_pass_and_unknown_names_are_errors(no_icarus, monkeypatch):
    monkeypatch.setenv("CI", "true")
    simulators.require("verilator")  # installed: neither skip nor fail
    with pytest.raises(ValueError, match="iverilog"):
        simulators.require("iverilog")


class _Item:
    def __init__(self, *tools: str):
        self._marks = [pytest.mark.needs(*tools).mark]

    def iter_markers(self, name):
        return iter(m for m in self._marks if m.name == name)


def test_needs_mark_is_checked_before_the_test(no_icarus, monkeypatch):
    monkeypatch.setenv("CI", "true")
    conftest.pytest_runtest_setup(_Item("verilator"))
    with pytest.raises(pytest.fail.Exception):
        conftest.pytest_runtest_setup(_Item("icarus"))


@pytest.mark.parametrize(
    "ci,outcome", [("true", pytest.fail.Exception), ("", pytest.skip.Exception)]
)
def test_tool_missing_raised_by_a_test_fails_under_ci(monkeypatch, ci, outcome):
    monkeypatch.setenv("CI", ci)
    call = conftest.pytest_runtest_call(_Item())
    next(call)
    with pytest.raises(outcome, match="no c\\+\\+"):
        call.throw(ToolMissing("no c++"))


# --------------------------------------------------------------------------------------------
# Slow slice

IDS = [f"tests/hw/test_switch.py::test_full_cross_product[{P}-3-clos-int8]" for P in range(2, 17)]
IDS += [
    f"tests/sim/verify/test_cosim.py::test_wide_sweep[fred_clos_p{P}_m2_l1_int8_r1-{sim}]"
    for P in (2, 7, 16)
    for sim in ("icarus", "verilator")
]
IDS += ["tests/hw/test_adder.py::test_exhaustive_every_pair[fp16]", "tests/x.py::test_unknown"]


def test_estimates_grow_with_ports_and_cover_unknown_tests(monkeypatch):
    monkeypatch.setattr(slow_slice, "MEASURED", {})  # the rules alone
    assert estimate(IDS[14]) > estimate(IDS[0]) > 0  # P = 16 against P = 2
    assert estimate("tests/x.py::test_unknown") == slow_slice.DEFAULT_SECONDS


def test_a_measured_duration_overrides_the_rule(monkeypatch):
    monkeypatch.setattr(slow_slice, "MEASURED", {IDS[14]: 3.5})
    assert estimate(IDS[14]) == 3.5
    assert estimate(IDS[13]) > 3.5  # P = 15 by its rule


def test_durations_are_read_from_the_report_and_summed_per_test():
    report = (
        "============ slowest durations ============\n"
        "12.50s call     tests/a.py::test_x[p 1]\n"
        "0.25s setup    tests/a.py::test_x[p 1]\n"
        "3.00s call     tests/b.py::test_y\n"
        "1 passed in 16.00s\n"
    )
    assert durations_from_report(report) == {
        "tests/a.py::test_x[p 1]": 12.75,
        "tests/b.py::test_y": 3.0,
    }


def test_rewriting_the_durations_refuses_a_missing_or_empty_log(tmp_path, monkeypatch, capsys):
    table = tmp_path / "durations.json"
    table.write_text('{"measured": "before", "seconds": {}}\n')
    monkeypatch.setattr(slow_slice, "DURATIONS_FILE", table)
    empty = tmp_path / "empty.log"
    empty.write_text("1 passed in 16.00s\n")
    assert slow_slice.main([str(tmp_path / "absent.log"), "how"]) == 2
    assert slow_slice.main([str(empty), "how"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "absent.log" in err[0] and "no --durations=0 report" in err[1]
    assert table.read_text() == '{"measured": "before", "seconds": {}}\n'  # left as it was
    full = tmp_path / "full.log"
    full.write_text("2.00s call     tests/b.py::test_y\n")
    assert slow_slice.main([str(full), "fresh run"]) == 0
    assert '"tests/b.py::test_y": 2.0' in table.read_text()


@pytest.mark.parametrize("budget", [300.0, 900.0, 1e9])
def test_successive_seeds_run_every_slow_test_once(budget):
    first = choose(IDS, 0, budget)
    k = first.shards
    slices = [choose(IDS, seed, budget) for seed in range(100, 100 + k)]
    runs = [n for s in slices for n in s.chosen]
    assert sorted(runs) == sorted(IDS)  # each exactly once over k successive seeds
    assert choose(IDS, 100 + k, budget).chosen == slices[0].chosen  # then it repeats
    longest = max(estimate(n) for n in IDS)
    for s in slices:
        assert s.chosen_seconds <= max(budget, longest)
    assert (k == 1) == (budget >= sum(estimate(n) for n in IDS))


def test_a_test_longer_than_the_budget_gets_a_shard_and_the_rest_stay_packed():
    longest = max(IDS, key=estimate)
    budget = estimate(longest) / 2  # the longest test alone exceeds it
    first = choose(IDS, 0, budget)
    k = first.shards
    assert k < len(IDS) // 2  # the others still share shards, not one test each
    slices = [choose(IDS, seed, budget) for seed in range(k)]
    assert [s.chosen for s in slices].count((longest,)) == 1  # alone in its own shard
    assert max(s.chosen_seconds for s in slices) <= estimate(longest)


def test_no_slow_tests_make_one_empty_slice():
    # CI=true with a path holding no slow test (say tests/test_readme.py).
    empty = choose([], 5, 1500.0)
    assert (empty.shards, empty.chosen, empty.total) == (1, (), 0)


def test_slice_does_not_depend_on_collection_order():
    assert choose(IDS, 7, 600).chosen == choose(list(reversed(IDS)), 7, 600).chosen


def test_partition_balances_the_estimates():
    bins = partition(IDS, 3)
    loads = sorted(sum(estimate(n) for n in b) for b in bins)
    assert loads[-1] - loads[0] <= max(estimate(n) for n in IDS)


def test_describe_names_seed_and_counts():
    text = choose(IDS, 12, 600).describe()
    assert text.startswith(f"slow slice seed 12: {len(choose(IDS, 12, 600).chosen)} of {len(IDS)}")
    assert "FRED_SLOW_SEED=12" in text


def test_seed_and_budget_from_the_environment():
    assert seed_from({"FRED_SLOW_SEED": "42"}) == 42
    assert seed_from({}, now=86400 * 3 + 5) == 3  # the UTC day number
    total = sum(estimate(n) for n in IDS)
    assert budget_seconds({"FRED_SLOW_BUDGET": "0.25"}, IDS) == pytest.approx(total / 4)
    assert budget_seconds({"FRED_SLOW_BUDGET": "900"}, IDS) == 900
    assert budget_seconds({}, IDS) > 1
    with pytest.raises(ValueError):
        budget_seconds({"FRED_SLOW_BUDGET": "-3"}, IDS)


@pytest.mark.parametrize(
    "args,explicit",
    [((), False), (("-n", "2", "tests/hw"), False), (("-m", "slow"), True), (("-mslow",), True)],
)
def test_an_explicit_marker_expression_turns_the_slice_off(args, explicit):
    config = SimpleNamespace(invocation_params=SimpleNamespace(args=args))
    assert conftest._explicit_m(config) is explicit
