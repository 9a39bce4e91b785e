"""Amaranth-simulator harness for the whole switch: configuration loading, phase changes
and flow traffic (drivers and monitors from tests/hw/streams.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from amaranth.sim import Simulator

from fredfab.hw.params import SwitchParams
from fredfab.hw.switch import FredSwitch
from fredfab.model.switch.router import Routing
from tests.hw.streams import Traffic, driver, monitor


async def load_slot(ctx, dut: FredSwitch, slot: int, words: list[int]) -> None:
    for addr, word in enumerate(words):
        ctx.set(dut.cfg.valid, 1)
        ctx.set(dut.cfg.payload, {"slot": slot, "addr": addr, "data": word})
        await ctx.tick().until(dut.cfg.ready)
    ctx.set(dut.cfg.valid, 0)


@dataclass
class Phase:
    """One communication phase: a routed flow set, its slot and its traffic."""

    slot: int
    routing: Routing
    traffic: Traffic


def run_phases(
    params: SwitchParams,
    phases: list[Phase],
    seed: int,
    idle: float,
    stall: float,
    timeout_cycles: int = 20000,
) -> tuple[dict[int, list], dict[str, int]]:
    """Load every phase's slot, then run the phases one after the other: select the slot,
    start the phase's drivers (right after raising select: early flits must wait), wait
    for all of its input flits to be accepted, move on. Monitors collect everything."""
    dut = FredSwitch(params)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    rng = np.random.default_rng(seed)
    expect: dict[int, list] = {}
    for ph in phases:
        for p, flits in ph.traffic.expect.items():
            expect.setdefault(p, []).extend(flits)
    got: dict[int, list] = {p: [] for p in expect}
    stats: dict[str, int] = {}
    for p, flits in expect.items():
        sim.add_testbench(monitor(dut.o[p], len(flits), got[p], rng.spawn(1)[0], stall))

    started = [False] * len(phases)  # phase n's select has been raised
    sent = [set() for _ in phases]  # ports that have sent all of phase n's flits

    def port_driver(p: int):
        async def tb(ctx):
            for n, ph in enumerate(phases):
                while not started[n]:
                    await ctx.tick()
                if p in ph.traffic.send:
                    await ctx.tick()  # start one cycle after select rises
                    await driver(dut.i[p], ph.traffic.send[p], rng.spawn(1)[0], idle)(ctx)
                sent[n].add(p)

        return tb

    for p in range(params.ports):
        sim.add_testbench(port_driver(p), background=True)

    async def control(ctx):
        for ph in phases:
            await load_slot(ctx, dut, ph.slot, ph.routing.config.to_words(params.word_width))
        for n, ph in enumerate(phases):
            ctx.set(dut.select.valid, 1)
            ctx.set(dut.select.payload, ph.slot)
            started[n] = True
            cycles = 0
            while True:
                _, _, ready = await ctx.tick().sample(dut.select.ready)
                cycles += 1
                if ready:
                    break
            ctx.set(dut.select.valid, 0)
            stats[f"select_cycles_{n}"] = cycles
            while len(sent[n]) < params.ports:
                await ctx.tick()

    sim.add_testbench(control)
    sim.run_until(timeout_cycles * 1e-8)
    return got, stats
