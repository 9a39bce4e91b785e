"""The fabric's phase change (hw/fabric.py) in the Amaranth simulator: no switch changes
configuration while a flit of the old phase is anywhere in the fabric, links included, and
new-phase flits wait at the closed boundary ports."""

from __future__ import annotations

from amaranth.sim import Simulator

from fredfab.hw.fabric import FredFabric
from fredfab.hw.fabric_params import FabricParams

#: Cycles the output is held not ready while the old phase's flits sit in the fabric.
HOLD = 40


def test_select_waits_for_flits_in_links_and_holds_new_flits() -> None:
    # After reset every switch is the identity, so NPU 0 loops back to itself through L1.0
    # and three register slices on each of its two links.
    fab = FredFabric(FabricParams("tree:2x2", lanes=1, dtype="int16", link_delay=3))
    sim = Simulator(fab)
    sim.add_clock(1e-8)
    log: dict[str, list] = {"delivered": [], "selected": [], "new_accepted": []}

    async def bench(ctx) -> None:
        i0, o0, i1 = fab.i[0], fab.o[0], fab.i[1]
        ctx.set(o0.ready, 0)
        for k in range(4):  # the old phase: four flits, one packet
            ctx.set(i0.valid, 1)
            ctx.set(i0.payload, {"data": [100 + k], "last": int(k == 3)})
            await ctx.tick().until(i0.ready)
        ctx.set(i0.valid, 0)
        ctx.set(fab.select.valid, 1)
        ctx.set(fab.select.payload, 0)
        ctx.set(i1.payload, {"data": [7], "last": 1})
        for cycle in range(HOLD + 200):
            if cycle == 1:  # a new-phase flit, from the cycle after select rose (contract)
                ctx.set(i1.valid, 1)
            if cycle == HOLD:
                ctx.set(o0.ready, 1)
            _, _, sel, new_valid, new_ready, valid, data, busy = await ctx.tick().sample(
                fab.select.ready, i1.valid, i1.ready, o0.valid, o0.payload.data, fab.reconfiguring
            )
            if valid and cycle >= HOLD:
                log["delivered"].append((cycle, int(data[0])))
            if new_valid and new_ready:
                log["new_accepted"].append(cycle)
                ctx.set(i1.valid, 0)
            if sel:
                log["selected"].append(cycle)
                ctx.set(fab.select.valid, 0)
            assert busy or cycle == 0 or log["selected"], f"not reconfiguring in cycle {cycle}"
            if log["selected"] and log["new_accepted"]:
                break

    sim.add_testbench(bench)
    sim.run()
    assert [d for _, d in log["delivered"]] == [100, 101, 102, 103]
    (selected,) = log["selected"]
    assert selected > log["delivered"][-1][0]  # after the last old flit left the fabric
    assert log["new_accepted"][0] > selected  # the new flit waited for the new slot
