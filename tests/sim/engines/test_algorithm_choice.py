"""The default algorithm is the fastest candidate under the simulator; a forced one runs."""

import pytest

from fredfab.model.system import CollectiveRequest, Strategy, load_fabric
from fredfab.sim.engines import algorithm_choice
from fredfab.sim.engines.system import CollectiveConflict, phase_bandwidth, simulate

D = 4 * 2**30
REL = 1e-9


def test_two_member_reduce_scatter_on_fred_d_runs_the_ring_twice_as_fast():
    # In-switch Reduce-Scatter runs N serial reduces of D/N: D / 3 TB/s for two members;
    # a ring moves D/2 once.
    f = load_fabric("fred-d")
    req = CollectiveRequest("reduce-scatter", (0, 1), D)
    best = simulate(f, [req]).requests[0]
    forced = simulate(f, [req], algorithm="in-switch-reduce-scatter").requests[0]
    assert best.algorithm == "ring"
    assert forced.algorithm == "in-switch-reduce-scatter"
    assert forced.time / best.time == pytest.approx(2.0, rel=1e-3)


@pytest.mark.parametrize(
    ("fabric", "op", "group"),
    [
        ("fred-a", "all-reduce", range(20)),
        ("fred-b", "all-reduce", (0, 1, 4, 5)),
        ("fred-d", "all-gather", (0, 4, 8)),
        ("mesh", "all-reduce", range(20)),
    ],
)
def test_the_chosen_algorithm_is_the_fastest_candidate(fabric, op, group):
    f = load_fabric(fabric)
    req = CollectiveRequest(op, group, 2**26)
    r = simulate(f, [req]).requests[0]
    by = {c.name: c for c in r.candidates}
    assert by[r.algorithm].status == "chosen"
    timed = [c.time for c in r.candidates if c.time is not None]
    assert len(timed) >= 1 and r.time == pytest.approx(min(timed), rel=1e-6)
    for c in r.candidates:
        if c.status == "bound-exceeds-best":  # not simulated: run it, it must not have won
            pruned = simulate(f, [req], algorithm=c.name).requests[0].time
            assert pruned >= c.bound * (1 - REL) and pruned > r.time
        if c.time is not None:  # each time alone is what forcing it gives
            alone = simulate(f, [req], algorithm=c.name).requests[0].time
            assert alone == pytest.approx(c.time, rel=REL)


def test_a_sole_candidate_reports_its_time():
    r = simulate(load_fabric("fred-c"), [CollectiveRequest("p2p", (0, 19), D)]).requests[0]
    assert [(c.name, c.status, c.time) for c in r.candidates] == [("direct", "only", r.time)]


def test_forcing_applies_to_requests_of_its_ops_and_says_where_it_cannot():
    f = load_fabric("fred-a")
    reqs = [CollectiveRequest("all-reduce", range(20), D), CollectiveRequest("p2p", (0, 19), D)]
    r = simulate(f, reqs, algorithm="ring")
    assert [x.algorithm for x in r.requests] == ["ring", "direct"]
    with pytest.raises(ValueError, match="does not apply to all-reduce over 3 NPUs"):
        simulate(f, [CollectiveRequest("all-reduce", (0, 1, 4), D)], algorithm="hierarchical-ring")
    with pytest.raises(ValueError, match="runs p2p, not all-reduce"):
        simulate(f, reqs[:1], algorithm="direct")
    with pytest.raises(ValueError, match="unknown"):
        simulate(f, reqs[:1], algorithm="no-such-algorithm")


def test_choices_are_memoised_per_fabric_request_and_options():
    f = load_fabric("fred-b")
    req = CollectiveRequest("all-reduce", (0, 1, 4, 5), 12345678)
    first = simulate(f, [req])
    hits = algorithm_choice._evaluate.cache_info().hits
    again = simulate(f, [CollectiveRequest("all-reduce", (0, 1, 4, 5), 12345678, label="DP")])
    assert algorithm_choice._evaluate.cache_info().hits == hits + 1
    assert again.requests[0].algorithm == first.requests[0].algorithm
    assert again.time == first.time
    simulate(f, [req], chunks=3)  # other options: evaluated again
    assert algorithm_choice._evaluate.cache_info().hits == hits + 1


@pytest.fixture
def in_switch_unroutable(monkeypatch):
    """Every in-switch configuration reported unroutable (none of the shipped fabrics' own
    configurations fails, so the failure is injected)."""
    algorithm_choice._evaluate.cache_clear()
    monkeypatch.setattr(
        algorithm_choice.SwitchChecker, "plan_conflict", lambda self, plan: "injected conflict"
    )
    yield
    algorithm_choice._evaluate.cache_clear()


def test_unroutable_in_switch_candidates_are_skipped_and_reported(in_switch_unroutable):
    f = load_fabric("fred-d")
    req = CollectiveRequest("all-reduce", range(20), D)
    r = simulate(f, [req])
    assert r.requests[0].algorithm != "in-switch-all-reduce"
    assert "in-switch-all-reduce" in {c.name for c in r.requests[0].candidates}
    assert r.fallbacks and "injected conflict" in r.fallbacks[0]
    assert f"ran {r.requests[0].algorithm} instead of in-switch-all-reduce" in r.fallbacks[0]
    with pytest.raises(CollectiveConflict, match="injected conflict"):
        simulate(f, [req], on_conflict="error")
    forced = simulate(f, [req], algorithm="in-switch-all-reduce")
    assert forced.requests[0].algorithm == r.requests[0].algorithm
    assert forced.fallbacks == r.fallbacks


def test_phases_choose_per_request_then_run_together():
    f = load_fabric("fred-a")
    res = phase_bandwidth(f, Strategy(mp=2, dp=5, pp=2), D)
    # MP groups (two NPUs under one L1 switch) have only the ring; DP groups (one NPU per
    # L1 switch) have no hierarchy either: rings that share each L1 uplink four ways.
    assert res["MP"].algorithms == ("ring",)
    assert res["DP"].algorithms == ("ring",)
    alone = simulate(f, [CollectiveRequest("all-reduce", (0, 4, 8, 12, 16), D)]).time
    assert res["DP"].time > 3.5 * alone
    forced = phase_bandwidth(f, Strategy(mp=2, dp=5, pp=2), D, algorithm="ring")
    assert forced["PP"].algorithms == ("direct",)
    with pytest.raises(ValueError, match="none of the phases"):
        phase_bandwidth(f, Strategy(mp=2, dp=5, pp=2), D, algorithm="direct-rounds")
