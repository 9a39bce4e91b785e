"""Amaranth-simulator stream drivers, monitors and flow traffic for the switch tests.

Drivers insert random idle cycles before flits, monitors apply random backpressure; both
are seeded, so a failure reproduces. Flow traffic and flit packing live in
fredfab.sim.verify.traffic, shared with the cocotb benches (fredfab.sim.verify.cocotb_bench).
"""

from __future__ import annotations

import numpy as np

from fredfab.sim.verify.traffic import Traffic, flow_traffic, pack, unpack

__all__ = ["Traffic", "driver", "flow_traffic", "monitor", "pack", "unpack"]


def driver(port, flits, rng: np.random.Generator, idle: float):
    """Testbench sending ``flits`` on stream ``port``, idling before each flit with
    probability ``idle``."""

    lanes = port.payload.shape()["data"].shape  # the flit's lane layout (hw/flit.py)

    async def tb(ctx) -> None:
        for data, last in flits:
            while rng.random() < idle:
                await ctx.tick()
            ctx.set(port.valid, 1)
            ctx.set(port.payload, {"data": lanes.from_bits(data), "last": last})
            await ctx.tick().until(port.ready)
            ctx.set(port.valid, 0)

    return tb


def monitor(port, count: int, got: list, rng: np.random.Generator, stall: float):
    """Testbench accepting ``count`` flits from stream ``port`` into ``got``; not ready with
    probability ``stall`` in each cycle."""

    async def tb(ctx) -> None:
        while len(got) < count:
            ready = bool(rng.random() >= stall)
            ctx.set(port.ready, ready)
            _, _, valid, payload = await ctx.tick().sample(port.valid, port.payload)
            if ready and valid:
                got.append((payload.data.as_bits(), int(payload.last)))
        ctx.set(port.ready, 0)

    return tb
