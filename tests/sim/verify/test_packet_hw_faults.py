"""The hardware fault injector (fredfab.sim.verify.packet.hw_faults) against its model
(model/packet/faults.py), cycle for cycle: the same flits dropped, the same bits flipped,
the same bursts and silences, the same counts."""

from __future__ import annotations

import random

import pytest
from amaranth.sim import Simulator

from fredfab.hw.packet.params import PacketParams
from fredfab.hw.params import SwitchParams
from fredfab.model.packet.faults import FaultRates, LinkFaults
from fredfab.sim.verify.packet.hw_faults import FaultInjector

PARAMS = PacketParams(SwitchParams(4, lanes=4, dtype="int16"))
LINK = PARAMS.link
#: The counters compared with the model's (undetected: corruptions the CRC misses).
COUNTS = ("flits", "dropped", "corrupted", "undetected", "bursts")


@pytest.mark.parametrize(
    "rates",
    [
        FaultRates(drop=0.05, corrupt=0.05),
        FaultRates(drop=0.02, corrupt=0.03, burst=0.5),
        FaultRates(drop=0.01, corrupt=0.01, silence=3e-3),
    ],
    ids=["drop-corrupt", "bursts", "silences"],
)
def test_the_injector_is_the_model_cycle_for_cycle(rates):
    rng = random.Random(7)
    flits = [
        LINK.flit(rng.getrandbits(64), vc=rng.randrange(4)) if rng.random() < 0.7 else None
        for _ in range(4000)
    ]
    model = LinkFaults(rates, 11, LINK)
    want = [model.step(f) for f in flits]
    dut = FaultInjector(PARAMS, rates, 11)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    got: list = []

    async def tb(ctx) -> None:
        for f in flits:
            ctx.set(dut.i_valid, f is not None)
            ctx.set(dut.i.as_value(), 0 if f is None else LINK.encode(f))
            got.append(LINK.decode(ctx.get(dut.o.as_value())) if ctx.get(dut.o_valid) else None)
            await ctx.tick()
        got.append({k: ctx.get(getattr(dut, k)) for k in COUNTS})
        got.append(ctx.get(dut.silences))

    sim.add_testbench(tb)
    sim.run()
    *out, counts, silences = got
    assert out == want
    assert counts == {k: getattr(model, k) for k in COUNTS}
    assert silences == model.silences
    assert model.dropped and (model.bursts or not rates.burst)
    assert model.silences or not rates.silence
