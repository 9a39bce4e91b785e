"""Latency and throughput measured in the Amaranth simulator against the documented
formula (model/switch/latency.py): one cycle per register slice and per adder stage on the
path (the Clos: every path crosses every stage; the crossbar: at most its longest path), one
flit per cycle per active port; and a phase change that waits for the whole pipeline."""

import pytest
from amaranth.sim import Simulator

from fredfab.hw.control import n_words
from fredfab.hw.manifest import generate, load_manifest
from fredfab.hw.params import SwitchParams
from fredfab.hw.switch import FredSwitch
from fredfab.model.switch.flow import Flow
from fredfab.model.switch.router import route
from fredfab.model.timing_card import default_card
from tests.hw.switch_bench import load_slot


def measure(params: SwitchParams, flows, n_flits: int = 24):
    """Inputs always valid, outputs always ready: (latency, per-output flit cycles)."""
    dut = FredSwitch(params)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    routing = route(flows, params.ports, params.m, arch=params.arch)
    ins = sorted({p for f in flows for p in f.ips})
    outs = sorted({p for f in flows for p in f.ops})
    record = {"first_in": None, "out": {p: [] for p in outs}}

    async def tb(ctx):
        await load_slot(ctx, dut, 1, routing.config.to_words(params.word_width))
        ctx.set(dut.select.valid, 1)
        ctx.set(dut.select.payload, 1)
        await ctx.tick().until(dut.select.ready)
        ctx.set(dut.select.valid, 0)
        for p in outs:
            ctx.set(dut.o[p].ready, 1)
        lanes = dut.i[0].payload.shape()["data"].shape  # the flit's lane layout (hw/flit.py)
        sent = 0
        cycle = 0
        while any(len(v) < n_flits for v in record["out"].values()):
            for p in ins:
                ctx.set(dut.i[p].valid, sent < n_flits)
                ctx.set(dut.i[p].payload, {"data": lanes.from_bits(sent + 1), "last": 0})
            sample = await ctx.tick().sample(
                *[dut.i[p].ready for p in ins], *[dut.o[p].valid for p in outs]
            )
            readies, valids = sample[2 : 2 + len(ins)], sample[2 + len(ins) :]
            if sent < n_flits and all(readies):
                if record["first_in"] is None:
                    record["first_in"] = cycle
                sent += 1
            for p, v in zip(outs, valids, strict=True):
                if v:
                    record["out"][p].append(cycle)
            cycle += 1

    sim.add_testbench(tb)
    sim.run_until(2000e-8)
    first_out = min(v[0] for v in record["out"].values())
    return first_out - record["first_in"], record["out"]


@pytest.mark.parametrize("regs,adder", [(0, 0), (1, 0), (2, 0), (1, 3), (0, 2)])
@pytest.mark.parametrize("arch", ["clos", "xbar"])
@pytest.mark.parametrize(
    "P,flows",
    [
        (8, [Flow([p], [p ^ 5]) for p in range(8)]),  # unicast permutation
        (8, [Flow(range(8), range(8))]),  # All-Reduce: joins at every level
        (5, [Flow([0], range(5))]),  # broadcast: forks at every level
        (6, [Flow(range(3), [5]), Flow(range(3, 6), range(3))]),  # reduce + All-Reduce-ish mix
    ],
)
def test_latency_and_throughput_match_formula(P, flows, regs, adder, arch):
    params = SwitchParams(
        ports=P, m=3, lanes=1, dtype="int16", regs_per_stage=regs, adder_stages=adder, arch=arch
    )
    latency, cycles = measure(params, flows)
    if arch == "clos" or (len(flows) == 1 and len(flows[0].ips) == P):
        # Every Clos path crosses every stage; an All-Reduce over all ports of the crossbar
        # completes at the root of its tree, the longest path.
        assert latency == params.latency_cycles
    else:
        assert 0 <= latency <= params.latency_cycles
    for p, c in cycles.items():
        # One flit per cycle from the first to the last: no bubbles.
        assert c == list(range(c[0], c[0] + len(c))), f"port {p}: {c}"


