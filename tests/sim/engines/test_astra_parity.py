"""ASTRA-sim parity: its algorithms and analytical backends against the closed forms of its
code (astra-sim/system/astraccl/native_collectives/collective_algorithm/*.cc,
astra-network-analytical congestion_unaware/ and congestion_aware/), one chunk, as its
sample system files run them (preferred-dataset-splits 1)."""

import pytest

from fredfab.model.system import CollectiveRequest
from fredfab.model.system.dims_algorithms import per_dimension, tree_parents
from fredfab.model.system.registry import candidates
from fredfab.model.system.topologies import Dim, dims_fabric
from fredfab.sim.engines.system import simulate

GiB = 2**30
D = 64 * 2**20
B = 50 * GiB  # ASTRA-sim's GB/s are 2^30 bytes
LAT = 500e-9


def fabric(kind, k, lat=LAT):
    return dims_fabric([Dim(kind, k, B, lat)])


def time(fab, op, algorithm, engine, size=D, chunks=1):
    req = CollectiveRequest(op, range(fab.num_npus), size)
    return simulate(fab, [req], algorithm=algorithm, chunks=chunks, engine=engine).time


@pytest.mark.parametrize("engine", ["congestion-unaware", "congestion-aware", "flow"])
@pytest.mark.parametrize("kind", ["Ring", "FullyConnected"])
def test_ring_all_reduce_goes_one_way_round(engine, kind):
    # Ring.cc: 2(k-1) messages of D/k, each one hop to the next member (clockwise).
    k = 8
    got = time(fabric(kind, k), "all-reduce", "dims-ring", engine)
    assert got == pytest.approx(2 * (k - 1) * (D / k / B + LAT), rel=1e-9)
    # The two-way ring sends half each way: half the serialisation, the same latencies.
    two = time(fabric(kind, k), "all-reduce", "dims-ring-2way", engine)
    assert two == pytest.approx(2 * (k - 1) * (D / k / 2 / B + LAT), rel=1e-9)


def test_without_latency_the_two_way_ring_is_half_of_astra_sims():
    f = fabric("Ring", 8, 0.0)
    for engine in ("congestion-unaware", "congestion-aware", "flow"):
        one = time(f, "all-reduce", "dims-ring", engine)
        assert time(f, "all-reduce", "dims-ring-2way", engine) / one == pytest.approx(0.5)
        # And the plain one-way ring over the fabric's routes is ASTRA-sim's.
        assert time(f, "all-reduce", "ring", engine) == pytest.approx(one, rel=1e-9)


@pytest.mark.parametrize(("kind", "hops"), [("Switch", [2, 2, 2]), ("Ring", [1, 2, 4])])
def test_halving_doubling(kind, hops):
    # HalvingDoubling.cc: step b exchanges D / 2^(b+1) with the member 2^b away (index XOR
    # 2^b); the All-Gather runs the steps back. Congestion-unaware: hops x latency + size/bw.
    # On a ring, distance 4 of 8 is 4 hops either way (Ring::compute_hops_count).
    t = time(fabric(kind, 8), "all-reduce", "dims-halving-doubling", "congestion-unaware")
    rs = sum(D / 2 ** (b + 1) / B + h * LAT for b, h in enumerate(hops))
    assert t == pytest.approx(2 * rs, rel=1e-9)


def test_double_binary_tree():
    # BinaryTree.cc: in-order numbering under a root of one child; for 8 members the
    # RootMax tree is 0,2 -> 1; 4,6 -> 5; 1,5 -> 3; 3 -> 7, RootMin its mirror under 0.
    assert tree_parents(8, True).tolist() == [1, 3, 1, 7, 5, 3, 5, -1]
    assert tree_parents(8, False).tolist() == [-1, 2, 4, 2, 0, 6, 4, 6]
    # DoubleBinaryTreeAllReduce.cc: the whole chunk goes up 3 hops and down 3, store and
    # forward; on a switch each hop is 2 links.
    t = time(fabric("Switch", 8), "all-reduce", "dims-double-binary-tree", "congestion-unaware")
    assert t == pytest.approx(6 * (D / B + 2 * LAT), rel=1e-9)
    # Two chunks run on the two trees at once: no faster without congestion, but under
    # link sharing they share the switch's links.
    f = fabric("Switch", 8, 0.0)
    two = time(f, "all-reduce", "dims-double-binary-tree", "flow", chunks=2)
    assert two >= 6 * D / 2 / B


def test_ring_all_to_all():
    # Ring.cc with All_to_All (Normal injection): k(k-1)/2 ring steps of D/k, one message per
    # link at a time, so every link carries (k-1)/2 D; measured equal to ASTRA-sim's run.
    k = 8
    f = fabric("Ring", k, 0.0)
    flow = time(f, "all-to-all", "dims-ring-all-to-all", "flow")
    assert flow == pytest.approx((k - 1) / 2 * D / B, rel=1e-6)
    for engine in ("congestion-unaware", "congestion-aware"):
        t = time(fabric("Ring", k), "all-to-all", "dims-ring-all-to-all", engine)
        assert t == pytest.approx(k * (k - 1) // 2 * (D / k / B + LAT), rel=1e-9)


def test_congestion_aware_queues_where_unaware_does_not():
    # A 2-NPU ring, two chunks: four messages of s = D/4 / B on each link (each chunk's
    # Reduce-Scatter then All-Gather; chunk 1 follows chunk 0 once it has been sent).
    # Congestion-unaware sends chunk 0's All-Gather and chunk 1's Reduce-Scatter at once:
    # 3 s. Congestion-aware serves one message at a time (Link.cpp, FIFO): 4 s.
    f = fabric("Ring", 2, 0.0)
    s = D / 4 / B
    unaware = time(f, "all-reduce", "dims-ring", "congestion-unaware", chunks=2)
    aware = time(f, "all-reduce", "dims-ring", "congestion-aware", chunks=2)
    assert (unaware, aware) == pytest.approx((3 * s, 4 * s), rel=1e-9)


def test_system_file_algorithms_run_only_when_named():
    f = dims_fabric([Dim("Ring", 4, B, LAT), Dim("Switch", 4, B, LAT)])
    name = per_dimension(["ring", "halving-doubling"])
    req = CollectiveRequest("all-reduce", range(16), D)
    assert name not in {a.name for a in candidates(f, req)}
    res = simulate(f, [req], algorithm=name, chunks=1, engine="congestion-unaware")
    # Ring RS on dimension 0 (3 x D/4), halving-doubling All-Reduce of D/4 on dimension 1
    # (2 steps each way of D/8 then D/16, 2 hops), ring All-Gather back (3 x D/4).
    ring = 3 * (D / 4 / B + LAT)
    hd = 2 * sum(D / 4 / 2 ** (b + 1) / B + 2 * LAT for b in range(2))
    assert res.time == pytest.approx(2 * ring + hd, rel=1e-9)


def test_one_active_chunk_per_dimension():
    # active-chunks-per-dimension 1 (a system file): a ring All-Reduce of 4 chunks on Ring 8
    # runs the chunks one after another, 4 x 14 messages of D/32, as ASTRA-sim's run did.
    f = fabric("Ring", 8)
    serial = per_dimension(["ring"], one_chunk_at_a_time=True)
    for engine in ("congestion-unaware", "congestion-aware", "flow"):
        t = time(f, "all-reduce", serial, engine, chunks=4)
        assert t == pytest.approx(4 * 14 * (D / 32 / B + LAT), rel=1e-9)
    # Pipelined chunks (ours) overlap where nothing shares links.
    assert time(f, "all-reduce", "dims-ring", "congestion-unaware", chunks=4) < t / 3
