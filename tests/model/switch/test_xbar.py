"""The crossbar-plus-reduction-tree switch: structure, and every flow set routes (it is
non-blocking) with results equal to the golden model."""

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fredfab.model.dtypes import element_type, random_data, to_bits
from fredfab.model.golden import check_within_bound, reduce_tree, tree_depth, tree_leaves
from fredfab.model.switch.config import Configuration
from fredfab.model.switch.flow import Flow
from fredfab.model.switch.flowgen import all_flow_sets, random_flow_set
from fredfab.model.switch.router import routable, route
from fredfab.model.switch.switch_model import FunctionalSwitch
from fredfab.model.switch.xbar_topology import XbarTopology


@pytest.mark.parametrize("P", [2, 3, 4, 5, 7, 8, 13, 16, 32])
def test_structure(P):
    c = XbarTopology.build(P).counts()
    assert c["ART"] == P - 1 and c["adders"] == P - 1
    assert (c["DEMUX"], c["MUX"], c["FORK"]) == (2 * P, 2 * P, 2 * P)
    # leaf select + tree height + output select; the tree is balanced
    assert c["register_depth"] == 2 + math.ceil(math.log2(P))


def _check(flows, P, sw=None, rng=None):
    routing = route(flows, P, arch="xbar")
    for f, tree in zip(routing.flows, routing.trees, strict=True):
        assert sorted(tree_leaves(tree)) == sorted(f.ips)
    if sw is not None:
        data = {p: random_data(rng, sw.et, (6,), edge_cases=True) for f in flows for p in f.ips}
        outs = sw.forward(routing, data)
        for f, tree in zip(routing.flows, routing.trees, strict=True):
            want = reduce_tree(tree, data, sw.et)
            for p in f.ops:
                assert np.array_equal(to_bits(outs[p], sw.et), to_bits(want, sw.et))
            arrays = [data[p] for p in sorted(f.ips)]
            assert check_within_bound(want, arrays, tree_depth(tree), sw.et).all()
        receivers = {p for f in flows for p in f.ops}
        assert all(outs[p] is None for p in range(P) if p not in receivers)


@pytest.mark.parametrize("P", [2, 3, 4])
def test_every_flow_set_routes(P):
    rng = np.random.default_rng(P)
    sw = FunctionalSwitch(P, 3, element_type("fp16"), arch="xbar")
    for flows in all_flow_sets(P):
        _check(flows, P, sw, rng)


def test_sets_that_block_the_clos_route_on_the_crossbar():
    flows = [Flow.parse("1:0,2"), Flow.parse("2:1"), Flow.parse("3:3")]
    assert not routable(flows, 4, 2)
    assert routable(flows, 4, arch="xbar")
    _check(flows, 4)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    P=st.integers(2, 32),
    dtype=st.sampled_from(["int8", "bf16", "fp32"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_flow_sets_route_and_match_golden(P, dtype, seed):
    rng = np.random.default_rng(seed)
    sw = FunctionalSwitch(P, 3, element_type(dtype), arch="xbar")
    _check(random_flow_set(rng, P), P, sw, rng)


def test_config_json_round_trip():
    routing = route([Flow(range(5), [0, 1]), Flow([5], range(2, 7))], 7, arch="xbar")
    data = json.loads(routing.config.to_json())
    assert data["arch"] == "xbar" and data["m"] is None
    assert Configuration.from_json(json.dumps(data)).codes == routing.config.codes
