"""mesh-ring-routes: a ring over an irregular mesh group with each hop on its X-Y or Y-X route,
so that concurrent groups' rings stay on their own links."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fredfab.model.system import CollectiveRequest, Schedule, build, load_fabric, mesh
from fredfab.model.system.algorithms import plan_request
from fredfab.model.system.mesh_ring_routes import ring_routes, yx_route
from fredfab.model.system.placement import Strategy
from fredfab.model.system.registry import candidates, lookup
from fredfab.sim.engines.netsim import run_schedule
from fredfab.sim.engines.system import simulate

D = 64 * 2**20


def nodes(f, route):
    """The NPUs a route leaves, then its destination."""
    return [int(f.link_src[lk]) for lk in route] + [int(f.link_dst[route[-1]])]


def test_yx_route_is_minimal_and_column_first():
    f = load_fabric("mesh")
    # 15 at (4, 3), 12 at (2, 2) under serpentine numbering.
    assert nodes(f, yx_route(f, 15, 12)) == [15, 14, 13, 12]
    assert nodes(f, f.route(15, 12)) == [15, 16, 17, 12]
    assert len(yx_route(f, 0, 15)) == len(f.route(0, 15)) == 4 + 3  # (0, 0) to (4, 3)


def test_the_l_group_closes_its_ring_over_its_own_links():
    f = load_fabric("mesh")
    routes = ring_routes(f, (12, 13, 14, 15))
    assert [nodes(f, r) for r in routes] == [[12, 13], [13, 14], [14, 15], [15, 14, 13, 12]]
    members = {12, 13, 14, 15}
    assert all(int(f.link_src[lk]) in members for r in routes for lk in r)


def test_candidates():
    f = load_fabric("mesh")

    def names(group, fab=f):
        return [a.name for a in candidates(fab, CollectiveRequest("all-reduce", group, D))]

    assert "mesh-ring-routes" in names((12, 13, 14, 15))
    assert "mesh-ring-routes" in names((0, 4, 8, 12, 16))
    # Rectangles run their own algorithms, whose hops follow rows and columns; a line has
    # no hop that bends, so X-Y and Y-X coincide.
    assert "mesh-ring-routes" not in names(range(20))
    assert "mesh-ring-routes" not in names((16, 17, 18, 19))
    assert "mesh-ring-routes" not in names((12, 13, 14, 15), fab=load_fabric("fred-a"))


def test_mp4_groups_run_at_their_alone_speed_together():
    # MP4-DP5-PP1 on the 5 x 4 mesh: the closing hop 15 -> 12 of the L group 12-15 used to
    # follow row 3 over ring 16-19's links, and both groups took twice their alone time.
    f = load_fabric("mesh")
    reqs = Strategy.parse("MP4-DP5-PP1").phase_requests(D, D, D)["MP"]
    together = simulate(f, reqs)
    for r in together.requests:
        alone = simulate(f, [r.request]).time
        assert r.time <= 1.02 * alone
    assert any(r.algorithm == "mesh-ring-routes" for r in together.requests)
    # With X-Y routes only (the plain ring), the L group and the row-3 line share links.
    plain = simulate(f, reqs, algorithm="ring")
    assert plain.time > 1.9 * together.time


@settings(max_examples=15, deadline=None)
@given(
    shape=st.sampled_from([(5, 4), (4, 4), (6, 3)]),
    members=st.lists(st.integers(0, 15), min_size=3, max_size=10, unique=True),
    op=st.sampled_from(["all-reduce", "reduce-scatter", "all-gather"]),
    size=st.floats(1e3, 1e9),
    chunks=st.integers(1, 3),
)
def test_never_beats_its_bound_and_never_loads_more_than_xy(shape, members, op, size, chunks):
    f = mesh(*shape)
    req = CollectiveRequest(op, members, size)
    alg = lookup("mesh-ring-routes")
    if not alg.applies(f, req):
        return
    bound = alg.bound(f, req)
    s = Schedule(f)
    build(s, plan_request(f, req, algorithm="mesh-ring-routes"), chunks)
    assert run_schedule(s).makespan >= bound * (1 - 1e-9)
    # The X-Y choice for every hop is one of those searched: never a higher bound.
    assert bound <= lookup("ring").bound(f, req) * (1 + 1e-12)


def test_large_ring_reaches_its_bound():
    f = load_fabric("mesh")
    req = CollectiveRequest("all-reduce", (12, 13, 14, 15), 4 * 2**30)
    r = simulate(f, [req], algorithm="mesh-ring-routes").requests[0]
    assert r.bound == pytest.approx(2 * 3 / 4 * req.size_bytes / 750e9, rel=1e-12)
    assert r.bound <= r.time <= 1.02 * r.bound


def test_the_packet_model_agrees():
    f = load_fabric("mesh")
    req = CollectiveRequest("all-reduce", (12, 13, 14, 15), 2**21)
    flow, packet = (simulate(f, [req], engine=e) for e in ("flow", "packet"))
    assert flow.requests[0].algorithm == packet.requests[0].algorithm == "mesh-ring-routes"
    assert packet.time == pytest.approx(flow.time, rel=0.02)
