"""Functional model against the golden model: bit-exact for every element type."""

import contextlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fredfab.model.collectives import (
    AllGather,
    AllReduce,
    AllToAll,
    Gather,
    Multicast,
    Reduce,
    ReduceScatter,
    Unicast,
)
from fredfab.model.dtypes import ELEMENT_TYPES, element_type, random_data, to_bits
from fredfab.model.golden import check_within_bound, reduce_tree, tree_depth
from fredfab.model.switch.flow import Flow
from fredfab.model.switch.flowgen import all_flow_sets, random_flow_set
from fredfab.model.switch.network import NetworkError, propagate
from fredfab.model.switch.router import RouteConflict
from fredfab.model.switch.switch_model import FunctionalSwitch

DTYPES = sorted(ELEMENT_TYPES)


def _same_bits(a, b, et):
    return np.array_equal(to_bits(np.asarray(a), et), to_bits(np.asarray(b), et))


def _check_flow_set(sw, flows, rng, length=24):
    routing = sw.route(flows)
    data = {p: random_data(rng, sw.et, (length,), edge_cases=True) for f in flows for p in f.ips}
    outs = sw.forward(routing, data)
    receivers = {p for f in flows for p in f.ops}
    assert all(outs[p] is None for p in range(sw.ports) if p not in receivers)
    for f, tree in zip(routing.flows, routing.trees, strict=True):
        golden = reduce_tree(tree, data, sw.et)
        for p in f.ops:
            assert _same_bits(outs[p], golden, sw.et), (f, p)
        # Independent of the tree: the order-free reference and its error bound (exact for
        # integers), so a wrong tree that happens to match the network cannot pass.
        arrays = [data[p] for p in sorted(f.ips)]
        assert check_within_bound(golden, arrays, tree_depth(tree), sw.et).all()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    P=st.integers(2, 32),
    m=st.integers(2, 4),
    dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_flow_sets_match_golden(P, m, dtype, seed):
    rng = np.random.default_rng(seed)
    sw = FunctionalSwitch(P, m, element_type(dtype))
    with contextlib.suppress(RouteConflict):
        _check_flow_set(sw, random_flow_set(rng, P), rng)


@pytest.mark.parametrize("dtype", ["int8", "fp16", "bf16"])
@pytest.mark.parametrize("P", [2, 3])
def test_every_base_case_flow_set_matches_golden(P, dtype):
    rng = np.random.default_rng(P)
    sw = FunctionalSwitch(P, 2, element_type(dtype))
    for flows in all_flow_sets(P):
        _check_flow_set(sw, flows, rng, length=4)


def _collectives(P, rng):
    g = tuple(int(p) for p in rng.permutation(P)[: max(2, P - 1)])
    return [
        AllReduce(g),
        Reduce(g, g[-1]),
        Multicast(g[0], g),
        Unicast(g[0], g[1]),
        ReduceScatter(g),
        AllGather(g),
        Gather(g, g[0]),
        AllToAll(g),
    ]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("P,m", [(3, 2), (5, 3), (8, 3), (12, 3)])
def test_collectives_match_golden(P, m, dtype):
    rng = np.random.default_rng(P * 10 + m)
    et = element_type(dtype)
    sw = FunctionalSwitch(P, m, et)
    for coll in _collectives(P, rng):
        inputs = {
            p: random_data(rng, et, (coll.in_chunks, 8), edge_cases=True) for p in coll.senders()
        }
        got, want = sw.run_collective(coll, inputs)
        assert sorted(got) == sorted(want), coll.name
        for p in want:
            assert _same_bits(got[p], want[p], et), (coll.name, p)


def test_float_result_depends_on_the_routed_order():
    """The network's fp16 sum equals the golden sum in its own order, and a different order
    gives different bits for this data: the check really follows the tree."""
    et = element_type("fp16")
    sw = FunctionalSwitch(4, 2, et)
    routing = sw.route([Flow(range(4), [0])])
    data = {p: np.array([v], np.float16) for p, v in enumerate([2048.0, 1.0, 1.0, 1.0])}
    out = sw.forward(routing, data)[0]
    assert routing.trees[0] == ((0, 1), (2, 3))
    assert _same_bits(out, reduce_tree(((0, 1), (2, 3)), data, et), et)
    assert not _same_bits(out, reduce_tree((((0, 1), 2), 3), data, et), et)


def test_adding_a_missing_input_is_an_error():
    from fredfab.model.switch.topology import Topology

    topo = Topology.build(2, 2)
    with pytest.raises(NetworkError, match="adds its inputs"):
        propagate(topo, ((3, 0),), {0: 1}, lambda a, b: a + b)
