import pytest

from fredfab.model.system import CollectiveRequest, Schedule, build, mesh, plan_request
from fredfab.model.system.dims import FULLY_CONNECTED, RING, SWITCH, Dim
from fredfab.model.system.dims_algorithms import MAX_DIRECT_NPUS, layout, per_dimension
from fredfab.model.system.registry import candidates, lookup
from fredfab.model.system.topologies import dims_fabric, fully_connected, ring, single_switch, torus
from fredfab.model.system.units import GB, NS
from fredfab.sim.engines.netsim import run_schedule

SIZE = 2**26
MIXED = [
    Dim(RING, 2, 200 * GB, 0.0),
    Dim(FULLY_CONNECTED, 4, 100 * GB, 0.0),
    Dim(SWITCH, 4, 50 * GB, 0.0),
]


def _time(fabric, req, algorithm, chunks=2) -> float:
    sched = Schedule(fabric)
    build(sched, plan_request(fabric, req, algorithm=algorithm), chunks)
    return run_schedule(sched).makespan


# (fabric, group, op, algorithm): one dimension (or one group of a bigger topology), where
# nothing pipelines across dimensions and the simulator should reach the bound.
ONE_DIMENSION = [
    (ring(8, 50 * GB, 0.0), None, "dims-ring"),
    (ring(2, 50 * GB, 0.0), None, "dims-ring"),
    (fully_connected(6, 50 * GB, 0.0), None, "dims-direct"),
    (fully_connected(6, 50 * GB, 0.0), None, "dims-ring"),
    (single_switch(8, 50 * GB, 0.0), None, "dims-halving-doubling"),
    (single_switch(6, 50 * GB, 0.0), None, "dims-direct"),
    (single_switch(6, 50 * GB, 0.0), None, "dims-ring"),
    (torus([4, 4], 50 * GB, 0.0), [1, 5, 9, 13], "dims-ring"),  # one ring of dimension 1
]


@pytest.mark.parametrize("op", ["all-reduce", "reduce-scatter", "all-gather"])
@pytest.mark.parametrize("fabric, group, algorithm", ONE_DIMENSION)
def test_one_dimension_reaches_its_bound(fabric, group, algorithm, op):
    req = CollectiveRequest(op, group or range(fabric.num_npus), SIZE)
    bound = lookup(algorithm).bound(fabric, req)
    t = _time(fabric, req, algorithm)
    assert bound * (1 - 1e-9) <= t <= bound * 1.02


def test_the_bound_is_the_busiest_link():
    # Ring of 8, All-Reduce: one way round (ASTRA-sim's), each link carries 2 * 7/8 * D;
    # half each way, 2 * 7/8 * D / 2.
    f = ring(8, 50 * GB, 0.0)
    req = CollectiveRequest("all-reduce", range(8), SIZE)
    assert lookup("dims-ring").bound(f, req) == pytest.approx(2 * 7 / 8 * SIZE / (50 * GB))
    assert lookup("dims-ring-2way").bound(f, req) == pytest.approx(7 / 8 * SIZE / (50 * GB))
    # Direct on a full graph of 6: D/6 per link per phase.
    g = fully_connected(6, 50 * GB, 0.0)
    assert lookup("dims-direct").bound(g, req.__class__("reduce-scatter", range(6), SIZE)) == (
        pytest.approx(SIZE / 6 / (50 * GB))
    )


