"""Each algorithm's lower bound against its closed form on the shipped fabrics."""

import pytest

from fredfab.model.system import CollectiveRequest, load_fabric, mesh
from fredfab.model.system.bounds import LinkLoad, split_seconds
from fredfab.model.system.registry import algorithms, lookup

D = 2**30
REL = 1e-12
B1 = 3e12  # NPU - L1 switch, per direction (paper §6.1)


def bound(name, fabric, op, group, **kw):
    return lookup(name).bound(load_fabric(fabric), CollectiveRequest(op, group, D, **kw))


def test_every_registered_algorithm_states_a_bound():
    assert [a.name for a in algorithms() if a.bound is None] == []


@pytest.mark.parametrize("fabric", ["fred-a", "fred-c"])
def test_ring_bound_is_the_ring_factor_over_the_slowest_hop(fabric):
    # Group order 0..19 crosses each L1 uplink once per direction: 2(N-1)/N D over it too.
    up = {"fred-a": 1.5e12, "fred-c": 12e12}[fabric]
    assert bound("ring", fabric, "all-reduce", range(20)) == pytest.approx(
        1.9 * D / min(B1, up), rel=REL
    )
    assert bound("ring", fabric, "reduce-scatter", (0, 1)) == pytest.approx(D / 2 / B1, rel=REL)


@pytest.mark.parametrize(
    ("fabric", "expect"), [("fred-a", 1.6 * D / 1.5e12), ("fred-c", 1.9 * D / B1)]
)
def test_hierarchical_bound_is_its_busiest_link(fabric, expect):
    # NPU links: 2(k-1)/k D + 2(G-1)/G D/k = 2(N-1)/N D; L1 uplinks: k x 2(G-1)/G D/k.
    for name in ("hierarchical-ring", "hierarchical-ring-pipelined"):
        assert bound(name, fabric, "all-reduce", range(20)) == pytest.approx(expect, rel=REL)


def test_in_switch_bounds():
    assert bound("in-switch-all-reduce", "fred-d", "all-reduce", range(20)) == pytest.approx(
        D / B1, rel=REL
    )
    # FRED-B: the L1 uplink (1.5 TB/s) carries D each way.
    assert bound("in-switch-all-reduce", "fred-b", "all-reduce", range(20)) == pytest.approx(
        D / 1.5e12, rel=REL
    )
    # N serial steps of D/N into (out of) one NPU, plus N-1 reconfigurations.
    f = load_fabric("fred-d")
    steps = 4 * (D / 4) / B1 + 3 * f.timing.reconfiguration_time
    assert bound("in-switch-reduce-scatter", "fred-d", "reduce-scatter", range(4)) == (
        pytest.approx(steps, rel=REL)
    )


def test_endpoint_rooted_and_direct_bounds():
    n = 5
    # Reduce: each hop (N-1)/N D, and the root's downlink N-1 shards of D/N on top.
    assert bound("ring-reduce-scatter+gather", "fred-c", "reduce", range(n)) == pytest.approx(
        (n - 1) / n * D / B1 + (n - 1) * D / n / B1, rel=REL
    )
    assert bound("direct", "fred-c", "p2p", (0, 19)) == pytest.approx(D / B1, rel=REL)
    # All-to-All: every NPU sends (N-1)/N D over its own link.
    assert bound("direct-rounds", "fred-c", "all-to-all", range(4)) == pytest.approx(
        3 / 4 * D / B1, rel=REL
    )


def test_mesh_2d_bound_is_the_row_rings():
    # Rows and columns use different links; the row links carry 2(W-1)/W D, the most.
    f = mesh(5, 4, link_bandwidth=750e9, io_controllers=0)
    b = lookup("mesh-2d").bound(f, CollectiveRequest("all-reduce", range(20), D))
    assert b == pytest.approx(1.6 * D / 750e9, rel=REL)


def test_io_bounds_are_the_closed_forms():
    # FRED-D io-broadcast: 18 controllers at 128 GB/s, each link one shard of D/18.
    f = load_fabric("fred-d")
    for name in ("in-switch-io-broadcast", "io-relay"):
        b = lookup(name).bound(f, CollectiveRequest("io-broadcast", range(20), D))
        assert b == pytest.approx(D / 18 / 128e9, rel=REL)


def test_a_split_stream_is_bounded_by_its_best_split():
    f = mesh(3, 1, link_bandwidth=1.0, link_latency=0, io_controllers=0)
    a, b = LinkLoad(f), LinkLoad(f)
    a.path(0, 2, 6.0)  # one way: both rightward links
    b.path(2, 0, 6.0)  # the other: both leftward links
    assert split_seconds(a, b) == pytest.approx(3.0)
    c = LinkLoad(f)
    c.path(0, 2, 6.0)
    assert split_seconds(a, c) == pytest.approx(6.0)


def test_pipeline_depth_is_capped_by_transfers():
    from fredfab.model.system.algorithms import PIPELINE_CHUNKS, pipeline_chunks

    # 20 NPUs (5 L1 x 4): 280 transfers per chunk, the full depth.
    assert pipeline_chunks(20, 4, 5, 2) == 2 * PIPELINE_CHUNKS
    # 1,024 NPUs (32 x 32): ~127,000 per chunk, no deeper than asked.
    assert pipeline_chunks(1024, 32, 32, 2) == 2
    assert 2 < pipeline_chunks(256, 16, 16, 2) < 2 * PIPELINE_CHUNKS
