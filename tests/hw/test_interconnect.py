"""The generated interconnect in the Amaranth simulator, configured directly with the
router's bits: outputs equal the functional model bit-exact under random idles and
backpressure, with no flit lost, duplicated or reordered and packet ends preserved, with
combinational and with pipelined adders."""

import numpy as np
import pytest
from amaranth.sim import Simulator

from fredfab.hw.interconnect import Interconnect, crossbar_nodes
from fredfab.hw.params import SwitchParams
from fredfab.model.dtypes import element_type
from fredfab.model.switch.arches import build_topology
from fredfab.model.switch.flow import Flow
from fredfab.model.switch.flowgen import random_flow_set
from fredfab.model.switch.router import RouteConflict
from fredfab.model.switch.router import route as route_flows
from fredfab.model.switch.switch_model import FunctionalSwitch
from tests.hw.streams import driver, flow_traffic, monitor


def run_interconnect(params, routing, traffic, seed, idle, stall, timeout_cycles=5000):
    dut = Interconnect(params)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    got = {p: [] for p in traffic.expect}
    rngs = np.random.default_rng(seed).spawn(2 * params.ports)

    async def configure(ctx):
        # The raw bit vector, as the control unit drives it: the uSwitches find their codes
        # in it through the field layout.
        ctx.set(dut.config.as_value(), routing.config.to_bits())

    sim.add_testbench(configure)
    for p, flits in traffic.send.items():
        sim.add_testbench(_after_a_cycle(driver(dut.i[p], flits, rngs[p], idle)))
    for p, want in traffic.expect.items():
        sim.add_testbench(monitor(dut.o[p], len(want), got[p], rngs[params.ports + p], stall))
    sim.run_until(timeout_cycles * 1e-8)
    return got


def _after_a_cycle(tb):
    """The testbench ``tb``, started a cycle late: every node registers its configuration
    field, so a configuration applies from the cycle after it is set (hw/interconnect.py;
    the control units change it only while the switch is empty)."""

    async def late(ctx):
        await ctx.tick()
        await tb(ctx)

    return late


SIZES = [(2, 2, "int8"), (3, 2, "fp16"), (4, 3, "bf16"), (5, 2, "int16"), (8, 3, "fp32")]
# Register slicing is the same code for both architectures: the crossbar runs it once.
CASES = [(P, m, dt, regs, 0, "clos") for P, m, dt in SIZES for regs in (0, 1, 2)]
CASES += [(P, m, dt, 1, 0, "xbar") for P, m, dt in SIZES]
# Adder pipes: every element type and both architectures, one depth each, with and without
# register slices behind the nodes.
CASES += [
    (P, m, dt, regs, adder, arch)
    for (P, m, dt), (regs, adder) in zip(
        SIZES, [(1, 1), (1, 6), (0, 2), (1, 3), (2, 4)], strict=True
    )
    for arch in ("clos", "xbar")
]
#: The largest size without and with register slices and adder pipes (the slowest cases of
#: this file, the same slicing and pipe code that every smaller size runs in the default
#: suite): with the slow suite.
SLOW_CASES = [
    (8, 3, "fp32", 0, 0, "clos"),
    (8, 3, "fp32", 2, 0, "clos"),
    (8, 3, "fp32", 2, 4, "clos"),
    (8, 3, "fp32", 2, 4, "xbar"),
]


@pytest.mark.parametrize(
    "P,m,dtype,regs,adder,arch",
    [pytest.param(*c, marks=[pytest.mark.slow] if c in SLOW_CASES else []) for c in CASES],
)
def test_random_flows(P, m, dtype, regs, adder, arch):
    rng = np.random.default_rng(P * 100 + m * 10 + regs + 1000 * adder)
    lanes = 2
    params = SwitchParams(
        ports=P, m=m, lanes=lanes, dtype=dtype, regs_per_stage=regs, adder_stages=adder, arch=arch
    )
    sw = FunctionalSwitch(P, m, element_type(dtype), arch=arch)
    for trial in range(2):
        while True:
            try:
                routing = sw.route(random_flow_set(rng, P))
                break
            except RouteConflict:
                continue
        traffic = flow_traffic(sw, routing, rng, lanes)
        got = run_interconnect(params, routing, traffic, seed=trial, idle=0.3, stall=0.3)
        for p, want in traffic.expect.items():
            assert got[p] == want, f"port {p}: {routing.flows}"


