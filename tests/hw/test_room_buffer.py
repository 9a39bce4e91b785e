# amaranth: UnusedElaboratable=no
# (the depth test builds buffers only to see their constructor refuse them)
"""The room buffer (hw/room_buffer.py) in the Amaranth simulator: flits in order, none lost or
made up, under random senders and backpressure; ``ready``, ``valid`` and ``room`` exactly as
the flits held say; a sender that keeps to ``room`` a cycle late never finds the buffer full
and, with the output always ready, moves a flit every cycle one cycle from input to output."""

import numpy as np
import pytest
from amaranth.lib import stream
from amaranth.sim import Simulator

from fredfab.hw.room_buffer import ROOM_DEPTH, RoomBuffer

WIDTH = 8


def _run(dut, *testbenches, cycles: int) -> None:
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    for tb in testbenches:
        sim.add_testbench(tb)
    sim.run_until(cycles * 1e-8)


@pytest.mark.parametrize("depth", [ROOM_DEPTH, 4])
@pytest.mark.parametrize("offer,stall", [(0.9, 0.6), (0.5, 0.2), (1.0, 0.0), (0.3, 0.8)])
def test_any_sender_any_receiver(depth, offer, stall):
    """A sender that waits for ``i.ready`` (the stream rules): the flits come out in order
    and unchanged, and the handshake signals follow the count held, every cycle."""
    dut = RoomBuffer(stream.Signature(WIDTH), depth)
    rng = np.random.default_rng(int(offer * 100) + int(stall * 10) + depth)
    flits = [int(x) for x in rng.integers(0, 1 << WIDTH, 200)]
    got: list[int] = []
    checked = {"cycles": 0}

    async def tb(ctx):
        held = 0
        k = 0
        while len(got) < len(flits):
            offering = k < len(flits) and rng.random() < offer
            ready = rng.random() >= stall
            ctx.set(dut.i.valid, offering)
            ctx.set(dut.i.payload, flits[k] if k < len(flits) else 0)
            ctx.set(dut.o.ready, ready)
            *_, i_ready, o_valid, o_payload, room, busy = await ctx.tick().sample(
                dut.i.ready, dut.o.valid, dut.o.payload, dut.room, dut.busy
            )
            assert i_ready == (held < depth), (k, held)
            assert o_valid == busy == (held > 0), (k, held)
            assert room == (held <= depth - 2), (k, held)
            pushed = offering and i_ready
            popped = ready and o_valid
            if popped:
                got.append(o_payload)
            k += int(pushed)
            held += int(pushed) - int(popped)
            checked["cycles"] += 1
        ctx.set(dut.i.valid, 0)

    _run(dut, tb, cycles=5000)
    assert got == flits
    assert checked["cycles"] >= len(flits)


@pytest.mark.parametrize("stall", [0.0, 0.3, 0.7])
def test_a_sender_a_cycle_behind_never_overflows(stall):
    """The contract: a sender that registers ``room`` and sends in the next cycle only if it
    was high (and otherwise always has a flit) never offers a flit the buffer cannot take;
    with the output always ready it sends every cycle and each flit leaves one cycle after
    it went in."""
    dut = RoomBuffer(stream.Signature(WIDTH))
    rng = np.random.default_rng(int(stall * 10))
    n = 300
    got: list[tuple[int, int]] = []  # (flit, cycle it left)
    sent: list[int] = []  # cycle each flit went in

    async def tb(ctx):
        may_send = True  # the sender's register: room in the previous cycle (reset: empty)
        cycle = 0
        while len(got) < n:
            sending = may_send and len(sent) < n
            ctx.set(dut.i.valid, sending)
            ctx.set(dut.i.payload, len(sent) % (1 << WIDTH))
            ctx.set(dut.o.ready, rng.random() >= stall)
            *_, i_ready, o_valid, o_ready, o_payload, room = await ctx.tick().sample(
                dut.i.ready, dut.o.valid, dut.o.ready, dut.o.payload, dut.room
            )
            if sending:
                assert i_ready, f"cycle {cycle}: a flit sent on room the buffer cannot take"
                sent.append(cycle)
            if o_valid and o_ready:
                got.append((o_payload, cycle))
            may_send = bool(room)
            cycle += 1

    _run(dut, tb, cycles=5000)
    assert [flit for flit, _ in got] == [k % (1 << WIDTH) for k in range(n)]
    if stall == 0.0:
        assert sent == list(range(sent[0], sent[0] + n)), "a flit every cycle"
        assert [c for _, c in got] == [c + 1 for c in sent], "one cycle through"


@pytest.mark.parametrize("depth", [0, 2, True, 3.0])
def test_depth_is_checked(depth):
    with pytest.raises(ValueError, match="holds >= 3 flits"):
        RoomBuffer(stream.Signature(WIDTH), depth)
