"""The soak harness's blocks (fredfab.sim.verify.soak_harness) on the Amaranth simulator,
against a Python model of the same sequences."""

from __future__ import annotations

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from fredfab.sim.verify.soak_harness import Checker, Generator, XorShift64, mix_key, seed

M64 = (1 << 64) - 1


def xs(x: int) -> int:
    x ^= (x << 13) & M64
    x ^= x >> 7
    return x ^ ((x << 17) & M64)


def rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & M64


def mix(x: int, width: int) -> int:
    chunks = sum(rotl(x, (17 * j) % 64) << (64 * j) for j in range(-(-width // 64)))
    return (chunks ^ mix_key(width)) & ((1 << width) - 1)


def flits(port: int, flow_id: int, n: int, width: int) -> list[tuple[int, int]]:
    """The first ``n`` (data, last) flits the generator of ``port`` sends."""
    data, last, out = seed("data", port), seed("last", flow_id), []
    for _ in range(n):
        out.append((mix(data, width), int(last & 7 == 0)))
        data, last = xs(data), xs(last)
    return out


def run(m: Module, *testbenches) -> None:
    sim = Simulator(m)
    sim.add_clock(1e-8)
    for tb in testbenches:
        sim.add_testbench(tb)
    sim.run()


def test_mix_model_rotates_chunks():
    x = 0x0123456789ABCDEF
    assert mix(x, 64) == x ^ seed("mix", 0)
    assert mix(x, 100) >> 64 == (rotl(x, 17) ^ seed("mix", 1)) & ((1 << 36) - 1)


def test_xorshift64_advances_only_when_asked():
    m = Module()
    m.submodules.seq = seq = XorShift64(0x1234)
    pattern = [1, 0, 1, 1, 0, 0, 1, 1, 1, 0] * 3

    async def tb(ctx):
        want = 0x1234
        for adv in pattern:
            assert ctx.get(seq.value) == want
            ctx.set(seq.advance, adv)
            await ctx.tick()
            want = xs(want) if adv else want
        assert ctx.get(seq.value) == want != 0x1234

    run(m, tb)


@pytest.mark.parametrize("port", [0, 1, 2])  # each idle pattern
def test_generator_sends_its_sequence_and_holds_valid(port):
    width, n = 80, 60
    m = Module()
    m.submodules.gen = gen = Generator(width, 16, port, flow_id=3)
    key = Signal(width, init=mix_key(width))
    m.d.comb += gen.mix_key.eq(key)
    got, offered = [], []

    async def tb(ctx):
        ctx.set(gen.running, 1)
        cycle = 0
        while len(got) < n:
            ready = cycle % 3 != 1  # backpressure one cycle in three
            ctx.set(gen.o.ready, ready)
            _, _, valid, payload = await ctx.tick().sample(gen.o.valid, gen.o.payload)
            flit = (payload.data.as_bits(), int(payload.last))
            if offered and offered[-1] is not None:  # a waiting flit stays put
                assert valid and flit == offered[-1]
            offered.append(flit if valid and not ready else None)
            if valid and ready:
                got.append(flit)
            cycle += 1

    run(m, tb)
    assert got == flits(port, 3, n, width)
    assert any(last for _, last in got)


def _check(inputs: list[int], send: list[tuple[int, int]], fault_index: int | None) -> list[int]:
    """Feed ``send`` to a checker of a flow with ``inputs`` (element type 16 bits); return the
    indices it flags."""
    width = 32
    m = Module()
    m.submodules.chk = chk = Checker(width, 16, port=3, inputs=inputs, flow_id=1)
    key = Signal(width, init=mix_key(width))
    m.d.comb += chk.mix_key.eq(key)
    flagged, done = [], []

    lanes = chk.flit["data"].shape  # the flit's lane layout (hw/flit.py)

    async def tb(ctx):
        ctx.set(chk.running, 1)
        if fault_index is not None:
            ctx.set(chk.fault, 1)
            ctx.set(chk.fault_index, fault_index)
        for k, (data, last) in enumerate(send):
            ctx.set(chk.i.valid, 1)
            ctx.set(chk.i.payload, {"data": lanes.from_bits(data), "last": last})
            await ctx.tick().until(chk.i.ready)
            if ctx.get(chk.report.count) != k + 1:
                flagged.append(-1)
        ctx.set(chk.i.valid, 0)
        done.append(True)

    async def watch(ctx):
        async for _, _, fire, bad, count in ctx.tick().sample(
            chk.report.fire, chk.report.bad, chk.report.count
        ):
            if fire and bad:
                flagged.append(count)

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.add_process(watch)
    sim.run_until(1e-8 * (40 * len(send) + 200))
    assert done, "the checker stopped accepting flits"
    return flagged


def _wrap_sum(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    def add(x: int, y: int) -> int:
        lo = ((x & 0xFFFF) + (y & 0xFFFF)) & 0xFFFF
        hi = ((x >> 16) + (y >> 16)) & 0xFFFF
        return hi << 16 | lo

    return [(add(x, y), last) for (x, last), (y, _) in zip(a, b, strict=True)]


def test_checker_accepts_the_wrap_sum_of_its_inputs():
    n = 40
    total = _wrap_sum(flits(0, 1, n, 32), flits(5, 1, n, 32))
    assert _check([5, 0], total, None) == []


def test_checker_flags_a_wrong_sum_a_wrong_last_and_a_fault():
    n = 40
    total = _wrap_sum(flits(0, 1, n, 32), flits(5, 1, n, 32))
    bad = list(total)
    bad[7] = (bad[7][0] ^ 0x10000, bad[7][1])  # upper lane off by one bit
    bad[20] = (bad[20][0], 1 - bad[20][1])
    assert _check([0, 5], bad, None) == [7, 20]
    assert _check([0, 5], total, fault_index=13) == [13]
    assert _check([0], total, None)[0] == 0  # the sum is not input 0's sequence


def test_silent_output_flags_every_flit():
    m = Module()
    m.submodules.chk = chk = Checker(32, 16, port=0)  # always ready

    async def tb(ctx):
        ctx.set(chk.running, 1)
        ctx.set(chk.i.valid, 1)
        ctx.set(chk.i.payload, {"data": chk.flit["data"].shape.from_bits(5), "last": 0})
        _, _, fire, bad = await ctx.tick().sample(chk.report.fire, chk.report.bad)
        assert fire and bad

    run(m, tb)
