"""Link-level retry (hw/packet/link_retry.py) against its model (model/packet/link_retry.py):
a sending and a receiving end joined by a faulty link (drops, corruption, bursts and
silences), cycle for cycle the same flits on the link, the same flits taken and the same
acknowledgements; and every flit offered is taken exactly once, in order."""

from __future__ import annotations

import random

import pytest
from amaranth.hdl import Module
from amaranth.sim import Simulator

from fredfab.hw.packet.link_retry import RetryReceiver, RetrySender
from fredfab.hw.packet.params import PacketParams
from fredfab.hw.params import SwitchParams
from fredfab.model.packet.faults import FaultRates, LinkFaults
from fredfab.model.packet.format import LinkFlit, PacketFormat
from fredfab.model.packet.link_retry import REPLAY_DEPTH
from fredfab.model.packet.link_retry import RetryReceiver as ModelReceiver
from fredfab.model.packet.link_retry import RetrySender as ModelSender

PARAMS = PacketParams(SwitchParams(4, lanes=4, dtype="int16"), PacketFormat(packet_flits=4))
LINK = PARAMS.link
OFFER_FIELDS = [k for k, _ in LINK.fields if k != "lseq"]


def _offers(seed: int, n: int) -> list[LinkFlit]:
    rng = random.Random(seed)
    return [
        LINK.flit(rng.getrandbits(64), head=bool(k % 5 == 0), vc=k % 4, pkt=k % 16)
        for k in range(n)
    ]


def _model(offers, rates: FaultRates, seed: int, offer_p: float, cycles: int):
    """The model run: per cycle (ready, flit on the link, flit taken)."""
    s, r = ModelSender(), ModelReceiver(LINK)
    faults, rng = LinkFaults(rates, seed, LINK), random.Random(seed)
    pending, queue, trace = None, list(offers), []
    for _ in range(cycles):
        ack = r.ack
        got = r.take(faults.step(pending))
        s.ack(*ack)
        ready = s.ready
        new = queue.pop(0) if ready and queue and rng.random() < offer_p else None
        pending = s.send(new)
        trace.append((ready, pending, got))
    return trace, s, r, faults


def _rtl(offers, rates: FaultRates, seed: int, offer_p: float, cycles: int):
    m = Module()
    m.submodules.s = s = RetrySender(PARAMS)
    m.submodules.r = r = RetryReceiver(PARAMS)
    m.d.comb += s.ack.eq(r.ack)
    sim = Simulator(m)
    sim.add_clock(1e-8)
    faults, rng = LinkFaults(rates, seed, LINK), random.Random(seed)
    trace: list = []

    async def tb(ctx):
        queue = list(offers)
        for _ in range(cycles):
            wire = LINK.decode(ctx.get(s.tx.payload).as_bits()) if ctx.get(s.tx.valid) else None
            arrived = faults.step(wire)
            ctx.set(r.i.valid, arrived is not None)
            if arrived is not None:
                ctx.set(r.i.payload.as_value(), LINK.encode(arrived))
            got = LINK.decode(ctx.get(r.o.payload).as_bits()) if ctx.get(r.o.valid) else None
            ready = bool(ctx.get(s.i.ready))
            new = queue.pop(0) if ready and queue and rng.random() < offer_p else None
            ctx.set(s.i.valid, new is not None)
            if new is not None:  # the sending end takes a flit without its lseq
                ctx.set(s.i.payload, {k: int(getattr(new, k)) for k in OFFER_FIELDS})
            trace.append([ready, None, got])
            await ctx.tick()
            # What went on the link in that cycle shows on tx now (it is registered).
            trace[-1][1] = (
                LINK.decode(ctx.get(s.tx.payload).as_bits()) if ctx.get(s.tx.valid) else None
            )

    sim.add_testbench(tb)
    sim.run()
    return [tuple(t) for t in trace]


CASES = [
    (FaultRates(drop=0.05, corrupt=0.05), 1, 0.9),
    (FaultRates(drop=0.02, corrupt=0.02, burst=0.5), 2, 1.0),
    (FaultRates(drop=0.01, silence=2e-3), 3, 0.7),
]


@pytest.mark.parametrize("rates,seed,offer", CASES)
def test_rtl_is_the_model_cycle_for_cycle(rates, seed, offer):
    offers, cycles = _offers(seed, 600), 2500
    want, s, r, faults = _model(offers, rates, seed, offer, cycles)
    got = _rtl(offers, rates, seed, offer, cycles)
    assert got == want
    taken = [t for _, _, t in want if t is not None]
    # Every flit offered was taken once, in order, with its data (the lseq is the link's).
    assert [(f.data, f.vc, f.pkt, f.head) for f in taken] == [
        (f.data, f.vc, f.pkt, f.head) for f in offers
    ]
    assert s.replays > 0 and r.rejected > 0 and faults.dropped + faults.corrupted > 0
    if rates.silence:
        assert faults.silences > 0


def test_without_faults_nothing_is_replayed_and_the_link_runs_at_full_rate():
    offers = _offers(9, 400)
    trace, s, r, _ = _model(offers, FaultRates(), 9, 1.0, 420)
    assert s.replays == 0 and r.rejected == 0
    assert all(ready for ready, _, _ in trace[:400])  # the round trip never fills the buffer
    assert _rtl(offers, FaultRates(), 9, 1.0, 420) == trace


def test_a_dead_link_keeps_replaying_what_is_outstanding():
    """Nothing gets through: the sending end replays again after every timeout and never
    has more than REPLAY_DEPTH flits outstanding."""
    offers = _offers(4, 100)
    trace, s, _, _ = _model(offers, FaultRates(drop=0.999), 4, 1.0, 300)
    sent_new = sum(1 for ready, flit, _ in trace if ready and flit is not None)
    assert 0 < s.outstanding <= REPLAY_DEPTH and sent_new == s.next
    assert s.replays > 10 and s.replayed >= s.replays * s.outstanding - REPLAY_DEPTH
