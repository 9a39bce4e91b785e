import numpy as np
import pytest

from fredfab.model.system import CollectiveRequest, Schedule, build, mesh, plan_request
from fredfab.model.system.schedule import NO_DEP
from fredfab.sim.engines.netsim import run_schedule


def test_dependencies_sent_and_delivered():
    f = mesh(3, 1, link_bandwidth=1e9, link_latency=1e-6, io_controllers=0)
    s = Schedule(f)
    a = s.add_paths([0], [2], 1e3)  # 1 us on the wire, 2 hops of 1 us latency
    b = s.add_paths([2], [1], 1e3, after=[a])  # starts when a is delivered
    c = s.add_paths([0], [1], 1e3, after_sent=[a], delay=0.5e-6)  # after a is sent + delay
    r = run_schedule(s)
    assert r.delivered[a[0]] == pytest.approx(3e-6)
    assert r.start[b[0]] == pytest.approx(3e-6) and r.delivered[b[0]] == pytest.approx(5e-6)
    assert r.start[c[0]] == pytest.approx(1.5e-6)
    with pytest.raises(ValueError, match="earlier"):
        s.add_paths([0], [1], 1.0, after=[np.array([s.n + 5])])
    assert NO_DEP == -1


def test_resolution_only_delays_and_by_a_bounded_amount():
    f = mesh(8, 8)
    req = CollectiveRequest("all-reduce", range(64), 2**24)
    s = Schedule(f)
    build(s, plan_request(f, req), chunks=2)
    exact = run_schedule(s)
    grid = run_schedule(s, resolution=20e-9)
    depth = 2 * (2 * 7 + 2 * 7)  # ring steps on the critical path, both events per step
    assert grid.makespan >= exact.makespan * (1 - 0.02)
    assert grid.makespan <= exact.makespan + depth * 20e-9 + 0.02 * exact.makespan
    assert grid.events < exact.events


def test_bad_arguments():
    f = mesh(2, 1)
    s = Schedule(f)
    s.add_paths([0], [1], 1.0)
    with pytest.raises(ValueError, match="sharing"):
        run_schedule(s, sharing="fifo")
    with pytest.raises(ValueError, match="resolution"):
        run_schedule(s, resolution=-1)


def test_one_rate_computation_per_instant():
    # a and c share link 0->1; when a is sent, b (stream order) starts at the same instant:
    # the rates of {c, b} are computed once, not once for {c} and again for {c, b}. Three
    # instants change the active set (0, a sent, b sent); at the last, b shares no link with
    # c, whose rate stays as it was: two computations, not three (or four).
    f = mesh(3, 1, link_bandwidth=1e9, link_latency=0, io_controllers=0)
    s = Schedule(f)
    a = s.add_paths([0], [1], 1e3)
    c = s.add_paths([0], [1], 4e3)
    b = s.add_paths([1], [2], 1e3, after_sent=[a])
    r = run_schedule(s)
    assert r.rate_updates == 2
    # a and c at 0.5 GB/s until a is sent (2 us); then c alone at 1 GB/s, b on its own link.
    assert r.sent[a[0]] == pytest.approx(2e-6)
    assert r.sent[b[0]] == pytest.approx(3e-6)
    assert r.sent[c[0]] == pytest.approx(2e-6 + 3e3 / 1e9)
