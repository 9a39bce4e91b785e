"""The fabric router (model/switch/fabric_router.py): tree flows -> per-switch routings."""

from __future__ import annotations

import pytest

from fredfab.model.golden import tree_leaves
from fredfab.model.switch.fabric_router import FabricRouteError, route_groups
from fredfab.model.system.generators import fred_tree
from fredfab.model.system.loader import load_fabric
from fredfab.model.system.placement import Strategy


def test_fred_d_all_reduce_reduces_up_and_multicasts_down() -> None:
    fab = load_fabric("fred-d")
    r = route_groups(fab, [(range(20), range(20))])
    for l1 in fab.children[fab.root]:
        up = fab.port_base(l1)[fab.root]
        assert [str(f) for f in r.routings[l1].flows] == [f"0-3:{up}", f"{up}:0-3"]
    (top,) = r.routings[fab.root].flows
    assert (
        top.ips == top.ops == frozenset(fab.port_base(fab.root)[c] for c in fab.children[fab.root])
    )
    for npu in range(20):
        assert sorted(tree_leaves(r.result_tree(npu))) == list(range(20))
    # Every receiver gets the same sum, added in the same order.
    assert len({r.result_tree(npu) for npu in range(20)}) == 1


def test_dp_groups_take_one_lane_each() -> None:
    fab = load_fabric("fred-d")
    groups = Strategy.parse("MP4-DP5").dp_groups()
    r = route_groups(fab, [(g, g) for g in groups])
    assert len(r.routings[fab.root].flows) == 4
    for g in groups:
        assert sorted(tree_leaves(r.result_tree(g[0]))) == sorted(g)


def test_idle_switches_get_an_idle_configuration() -> None:
    fab = load_fabric("fred-d")
    r = route_groups(fab, [((0, 1), (0, 1))])
    assert set(r.routings) == {fab.parent[0]}
    other = fab.parent[4]
    assert all(c == 0 for codes in r.config(other).codes for c in codes)


def test_a_bundle_overflow_names_the_link() -> None:
    # L2.0 joins L3 by 2 lanes (its two L1 children); three groups spanning both halves
    # of the tree need three.
    fab = fred_tree([2, 2, 2], [1.0, 1.0, 1.0])
    with pytest.raises(FabricRouteError, match=r"from L2\.0 to L3"):
        route_groups(fab, [((0, 4), (0, 4)), ((1, 5), (1, 5)), ((2, 6), (2, 6))])


def test_a_switch_conflict_names_the_switch() -> None:
    # Two concurrent groups sharing NPU 0 give L1.0 two flows on port 0.
    fab = load_fabric("fred-d")
    with pytest.raises(FabricRouteError, match=r"switch L1\.0: "):
        route_groups(fab, [((0, 1), (0, 1)), ((0, 2), (0, 2))])


def test_a_blocking_switch_is_named() -> None:
    # Fred_2(8) switches (m = 2) block this phase at L1.1 (found by a random search).
    fab = fred_tree([4, 2], [1.0, 1.0], switch_m=2)
    groups = [((3,), (1, 5)), ((4, 6), (4, 6)), ((0,), (7,))]
    with pytest.raises(FabricRouteError, match=r"switch L1\.1: flows .* cannot run concurrently"):
        route_groups(fab, groups)
    # With the paper's m = 3 the same phase routes.
    assert route_groups(fab, groups, m=3).routings
