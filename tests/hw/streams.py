"""Amaranth-simulator stream drivers, monitors and flow traffic for the switch tests.

Drivers insert random idle cycles before flits, monitors apply random backpressure; both
are seeded, so a failure reproduces. Traffic is generated per flow: every input port of a
flow sends the same number of flits with the same packet boundaries (the flow's packets),
and the expected output is the functional model's (model/switch_model.py) for the routing
the router produced, which tests/model checks against the golden collectives.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fredfab.model.dtypes import ElementType, from_bits, random_data, to_bits
from fredfab.model.router import Routing
from fredfab.model.switch_model import FunctionalSwitch


def pack(arr: np.ndarray, et: ElementType) -> list[int]:
    """(flits, lanes) elements -> one integer per flit, lane 0 in the LSBs."""
    bits = to_bits(arr, et).astype(np.uint64)
    out = []
    for row in bits:
        v = 0
        for i, b in enumerate(row.tolist()):
            v |= int(b) << (i * et.bits)
        out.append(v)
    return out


def unpack(words: list[int], et: ElementType, lanes: int) -> np.ndarray:
    mask = (1 << et.bits) - 1
    raw = np.array([[(w >> (i * et.bits)) & mask for i in range(lanes)] for w in words])
    return from_bits(raw.astype(et.raw_dtype), et)


@dataclass
class Traffic:
    """Flits to send per input port and flits expected per output port: (data, last)."""

    send: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    expect: dict[int, list[tuple[int, int]]] = field(default_factory=dict)


def flow_traffic(
    sw: FunctionalSwitch,
    routing: Routing,
    rng: np.random.Generator,
    lanes: int,
    packets: int = 3,
    max_packet: int = 4,
    edge_cases: bool = True,
) -> Traffic:
    """Random packets for every flow of ``routing``; expected outputs from the model."""
    et = sw.et
    traffic = Traffic()
    data: dict[int, np.ndarray] = {}
    lasts: dict[int, list[int]] = {}
    for flow in routing.flows:
        sizes = rng.integers(1, max_packet + 1, size=packets)
        last = [int(i == s - 1) for s in sizes for i in range(s)]
        n = len(last)
        for p in flow.ips:
            data[p] = random_data(rng, et, (n * lanes,), edge_cases=edge_cases)
            lasts[p] = last
        for p in flow.ops:
            lasts[-1 - p] = last
    outs = sw.forward(routing, data)
    for p, arr in data.items():
        traffic.send[p] = list(zip(pack(arr.reshape(-1, lanes), et), lasts[p], strict=True))
    for flow in routing.flows:
        for p in flow.ops:
            words = pack(outs[p].reshape(-1, lanes), et)
            traffic.expect[p] = list(zip(words, lasts[-1 - p], strict=True))
    return traffic


def driver(port, flits, rng: np.random.Generator, idle: float):
    """Testbench sending ``flits`` on stream ``port``, idling before each flit with
    probability ``idle``."""

    async def tb(ctx) -> None:
        for data, last in flits:
            while rng.random() < idle:
                await ctx.tick()
            ctx.set(port.valid, 1)
            ctx.set(port.payload, {"data": data, "last": last})
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
                got.append((int(payload.data), int(payload.last)))
        ctx.set(port.ready, 0)

    return tb
