"""Weight-streaming I/O patterns (io-broadcast, io-reduce) against the closed forms of the
links they cross, and against the packet-level model."""

import numpy as np
import pytest

from fredfab.model.system import CollectiveRequest, fred_tree, load_fabric, mesh
from fredfab.model.system.algorithms import io_relays
from fredfab.model.system.schedule import tree_flow
from fredfab.sim.engines.system import simulate

#: Large enough that latencies (~100 ns against milliseconds) vanish below the tolerance.
D = 15.7e9
#: Simulated aggregate bandwidth must lie in [1 - TOL, 1] x the closed form: the closed form
#: is a cut bound (no algorithm exceeds it), the tolerance covers latency only.
TOL = 1e-3
P = 128e9  # I/O controller link (paper §6.1)


def mesh_io_bound(w: int, h: int, link: float, io: float) -> float:
    """Aggregate I/O rate of a W x H mesh with one controller per outer side (K = 2(W+H)).

    Paper §3.2: an N x N mesh with 4N channels of P B/s needs (2N-1)P
    links, else I/O runs at link / (2N-1) per channel. With K = 4N, N = (W+H)/2, so
    2N-1 = W+H-1. The cut behind it: a corner NPU has two mesh in-links and two channels of
    its own, and must receive the other K-2 channels' shards over those two links.
    """
    k = 2 * (w + h)
    return k * min(io, link / (w + h - 1))


@pytest.mark.parametrize(("w", "h"), [(5, 4), (4, 4), (6, 3), (4, 2), (3, 3), (8, 8)])
@pytest.mark.parametrize("op", ["io-broadcast", "io-reduce"])
def test_mesh_io_runs_at_the_throttled_rate(w, h, op):
    f = mesh(w, h)  # 750 GB/s links, 128 GB/s controllers, 2(W+H) of them
    r = simulate(f, [CollectiveRequest(op, range(w * h), D)])
    assert r.requests[0].algorithm == "io-trees"
    bound = mesh_io_bound(w, h, 750e9, P)
    agg = D / r.time
    assert (1 - TOL) * bound <= agg <= bound


def test_paper_mesh_figure():
    # 5 x 4: 2N-1 = 8, 750/8 = 93.75 GB/s per channel, 1.6875 TB/s over 18 channels.
    assert mesh_io_bound(5, 4, 750e9, P) == pytest.approx(18 * 93.75e9)
    r = simulate(load_fabric("mesh"), [CollectiveRequest("io-broadcast", range(20), D)])
    assert D / r.time == pytest.approx(1.6875e12, rel=TOL)


def test_mesh_trees_split_x_y_as_derived():
    # Each corner NPU is entered by W (its row) + H (its column) channels whatever the tree,
    # and by the W+H-2 others through its column link when routed X-Y, its row link when
    # Y-X: a = (W-1)/(W+H-2) balances the two at W+H-1 shards each.
    f = load_fabric("mesh")
    relays = io_relays(f, range(20))
    load = np.zeros(len(f.links))
    for links, _preds, share in relays:
        np.add.at(load, list(links), share)
    corner = f.grid[0, 0]
    into = [load[f.link_id[v, corner]] for v in f.neighbours[corner] if v < 20]
    assert into == pytest.approx([8.0, 8.0])
    assert load[: len(f.links)].max() == pytest.approx(8.0)
    # Every member gets every shard: each relay reaches all 20 NPUs.
    for links, preds, _share in relays:
        reached = {int(f.link_dst[lk]) for lk in links}
        assert set(range(20)) <= reached
        assert all(all(q < i for q in ps) for i, ps in enumerate(preds))


def fred_io_bound(f) -> float:
    """Aggregate I/O rate of a two-level FRED tree, equal shards per controller: each
    controller's line rate; the L2 -> L1 link of switch j carries the shards of the K - k_j
    controllers elsewhere (multicast in-switch, or one relay chain entering each L1 once);
    its L1 -> L2 link k_j (in-switch) or K - k_(j+1) (chains leaving it), both at most
    K - min k; an NPU's link receives all K."""
    K = len(f.ios)
    per_l1 = [sum(1 for c in f.children[s] if f.nodes[c].kind == "io") for s in f.switches[:-1]]
    up = f.bandwidth[f.link_id[f.switches[0], f.root]]
    npu = f.bandwidth[f.link_id[f.parent[0], 0]]
    return K * min(P, up / (K - min(per_l1)), npu / K)


@pytest.mark.parametrize("name", ["fred-a", "fred-b", "fred-c", "fred-d"])
@pytest.mark.parametrize("op", ["io-broadcast", "io-reduce"])
def test_fred_io_runs_at_what_its_links_allow(name, op):
    f = load_fabric(name)
    r = simulate(f, [CollectiveRequest(op, range(20), D)])
    bound = fred_io_bound(f)
    # 1.5 TB/s L1-L2 (A, B): 15 foreign shards into an L1 with 3 controllers, 100 GB/s
    # each; 12 TB/s (C, D): the controllers' 128 GB/s line rate.
    assert bound == pytest.approx(1.8e12 if name in ("fred-a", "fred-b") else 2.304e12)
    assert (1 - TOL) * bound <= D / r.time <= bound


def test_in_switch_multicast_branches_at_the_source_l1():
    # A controller's multicast reaches the NPUs of its own L1 switch directly, not back down
    # from L2: the L2 -> L1 link of its own switch carries nothing of it.
    f = load_fabric("fred-b")
    io = f.ios[0]
    l1 = f.l1_of(io)
    tf = tree_flow(f, [io], range(20))
    assert f.link_id[f.root, l1] not in tf.links
    red = tree_flow(f, range(20), [io])
    assert f.link_id[l1, f.root] not in red.links
    assert f.link_id[f.root, l1] in red.links


SMALL_IO = [
    mesh(3, 2, link_bandwidth=100e9, io_bandwidth=40e9),
    mesh(4, 3, link_bandwidth=100e9, io_bandwidth=40e9),
    fred_tree([2, 2], [100e9, 50e9], in_switch=False, io_controllers=3, io_bandwidth=40e9),
    fred_tree([2, 2], [100e9, 50e9], in_switch=True, io_controllers=3, io_bandwidth=40e9),
]


@pytest.mark.parametrize("fab", SMALL_IO, ids=lambda f: f.name)
@pytest.mark.parametrize("op", ["io-broadcast", "io-reduce"])
def test_io_patterns_packet_model_agrees(fab, op):
    n = fab.num_npus
    reqs = [CollectiveRequest(op, range(n), 4e6)]
    flow = simulate(fab, reqs)
    # The packet model also pays the pipeline fill, (relay depth) x (packet time): relays
    # cross up to ~12 links, so 1,600 packets per transfer keep it under 1%.
    pkt = simulate(fab, reqs, engine="packet", packet_bytes=4e6 / 1600)
    assert pkt.time == pytest.approx(flow.time, rel=0.02)


@pytest.mark.parametrize("op", ["broadcast", "reduce"])
def test_in_switch_rooted_ops_packet_model_agrees(op):
    f = fred_tree([2, 2], [100e9, 50e9], in_switch=True)
    reqs = [CollectiveRequest(op, range(4), 4e6, root=1)]
    flow = simulate(f, reqs)
    pkt = simulate(f, reqs, engine="packet", packet_bytes=4e6 / 400)
    assert pkt.time == pytest.approx(flow.time, rel=0.02)
