"""Transfers whose last bytes take less time than the clock can resolve still finish."""

import signal

import pytest

from fredfab.model.system import CollectiveRequest, load_fabric
from fredfab.sim.engines.system import simulate


@pytest.fixture
def alarm():
    def ring(signum, frame):
        raise TimeoutError("the simulation did not finish")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("op", ["all-reduce", "broadcast"])
def test_one_byte_collective_finishes(op, alarm):
    """1 byte over 20 NPUs in 2 chunks leaves ~1e-11 bytes at ~1e12 B/s, ~1e-23 s: below the
    resolution of a clock at ~1e-7 s, so that timeout does not move the clock. It used to be
    taken for an early wake-up, forever."""
    fab = load_fabric("mesh")
    res = simulate(fab, [CollectiveRequest(op, range(fab.num_npus), 1.0)])
    tiny = res.requests[0].time
    big = simulate(fab, [CollectiveRequest(op, range(fab.num_npus), 2.0**20)]).requests[0].time
    assert 0 < tiny < big
