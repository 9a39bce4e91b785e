# amaranth: UnusedElaboratable=no
# (the depth test builds buffers only to see their constructor refuse them)
"""The room buffer (hw/room_buffer.py) in the Amaranth simulator: flits in order, none lost or
made up, under random senders and backpressure; ``ready``, ``valid`` and ``room`` exactly as
the flits held say; a sender a cycle behind that keeps to the buffer's rule never finds it
full, keeps an output under backpressure fed, and with the output always ready moves a flit
every cycle, one cycle from input to output."""

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


def _sender_a_cycle_behind(dut, n: int, stall: float, seed: int, exact: bool = True):
    """A testbench: a sender with ``n`` flits that sends only on the register of the rule
    (hw/room_buffer.py: ``room`` if it sent in the cycle before, ``i.ready`` if not; with
    ``exact`` False, ``room`` alone) and otherwise always has a flit; the output ready with
    probability 1 - ``stall``. Records the cycles each flit went in and came out, and the
    cycles the output was not valid after the first flit came out."""
    rng = np.random.default_rng(seed)
    log = {"in": [], "out": [], "flits": [], "dry": 0}

    async def tb(ctx):
        may_send, started, cycle = True, False, 0
        while len(log["out"]) < n:
            sending = may_send and len(log["in"]) < n
            ctx.set(dut.i.valid, sending)
            ctx.set(dut.i.payload, len(log["in"]) % (1 << WIDTH))
            ctx.set(dut.o.ready, rng.random() >= stall)
            *_, i_ready, o_valid, o_ready, o_payload, room = await ctx.tick().sample(
                dut.i.ready, dut.o.valid, dut.o.ready, dut.o.payload, dut.room
            )
            if sending:
                assert i_ready, f"cycle {cycle}: a flit sent on the rule the buffer cannot take"
                log["in"].append(cycle)
            if o_valid and o_ready:
                log["out"].append(cycle)
                log["flits"].append(o_payload)
            started = started or bool(o_valid)
            log["dry"] += int(started and not o_valid and len(log["in"]) < n)
            may_send = bool(room) if (sending or not exact) else bool(i_ready)
            cycle += 1

    return tb, log


@pytest.mark.parametrize("depth", [ROOM_DEPTH, 4])
@pytest.mark.parametrize("stall", [0.0, 0.3, 0.7])
def test_a_sender_a_cycle_behind_never_overflows(depth, stall):
    """The contract: a sender that keeps to the rule never offers a flit the buffer cannot
    take, and every flit comes out once, in order; with the output always ready it sends
    every cycle and each flit leaves one cycle after it went in."""
    dut = RoomBuffer(stream.Signature(WIDTH), depth)
    n = 300
    tb, log = _sender_a_cycle_behind(dut, n, stall, seed=int(stall * 10) + depth)
    _run(dut, tb, cycles=5000)
    assert log["flits"] == [k % (1 << WIDTH) for k in range(n)]
    if stall == 0.0:
        first = log["in"][0]
        assert log["in"] == list(range(first, first + n)), "a flit every cycle"
        assert log["out"] == [c + 1 for c in log["in"]], "one cycle through"


@pytest.mark.parametrize("stall", [0.2, 0.5, 0.8])
def test_a_sender_that_keeps_to_the_rule_keeps_the_output_fed(stall):
    """A sender that always has a flit and keeps to the rule keeps the buffer from running
    dry: after the first flit the output is valid in every cycle, whatever the backpressure,
    so an output misses none of the cycles it is ready. A sender that reads ``room`` alone
    stops while an entry is still free, and the output runs dry now and then: that is why
    the rule reads ``i.ready`` in a cycle the sender sent nothing."""
    for exact, dry in ((True, False), (False, True)):
        dut = RoomBuffer(stream.Signature(WIDTH))
        tb, log = _sender_a_cycle_behind(dut, 1000, stall, seed=int(stall * 10), exact=exact)
        _run(dut, tb, cycles=20000)
        assert (log["dry"] > 0) == dry, (exact, log["dry"])


@pytest.mark.parametrize("depth", [0, 2, True, 3.0])
def test_depth_is_checked(depth):
    with pytest.raises(ValueError, match="holds >= 3 flits"):
        RoomBuffer(stream.Signature(WIDTH), depth)