@pytest.mark.parametrize(
    "fabric, algorithm",
    [
        (torus([4, 4], 50 * GB, 0.0), "dims-ring-2way"),
        (torus([2, 4, 2], [100 * GB, 50 * GB, 25 * GB], 0.0), "dims-ring-2way"),
        (dims_fabric(MIXED), "dims-native"),
        (dims_fabric(MIXED), "dims-ring-2way"),
        (dims_fabric([Dim(SWITCH, 4, 50 * GB, 0.0), Dim(SWITCH, 2, 20 * GB, 0.0)]), "dims-direct"),
        (
            dims_fabric([Dim(SWITCH, 4, 50 * GB, 0.0), Dim(SWITCH, 2, 20 * GB, 0.0)]),
            "dims-halving-doubling",
        ),
    ],
)
@pytest.mark.parametrize("op", ["all-reduce", "reduce-scatter", "all-gather"])
def test_several_dimensions_never_beat_the_bound_and_approach_it_pipelined(fabric, algorithm, op):
    req = CollectiveRequest(op, range(fabric.num_npus), SIZE)
    bound = lookup(algorithm).bound(fabric, req)
    # Phases on different dimensions use different links: one chunk runs them one after the
    # other, more chunks overlap them down to the busiest dimension.
    t1, t2, t8 = (_time(fabric, req, algorithm, chunks) for chunks in (1, 2, 8))
    assert min(t1, t2, t8) >= bound * (1 - 1e-9)
    assert t1 > bound * 1.1  # one chunk: the sum of the dimensions' phases
    if op == "all-reduce":
        # Each dimension's All-Gather fills the time its Reduce-Scatter leaves idle.
        assert t8 <= bound * 1.02
    else:
        # One pass over the dimensions: filling and draining the pipeline stays, 1/C of it.
        for chunks, t in ((2, t2), (8, t8)):
            assert t <= bound + 2 * (t1 - bound) / chunks * (1 + 1e-9)


@pytest.mark.parametrize(
    "fabric",
    [torus([4, 4], 50 * GB, 0.0), torus([2, 4, 2], [100 * GB, 50 * GB, 25 * GB], 0.0)],
)
@pytest.mark.parametrize("op", ["all-reduce", "reduce-scatter", "all-gather"])
def test_one_way_rings_never_beat_their_link_by_link_bound(fabric, op):
    # ASTRA-sim's one-way ring: an All-Reduce's All-Gathers run anticlockwise on all but
    # the last dimension, so their links are not those of the Reduce-Scatters.
    req = CollectiveRequest(op, range(fabric.num_npus), SIZE)
    bound = lookup("dims-ring").bound(fabric, req)
    two_way = lookup("dims-ring-2way").bound(fabric, req)
    assert two_way * (1 - 1e-9) <= bound <= 2 * two_way * (1 + 1e-9)
    for chunks in (1, 2, 8):
        assert _time(fabric, req, "dims-ring", chunks) >= bound * (1 - 1e-9)


def test_link_latency_only_adds_time():
    f = torus([4, 4], 50 * GB, 500 * NS)
    req = CollectiveRequest("all-reduce", range(16), 2**20)
    bound = lookup("dims-ring").bound(f, req)
    # Latency is not in the bandwidth bound: 2 * (3 + 3) ring steps of 500 ns at least.
    assert _time(f, req, "dims-ring", chunks=1) >= bound + 12 * 500 * NS


def test_direct_all_to_all_on_one_dimension_reaches_its_bound():
    for f, bw_links in ((fully_connected(8, 50 * GB, 0.0), 7), (single_switch(8, 50 * GB, 0.0), 1)):
        req = CollectiveRequest("all-to-all", range(8), SIZE)
        bound = lookup("dims-direct").bound(f, req)
        assert bound == pytest.approx(7 / 8 * SIZE / bw_links / (50 * GB))
        assert bound * (1 - 1e-9) <= _time(f, req, "dims-direct") <= bound * 1.02


def test_astra_sims_ring_and_the_plain_ring_go_one_way_round():
    f = ring(8, 50 * GB, 0.0)
    req = CollectiveRequest("all-reduce", range(8), SIZE)
    one_way = 2 * 7 / 8 * SIZE / (50 * GB)
    assert _time(f, req, "ring") == pytest.approx(one_way, rel=1e-6)
    assert _time(f, req, "dims-ring") == pytest.approx(one_way, rel=1e-6)
    assert _time(f, req, "dims-ring-2way") == pytest.approx(one_way / 2, rel=1e-6)


