"""Mesh collectives at the two-link bound: Hamiltonian cycles, the dual 2D split, and the
simulator against each algorithm's bound (reached where it should be, never beaten)."""

import numpy as np
import pytest

from fredfab.model.system import CollectiveRequest, Schedule, build, load_fabric, mesh
from fredfab.model.system.algorithms import plan_request
from fredfab.model.system.generators import LINK_LATENCY
from fredfab.model.system.mesh_algorithms import dual_fraction, dual_loads, hamiltonian_cycle
from fredfab.model.system.registry import candidates, lookup
from fredfab.model.system.rings import rectangle
from fredfab.sim.engines.netsim import run_schedule
from fredfab.sim.engines.system import simulate

B = 750e9
D = 64 * 2**20
OPS = ("all-reduce", "reduce-scatter", "all-gather")


def run(f, req, algorithm, chunks=2):
    s = Schedule(f)
    build(s, plan_request(f, req, algorithm=algorithm), chunks)
    return run_schedule(s).makespan


def block(f, x0, y0, w, h):
    return tuple(f.grid[x, y] for y in range(y0, y0 + h) for x in range(x0, x0 + w))


@pytest.mark.parametrize(("w", "h"), [(2, 2), (5, 4), (4, 5), (3, 2), (2, 7), (6, 6), (3, 3)])
def test_hamiltonian_cycle(w, h):
    f = mesh(w, h)
    M = rectangle(f, f.npus)
    c = hamiltonian_cycle(M)
    if w % 2 and h % 2:
        assert c is None  # bipartite with one more node of one colour: no cycle
        return
    assert sorted(c.tolist()) == list(f.npus)
    assert all(len(f.route(a, b)) == 1 for a, b in zip(c, np.roll(c, -1), strict=True))


@pytest.mark.parametrize(("w", "h"), [(2, 2), (5, 4), (3, 3), (5, 3), (7, 2), (6, 5)])
def test_dual_fraction_loads_every_link_at_the_corner_bound(w, h):
    a = dual_fraction((h, w))
    n = w * h
    assert 0 < a < 1
    # Per ring pass a corner NPU sends (N-1)/N x D on two links: (N-1)/(2N) x D on each.
    corner = (n - 1) / (2 * n)
    assert dual_loads((h, w), a) == pytest.approx((corner, corner), rel=1e-12)
    # Either orientation alone leaves one direction overloaded.
    assert max(dual_loads((h, w), 1.0)) > corner * (1 + 1e-6)
    assert max(dual_loads((h, w), 0.0)) > corner * (1 + 1e-6)


def test_wafer_all_reduce_at_the_two_link_bound():
    f = load_fabric("mesh")
    req = CollectiveRequest("all-reduce", range(20), D)
    bound = 2 * 19 / 20 * D / (2 * B)  # a corner NPU's two links
    r = simulate(f, [req])
    assert r.requests[0].algorithm == "mesh-rings"
    assert lookup("mesh-rings").bound(f, req) == pytest.approx(bound, rel=1e-12)
    assert bound <= r.time <= 1.02 * bound
    # Twice as fast as the folded row and column rings, whatever the chunks.
    assert run(f, req, "mesh-2d", chunks=1) > 1.9 * r.time


# (fabric shape, group block (x0, y0, w, h) or None = all, algorithm, reaches its bound)
CASES = [
    ((5, 4), None, "mesh-rings", True),
    ((5, 4), (1, 1, 3, 2), "mesh-rings", True),  # a sub-rectangle
    ((5, 4), (0, 0, 2, 2), "mesh-2d-dual", True),
    ((3, 3), None, "mesh-2d-dual", True),  # odd x odd: no Hamiltonian cycle
    ((5, 5), (1, 1, 3, 3), "mesh-2d-dual", True),
    ((5, 3), None, "mesh-2d-dual", False),  # not square: the halves' phases misalign
    ((4, 2), None, "mesh-rings", True),
    ((4, 4), None, "mesh-2d-dual", True),
]


@pytest.mark.parametrize(("shape", "blk", "alg", "reaches"), CASES)
@pytest.mark.parametrize("op", OPS)
def test_simulator_against_the_bound(shape, blk, alg, reaches, op):
    f = mesh(*shape)
    group = f.npus if blk is None else block(f, *blk)
    req = CollectiveRequest(op, group, D)
    bound = lookup(alg).bound(f, req)
    n = len(group)
    factor = 2 * (n - 1) / n if op == "all-reduce" else (n - 1) / n
    assert bound == pytest.approx(factor * D / (2 * B), rel=1e-12)
    for chunks in (1, 2):
        t = run(f, req, alg, chunks)
        assert t >= bound * (1 - 1e-9)
        if reaches:
            assert t <= 1.02 * bound
    # Small requests: latency on top, still never below the bound.
    small = CollectiveRequest(op, group, 4096)
    assert run(f, small, alg) >= lookup(alg).bound(f, small)


def test_which_groups_each_algorithm_takes():
    f = load_fabric("mesh")

    def names(group, op="all-reduce", fab=f):
        return [a.name for a in candidates(fab, CollectiveRequest(op, group, D))]

    assert names(range(20))[:2] == ["mesh-rings", "mesh-2d"]
    assert names(range(20), "reduce-scatter")[:2] == ["mesh-rings", "ring"]
    assert names(block(f, 0, 0, 3, 3))[:2] == ["mesh-2d-dual", "mesh-2d"]  # odd x odd
    # Squares: the dual reaches the same bound in fewer steps, so the rings are not offered.
    assert names(block(f, 1, 0, 4, 4))[:2] == ["mesh-2d-dual", "mesh-2d"]
    assert names(block(f, 1, 0, 4, 2))[:2] == ["mesh-rings", "mesh-2d"]
    for not_a_rectangle in (range(5), (0, 1, 2, 9), (0, 4, 8, 12, 16)):
        assert not {"mesh-rings", "mesh-2d-dual"} & set(names(not_a_rectangle))
    assert not {"mesh-rings", "mesh-2d-dual"} & set(names(range(20), fab=load_fabric("fred-a")))


@pytest.mark.parametrize(("w", "h"), [(5, 4), (3, 3), (4, 2), (4, 4), (5, 3)])
@pytest.mark.parametrize("op", OPS)
def test_the_default_is_the_fastest_candidate_for_large_data(w, h, op):
    f = mesh(w, h)
    req = CollectiveRequest(op, f.npus, D)
    default = simulate(f, [req])
    others = [run(f, req, a.name) for a in candidates(f, req)]
    # Ties at the bandwidth bound differ by link latencies only (4 x 4: the dual's folded
    # hops of two links against the cycle's 15 single-link steps, 30 ns of 42 us).
    assert default.time <= min(others) + 10 * LINK_LATENCY


@pytest.mark.parametrize(("shape", "alg"), [((5, 4), "mesh-rings"), ((3, 3), "mesh-2d-dual")])
def test_the_packet_model_agrees(shape, alg):
    f = mesh(*shape)
    req = CollectiveRequest("all-reduce", f.npus, 2**21)
    flow, packet = (simulate(f, [req], engine=e) for e in ("flow", "packet"))
    assert flow.requests[0].algorithm == packet.requests[0].algorithm == alg
    assert packet.time == pytest.approx(flow.time, rel=0.02)