@pytest.mark.parametrize("P", [4, 5, 8])
@pytest.mark.parametrize(
    "shape",
    ["all_reduce", "broadcast", "two_multicasts"],
)
def test_crossbar_multicasts_under_heavy_backpressure(P, shape):
    """The crossbar's result fan-outs send on look-ahead room (hw/room_buffer.py): with each
    output stalled independently most of the time, every output still gets exactly the
    model's flits, none lost, duplicated or reordered."""
    half = P // 2
    flows = {
        "all_reduce": [Flow(range(P), range(P))],
        "broadcast": [Flow([P - 1], range(P))],
        "two_multicasts": [Flow(range(half), range(half, P)), Flow(range(half, P), range(half))],
    }[shape]
    params = SwitchParams(ports=P, lanes=1, dtype="int16", arch="xbar")
    sw = FunctionalSwitch(P, params.m, element_type("int16"), arch="xbar")
    rng = np.random.default_rng(P)
    routing = sw.route(flows)
    traffic = flow_traffic(sw, routing, rng, 1, packets=6)
    got = run_interconnect(params, routing, traffic, seed=P, idle=0.1, stall=0.7)
    for p, want in traffic.expect.items():
        assert got[p] == want, f"port {p}"


def test_crossbar_nodes_are_the_result_fan_outs_and_output_selects():
    """The crossbars the interconnect finds (hw/interconnect.py ``crossbar_nodes``): on the
    crossbar switch, every result fan-out and the output selects (the input ports' fan-outs
    never multicast and stay plain); on the Clos, none."""
    for P in range(2, 10):
        topo = build_topology(P, 3, "xbar")
        senders, takers = crossbar_nodes(topo)
        assert {topo.nodes[s].name for s in senders} == {f"fork{k}" for k in range(2 * P)}
        assert {topo.nodes[t].name for t in takers} == {f"out{p}.sel" for p in range(P)}
    for P in (3, 4, 5, 8):
        assert crossbar_nodes(build_topology(P, 3, "clos")) == (set(), set())


@pytest.mark.parametrize("P", [4, 5, 8])
@pytest.mark.parametrize("kind", ["unicast", "reduce"])
def test_crossbar_single_output_flows_keep_up_with_any_sink(P, kind):
    """With every input always offering a flit and each output ready at random, an output of
    a single-output flow (a unicast permutation, a reduction of every port) is valid in
    every cycle after its first flit: it misses none of the cycles it is ready, as behind
    skid buffers, though its result fan-out sends a cycle after its room buffer had room
    (hw/room_buffer.py, the sender's rule)."""
    flows = {
        "unicast": [Flow([p], [(p + 1) % P]) for p in range(P)],
        "reduce": [Flow(range(P), [P - 1])],
    }[kind]
    params = SwitchParams(ports=P, lanes=1, dtype="int16", arch="xbar")
    routing = route_flows(flows, P, params.m, arch="xbar")
    dut = Interconnect(params)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    rng = np.random.default_rng(P)
    outs = sorted({q for f in flows for q in f.ops})
    dry = {q: 0 for q in outs}
    taken = {q: 0 for q in outs}

    async def tb(ctx):
        ctx.set(dut.config.as_value(), routing.config.to_bits())
        await ctx.tick()
        for p in range(P):
            ctx.set(dut.i[p].valid, 1)
        started = set()
        for _ in range(600):
            ready = {q: bool(rng.random() < 0.5) for q in outs}
            for q in outs:
                ctx.set(dut.o[q].ready, ready[q])
            _, _, *valids = await ctx.tick().sample(*[dut.o[q].valid for q in outs])
            for q, v in zip(outs, valids, strict=True):
                taken[q] += int(v and ready[q])
                if v:
                    started.add(q)
                elif q in started:
                    dry[q] += 1

    sim.add_testbench(tb)
    sim.run()
    assert all(n > 250 for n in taken.values()), taken  # about half of 600 cycles
    assert dry == {q: 0 for q in outs}