def _names(fabric, op, group):
    """The ASTRA-sim algorithms among the candidates (others may be added elsewhere)."""
    found = {a.name for a in candidates(fabric, CollectiveRequest(op, group, SIZE))}
    if op != "all-to-all":
        assert "ring" in found  # the plain ring runs on every fabric
    return {n for n in found if n.startswith("dims-")}


def test_which_algorithms_apply():
    t = torus([4, 4])
    rings = {"dims-ring", "dims-ring-2way"}
    # Halving-doubling on Ring dimensions of 2^m NPUs too (partners 2^b hops away).
    assert _names(t, "all-reduce", range(16)) == rings | {"dims-halving-doubling"}
    # A group that is not a sub-grid (three NPUs of a ring of four) gets the plain ring.
    assert _names(t, "all-reduce", [0, 1, 2]) == set()
    # One row: one dimension, so the double binary tree too.
    assert _names(t, "all-reduce", [0, 1, 2, 3]) == rings | {
        "dims-halving-doubling",
        "dims-double-binary-tree",
    }
    assert _names(t, "reduce-scatter", [0, 1, 2, 3]) == rings | {"dims-halving-doubling"}
    assert _names(single_switch(6), "all-reduce", range(6)) == {"dims-direct"} | rings
    assert "dims-halving-doubling" in _names(single_switch(8), "all-gather", range(8))
    mixed = dims_fabric(MIXED)
    assert (
        _names(mixed, "reduce-scatter", range(32))
        == {
            "dims-native",
            "dims-halving-doubling",
        }
        | rings
    )
    assert _names(ring(6), "all-to-all", range(6)) == {"dims-ring-all-to-all"}
    # Direct All-to-All only within one FullyConnected or Switch dimension.
    assert "dims-direct" in _names(mixed, "all-to-all", [0, 2, 4, 6])
    assert "dims-direct" not in _names(mixed, "all-to-all", range(32))
    # Not on other fabrics.
    assert _names(mesh(4, 4), "all-reduce", range(16)) == set()


def test_direct_exchange_stops_at_its_size_limit():
    # A direct exchange's schedule grows like k^3 (a Switch of 512 NPUs filled 20 GB), so
    # neither dims-direct nor dims-native (direct on FullyConnected) runs on a bigger one.
    assert MAX_DIRECT_NPUS == 256
    assert "dims-direct" in _names(single_switch(256), "all-reduce", range(256))
    assert "dims-direct" not in _names(single_switch(512), "all-reduce", range(512))
    assert "dims-direct" not in _names(fully_connected(512), "all-to-all", range(512))
    big_fc = dims_fabric([Dim(RING, 2, 200 * GB, 0.0), Dim(FULLY_CONNECTED, 257, 100 * GB, 0.0)])
    assert "dims-native" not in _names(big_fc, "all-reduce", range(514))
    # A big Switch of 2^m NPUs still runs natively, by halving-doubling.
    big_sw = dims_fabric([Dim(RING, 2, 200 * GB, 0.0), Dim(SWITCH, 512, 100 * GB, 0.0)])
    assert "dims-native" in _names(big_sw, "all-reduce", range(1024))
    # Nor does an ASTRA-sim system file's "direct" implementation.
    direct = lookup(per_dimension(["direct"]))
    for k, runs in ((256, True), (512, False)):
        req = CollectiveRequest("all-reduce", range(k), SIZE)
        assert direct.applies(single_switch(k), req) is runs


def test_layout_orders_members_by_coordinates():
    t = torus([4, 4])
    M, spanned = layout(t, [13, 1, 5, 9])
    assert spanned == (1,) and M.tolist() == [1, 5, 9, 13]
    M, spanned = layout(t, range(16))
    assert spanned == (0, 1) and M[1, 2] == 1 + 4 * 2