def test_builtin_timing_card_matches_the_default_rtl(tmp_path):
    """The system model's built-in card describes the switch the generator builds with its
    default parameters: same parameters, the latency its manifest declares and the
    simulation shows, and one cfg word per cycle for a slot of its words."""
    card = default_card()
    params = SwitchParams(ports=card.generator["ports"])
    assert dict(card.generator) == params.to_dict()
    _, j_path = generate(params, tmp_path)
    info = load_manifest(j_path)
    assert card.latency_cycles == info["latency_cycles"] == params.latency_cycles
    assert card.slot_write_cycles == info["config"]["words_per_slot"]
    latency, _ = measure(params, [Flow([p], [p ^ 5]) for p in range(params.ports)], n_flits=4)
    assert latency == card.latency_cycles


@pytest.mark.parametrize("arch", ["clos", "xbar"])
@pytest.mark.parametrize("regs,adder", [(1, 0), (1, 4), (0, 3)])
def test_a_phase_change_waits_for_every_flit_in_the_pipeline(arch, regs, adder):
    """select is raised in the cycle after the last flit of an All-Reduce goes in: the
    control unit may copy the next slot only once that flit has left the switch, wherever it
    is held (a register slice or an adder pipe). With the outputs always ready that is
    latency_cycles later, so the change takes at least that plus the slot copy."""
    P = 4
    params = SwitchParams(
        ports=P, m=3, lanes=1, dtype="int16", regs_per_stage=regs, adder_stages=adder, arch=arch
    )
    dut = FredSwitch(params)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    old = route([Flow(range(P), range(P))], P, 3, arch=arch)
    new = route([Flow([p], [(p + 1) % P]) for p in range(P)], P, 3, arch=arch)
    n_flits = 3  # fewer than the adder stages: the flits can all sit in one adder pipe
    seen = {"out": [], "last_in": None, "ready": None, "raised": None}

    async def tb(ctx):
        for slot, routing in ((1, old), (2, new)):
            await load_slot(ctx, dut, slot, routing.config.to_words(params.word_width))
        ctx.set(dut.select.valid, 1)
        ctx.set(dut.select.payload, 1)
        await ctx.tick().until(dut.select.ready)
        ctx.set(dut.select.valid, 0)
        for p in range(P):
            ctx.set(dut.o[p].ready, 1)
        lanes = dut.i[0].payload.shape()["data"].shape
        sent, cycle = 0, 0
        while seen["ready"] is None:
            for p in range(P):
                ctx.set(dut.i[p].valid, sent < n_flits)
                ctx.set(dut.i[p].payload, {"data": lanes.from_bits(sent + 1), "last": 1})
            if sent == n_flits and seen["raised"] is None:
                ctx.set(dut.select.valid, 1)
                ctx.set(dut.select.payload, 2)
                seen["raised"] = cycle
            sample = await ctx.tick().sample(
                dut.select.ready, *[dut.i[p].ready for p in range(P)], dut.o[0].valid
            )
            ready, *in_ready, out_valid = sample[2:]
            if sent < n_flits and all(in_ready):
                sent += 1
                seen["last_in"] = cycle
            if out_valid:
                seen["out"].append(cycle)
            if ready and seen["raised"] is not None:
                seen["ready"] = cycle
            cycle += 1
        ctx.set(dut.select.valid, 0)

    sim.add_testbench(tb)
    sim.run_until(3000e-8)
    assert seen["ready"] is not None, "the phase change never completed"
    assert len(seen["out"]) == n_flits
    # The old phase's last flit leaves latency_cycles after it went in, before the change.
    assert seen["out"][-1] == seen["last_in"] + params.latency_cycles
    assert seen["ready"] > seen["out"][-1]
    select_cycles = seen["ready"] - seen["raised"] + 1
    assert select_cycles >= params.latency_cycles + n_words(params) + 1
