"""The whole switch (control unit + interconnect) in the Amaranth simulator.

Every scenario checks outputs bit-exact against the functional model (itself checked
against the golden collectives in tests/model), with random input idles and random output
backpressure: no flit lost, duplicated or reordered, packet ends preserved, and no flit of
one phase handled by another phase's configuration."""

import zlib

import numpy as np
import pytest

from fredfab.hw.control import default_config
from fredfab.hw.params import SwitchParams
from fredfab.model.dtypes import ELEMENT_TYPES, element_type
from fredfab.model.switch.flow import Flow
from fredfab.model.switch.flowgen import random_flow_set
from fredfab.model.switch.latency import MAX_ADDER_STAGES
from fredfab.model.switch.router import RouteConflict
from fredfab.model.switch.switch_model import FunctionalSwitch
from tests.hw.streams import flow_traffic
from tests.hw.switch_bench import Phase, run_phases

DTYPES = sorted(ELEMENT_TYPES)
GRID = [(P, m) for P in (2, 3, 4, 5, 7, 8, 12, 16) for m in (2, 3)]


def _random_routing(sw, rng):
    while True:
        try:
            return sw.route(random_flow_set(rng, sw.ports))
        except RouteConflict:
            continue


def _check(params, phases, seed, idle=0.3, stall=0.3):
    got, stats = run_phases(params, phases, seed, idle, stall)
    expect = {}
    for ph in phases:
        for p, flits in ph.traffic.expect.items():
            expect.setdefault(p, []).extend(flits)
    for p, want in expect.items():
        assert len(got[p]) == len(want), f"port {p}: {len(got[p])} of {len(want)} flits"
        assert got[p] == want, f"port {p}"
    return stats


def _phases(params, rng, count, lanes):
    sw = FunctionalSwitch(params.ports, params.m, element_type(params.dtype), arch=params.arch)
    out = []
    for n in range(count):
        routing = _random_routing(sw, rng)
        out.append(
            Phase(1 + n % (params.slots - 1), routing, flow_traffic(sw, routing, rng, lanes))
        )
    return out


#: P = 12 and 16 each run once in the default suite (m = 2 and 3), the other m with the
#: slow suite: the largest switches of the grid, and the slowest.
SLOW_GRID = [(12, 3), (16, 2)]


@pytest.mark.parametrize(
    "P,m",
    [pytest.param(P, m, marks=[pytest.mark.slow] if (P, m) in SLOW_GRID else []) for P, m in GRID],
)
def test_random_phases_grid(P, m):
    """Each (P, m) of the grid with two random phases; the element type rotates over the grid
    so that every type meets odd and even P, both m and reconfiguration."""
    i = GRID.index((P, m))
    dtype = DTYPES[i % len(DTYPES)]
    lanes = 2
    params = SwitchParams(ports=P, m=m, lanes=lanes, dtype=dtype)
    rng = np.random.default_rng(i)
    _check(params, _phases(params, rng, 2, lanes), seed=i)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("P,m", [(4, 2), (5, 3)])
def test_every_element_type(P, m, dtype):
    lanes = 3
    params = SwitchParams(ports=P, m=m, lanes=lanes, dtype=dtype)
    # A stable digest, not hash(): str hashes change with every process (PYTHONHASHSEED).
    rng = np.random.default_rng(zlib.crc32(f"{P}-{m}-{dtype}".encode()))
    _check(params, _phases(params, rng, 2, lanes), seed=7)


@pytest.mark.parametrize("arch", ["clos", "xbar"])
@pytest.mark.parametrize("P,dtype,adder", [(5, "bf16", 2), (8, "int32", MAX_ADDER_STAGES)])
def test_pipelined_adders_random_phases(P, dtype, adder, arch):
    """Adder pipes behind the same control unit: random phases, idles and backpressure."""
    lanes = 2
    params = SwitchParams(ports=P, m=3, lanes=lanes, dtype=dtype, adder_stages=adder, arch=arch)
    rng = np.random.default_rng(zlib.crc32(f"{P}-{dtype}-{adder}-{arch}".encode()))
    _check(params, _phases(params, rng, 3, lanes), seed=adder)


@pytest.mark.parametrize("P", [3, 4, 7, 8])
def test_xbar_random_phases(P):
    """The crossbar switch behind the same control unit: same scenarios and checks."""
    dtype = DTYPES[P % len(DTYPES)]
    lanes = 2
    params = SwitchParams(ports=P, m=3, lanes=lanes, dtype=dtype, arch="xbar")
    rng = np.random.default_rng(100 + P)
    _check(params, _phases(params, rng, 2, lanes), seed=P)


# m does not apply to the crossbar: its variants run once.
CROSS = [(P, m, "clos") for P, m in GRID] + [(P, 3, "xbar") for P, m in GRID if m == 3]


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("P,m,arch", CROSS)
def test_full_cross_product(P, m, dtype, arch):
    lanes = 2
    params = SwitchParams(ports=P, m=m, lanes=lanes, dtype=dtype, arch=arch)
    rng = np.random.default_rng(P * 31 + m)
    _check(params, _phases(params, rng, 3, lanes), seed=P + m)


def test_reset_state_is_all_unicast_default():
    """Without any configuration, slot 0 (identity unicast) is active after reset."""
    P, lanes = 5, 2
    params = SwitchParams(ports=P, m=2, lanes=lanes, dtype="int16")
    sw = FunctionalSwitch(P, 2, element_type("int16"))
    routing = sw.route([Flow([p], [p]) for p in range(P)])
    assert routing.config.codes == default_config(params).codes
    rng = np.random.default_rng(3)
    _check(params, [Phase(0, routing, flow_traffic(sw, routing, rng, lanes))], seed=1)


@pytest.mark.parametrize("adder", [0, 3])
def test_phase_changes_never_mix_configurations(adder):
    """Three phases whose flow sets move data between different ports; the next phase's
    senders start one cycle after select rises, before the change completes. Any flit
    handled by the wrong configuration would land on a wrong port or with a wrong sum
    (with pipelined adders too: the change waits for the flits in the adder pipes)."""
    P, lanes = 8, 2
    params = SwitchParams(ports=P, m=3, lanes=lanes, dtype="fp16", adder_stages=adder)
    sw = FunctionalSwitch(P, 3, element_type("fp16"))
    sets = [
        [Flow(range(8), range(8))],
        [Flow([p], [(p + 3) % 8]) for p in range(8)],
        [Flow(range(4), [7]), Flow([4], range(4)), Flow([5, 6], [4, 5])],
    ]
    rng = np.random.default_rng(5)
    phases = []
    for n, flows in enumerate(sets):
        routing = sw.route(flows)
        phases.append(Phase(1 + n, routing, flow_traffic(sw, routing, rng, lanes, packets=4)))
    stats = _check(params, phases, seed=2, idle=0.2, stall=0.5)
    words = -(-sw.route(sets[0]).config.topology.config_bits // params.word_width)
    # Drain, then n_words + 1 cycles of loading: never faster than the memory copy.
    assert all(v >= words + 1 for v in stats.values()), stats
