"""The router: exhaustive base cases, conflicts checked by exhaustive search, backtracking,
error messages, and random flow sets on random switch sizes."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fredfab.model.golden import tree_leaves
from fredfab.model.switch.exhaustive import exhaustively_routable
from fredfab.model.switch.flow import Flow, FlowError
from fredfab.model.switch.flowgen import all_flow_sets, random_flow_set
from fredfab.model.switch.router import RouteConflict, routable, route

ALL_4 = list(all_flow_sets(4))


def _check_routing(flows, P, m):
    """A routing's trees add each flow's inputs exactly once, whatever the router did."""
    routing = route(flows, P, m)
    for f, tree in zip(routing.flows, routing.trees, strict=True):
        assert sorted(tree_leaves(tree)) == sorted(f.ips)
    return routing


@pytest.mark.parametrize("m", [2, 3, 4])
@pytest.mark.parametrize("P", [2, 3])
def test_every_flow_set_routes_on_base_cases(P, m):
    sets = list(all_flow_sets(P))
    assert len(sets) == {2: 11, 3: 127}[P]  # every non-empty set of concurrent flows
    for flows in sets:
        _check_routing(flows, P, m)


def test_four_ports_m3_routes_everything_m2_does_not():
    assert len(ALL_4) == 2099
    assert all(routable(fs, 4, 3) for fs in ALL_4)
    assert sum(not routable(fs, 4, 2) for fs in ALL_4) == 160


def test_conflicts_are_real_by_exhaustive_search():
    """Every flow set the router rejects on Fred_2(4) has no configuration at all, even one
    that splits a flow across middles; a sample of accepted sets has one too."""
    rng = np.random.default_rng(4)
    bad = [fs for fs in ALL_4 if not routable(fs, 4, 2)]
    good = [fs for fs in ALL_4 if routable(fs, 4, 2)]
    for i in rng.choice(len(bad), 40, replace=False):
        assert not exhaustively_routable(bad[i], 4, 2), bad[i]
    for i in rng.choice(len(good), 20, replace=False):
        assert exhaustively_routable(good[i], 4, 2), good[i]


def test_triangle_conflict_is_named():
    """1->{0,2}, 2->1 and 3->3 pairwise share a 2-port uSwitch: three colours needed."""
    flows = [Flow.parse("1:0,2"), Flow.parse("2:1"), Flow.parse("3:3")]
    with pytest.raises(RouteConflict) as err:
        route(flows, 4, 2)
    assert set(err.value.flows) == set(flows)
    assert "1:0,2" in str(err.value) and "Fred_2(4)" in str(err.value)
    route(flows, 4, 3)  # a third middle resolves it


@pytest.mark.parametrize(
    "P,flows",
    [
        (7, ["0,4:5", "6:0", "5:6", "2:2-3"]),
        (8, ["2:0", "5:2", "1,7:4-5"]),
        (12, ["4:7,11", "2:0,8", "1,6,8:2"]),
    ],
)
def test_backtracking_routes_what_one_colouring_per_level_cannot(P, flows):
    flows = [Flow.parse(f) for f in flows]
    assert not routable(flows, P, 2, backtrack=False)
    _check_routing(flows, P, 2)


def test_minimal_conflict_is_minimal():
    rng = np.random.default_rng(11)
    seen = 0
    while seen < 15:
        flows = random_flow_set(rng, 10)
        try:
            route(flows, 10, 2)
        except RouteConflict as exc:
            seen += 1
            core = list(exc.flows)
            assert set(core) <= set(flows) and not routable(core, 10, 2)
            for f in core:
                assert routable([g for g in core if g != f], 10, 2)


@pytest.mark.parametrize(
    "flows,ports,message",
    [
        ([Flow([0], [1]), Flow([0], [2])], 4, "share input port 0"),
        ([Flow([0], [1]), Flow([2], [1])], 4, "share output port 1"),
        ([Flow([0], [4])], 4, "output port 4 out of range 0..3"),
        ([Flow([5], [0])], 4, "input port 5 out of range"),
        ([Flow([0], [0])], 1, "at least 2 ports"),
    ],
)
def test_malformed_input_is_named(flows, ports, message):
    with pytest.raises(FlowError, match=message):
        route(flows, ports, 3)


def test_empty_and_negative_ports_rejected():
    with pytest.raises(FlowError, match="at least one input"):
        Flow([], [1])
    with pytest.raises(FlowError, match="at least one output"):
        Flow([1], [])
    with pytest.raises(FlowError, match="negative"):
        Flow([-1], [1])
    with pytest.raises(FlowError, match="not a port or range"):
        Flow.parse("a:1")
    with pytest.raises(FlowError, match="expected IPS:OPS"):
        Flow.parse("0,1")


@pytest.mark.parametrize(
    "text,message",
    [
        ("0,0:1", "names input port 0 twice"),
        ("0-2,1:3", "names input port 1 twice"),
        ("0:1,2-3,3", "names output port 3 twice"),
    ],
)
def test_a_port_named_twice_in_a_flow_is_refused(text, message):
    with pytest.raises(FlowError, match=message):
        Flow.parse(text)
    # The same ports named once each parse, and a port may be an input and an output.
    assert Flow.parse("0,1:1") == Flow([0, 1], [1])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(P=st.integers(2, 32), m=st.integers(2, 4), seed=st.integers(0, 2**32 - 1))
def test_random_flow_sets(P, m, seed):
    """Routed sets add every input exactly once; rejected sets have a minimal conflict that
    is itself unroutable while each flow of it routes alone."""
    flows = random_flow_set(np.random.default_rng(seed), P)
    try:
        _check_routing(flows, P, m)
    except RouteConflict as exc:
        assert exc.flows and set(exc.flows) <= set(flows)
        assert not routable(exc.flows, P, m)
        assert all(routable([f], P, m) for f in exc.flows)


def test_hard_backtracking_case_routes():
    """A P = 64, m = 2 set that needs many learned nogoods (before minimal nogoods and
    memoisation the search took minutes on it); its routing must still be correct."""
    text = (
        "18:62 20:52 30,39,51:24 7:61 41:25,39,44 6,50:49 9:9 24:19 25:3 17,46,56:31 10:53-54 "
        "54:29 27:23 29:34 49,59:33 36:13 45:15 63:30 1:37 31:16,42 53:41 38:2 52:28 3,34:6 "
        "13:60 5:14,20 14:21 48:32 32:7-8 58:4,17 44:50 55:26"
    )
    flows = [Flow.parse(t) for t in text.split()]
    assert not routable(flows, 64, 2, backtrack=False)
    _check_routing(flows, 64, 2)
