"""The self-checking RTL soak (fredfab.sim.verify.soak): generators and checker in Verilog."""

from __future__ import annotations

import pytest

from fredfab.hw.params import SwitchParams
from fredfab.model.switch.flow import Flow
from fredfab.sim.verify.cosim import shared_build_root
from fredfab.sim.verify.soak import soak, soak_flows, soak_routing

ROOT = shared_build_root()


SIMS = [
    pytest.param("icarus", 4000, 0, marks=pytest.mark.needs("icarus")),
    pytest.param("verilator", 50_000, 0, marks=pytest.mark.needs("verilator")),
    # Pipelined adders: the same soak with two adder stages (more flits in flight).
    pytest.param("icarus", 4000, 2, marks=pytest.mark.needs("icarus"), id="icarus-adder2"),
]


@pytest.mark.parametrize("ports", [2, 3, 4, 5, 6, 8, 12, 16, 24])
def test_soak_flows_use_every_port_and_route(ports):
    flows = soak_flows(ports)
    ins = sorted(p for f in flows for p in f.ips)
    assert ins == list(range(ports))
    outs = {q for f in flows for q in f.ops}
    assert len(outs) >= ports - 1
    if ports >= 6:
        kinds = {f.kind for f in flows}
        assert kinds == {"all-reduce", "reduce", "multicast", "unicast"}
    params = SwitchParams(ports=ports, m=3, lanes=1, dtype="int16")
    assert soak_routing(params).flows == tuple(flows)


def test_float_soak_has_no_reduction():
    params = SwitchParams(ports=6, m=3, lanes=1, dtype="bf16")
    assert all(len(f.ips) == 1 for f in soak_routing(params).flows)
    assert any(f == Flow([0], [0, 1]) for f in soak_routing(params).flows)


@pytest.mark.parametrize("sim,cycles,adder", SIMS)
def test_soak_runs_clean_and_catches_a_fault(sim, cycles, adder):
    params = SwitchParams(ports=5, m=2, lanes=2, dtype="int16", adder_stages=adder)
    r = soak(params, cycles, sim, root=ROOT)
    assert r.errors == 0, r.first_error
    assert r.clocked == cycles and cycles - 50 < r.cycles < cycles  # configuration first
    by_port = dict(enumerate(r.out_flits))
    assert all(by_port[q] > cycles // 20 for q in range(5)), r.out_flits  # every output moves
    # Conservation: an All-Reduce's outputs and a reduce's output lag their inputs by at
    # most what the pipeline holds.
    assert abs(by_port[0] - by_port[1]) < 40
    assert r.in_flits >= 2 * by_port[0] + 2 * by_port[2] + by_port[3] - 10
    bad = soak(params, cycles, sim, fault=(3, 77), root=ROOT)
    assert bad.errors == 1
    assert bad.first_error["port"] == 3 and bad.first_error["index"] == 77
    assert bad.first_error["expected"] ^ bad.first_error["got"] == 1


#: Long soaks (-m slow): the bench's variant, a float variant (single-input flows, a silent
#: output), wide flits (more than 64 bits, two data chunks per generator state), and
#: pipelined adders on both architectures.
LONG = [
    SwitchParams(ports=8, m=3, lanes=4, dtype="int16"),
    SwitchParams(ports=8, m=3, lanes=2, dtype="bf16"),
    SwitchParams(ports=4, m=3, lanes=3, dtype="int32"),
    SwitchParams(ports=8, m=3, lanes=2, dtype="int16", adder_stages=3),
    SwitchParams(ports=7, m=3, lanes=1, dtype="int32", adder_stages=6, arch="xbar"),
]


@pytest.mark.slow
@pytest.mark.needs("verilator")
@pytest.mark.parametrize("params", LONG, ids=lambda p: p.name)
def test_long_soak_is_clean(params):
    cycles = 1_000_000
    r = soak(params, cycles, "verilator", root=ROOT)
    assert r.errors == 0, r.first_error
    used = {q for f in soak_routing(params).flows for q in f.ops}
    for q, n in enumerate(r.out_flits):
        assert n > cycles // 10 if q in used else n == 0, (q, r.out_flits)
