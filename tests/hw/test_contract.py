"""Every rule of the manifest's ``contract`` (hw/contract.py), proved on the RTL in the
Amaranth simulator: what each source code does in a uSwitch of each kind, that the kind
rules are exactly what the encoder accepts, the link layout and cfg word order (a
configuration computed from the manifest alone, written out of order among ignored
words, runs an All-Reduce), ``last`` in sums, unused inputs, and the slots after reset."""

from __future__ import annotations

import itertools

import pytest
from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

from fredfab.hw.contract import contract as make_contract
from fredfab.hw.flit import flit_stream
from fredfab.hw.manifest import generate, load_manifest, manifest
from fredfab.hw.params import SwitchParams
from fredfab.hw.switch import FredSwitch
from fredfab.hw.uswitch import USwitch
from fredfab.model.switch.arches import build_topology
from fredfab.model.switch.config import ConfigError, Configuration, check_node_codes
from fredfab.model.switch.config_layout import ConfigLayout
from fredfab.model.switch.flow import Flow
from fredfab.model.switch.router import route
from fredfab.sim.verify.example_tb.render import (
    RouteError,
    check_codes,
    config_words,
    route_all_reduce,
)

# -- helpers ----------------------------------------------------------------------------


def _flit(port, data: int, last: int) -> dict:
    """A payload for ``port`` from the lanes' raw bits (lane 0 least significant)."""
    lanes = port.payload.shape()["data"].shape  # the flit's lane layout (hw/flit.py)
    return {"data": lanes.from_bits(data), "last": last}


def _representative_nodes() -> list:
    """One node of every (kind, n_in, n_out) shape in small Clos and crossbar switches."""
    seen = {}
    graphs = [build_topology(P, m) for P in (2, 3, 4, 5) for m in (2, 3, 4)]
    graphs += [build_topology(P, None, "xbar") for P in (3, 4)]
    for g in graphs:
        for n in g.nodes:
            seen.setdefault((n.kind, n.n_in, n.n_out), n)
    return list(seen.values())


NODES = _representative_nodes()
CONTRACT = make_contract()


def test_the_manifest_carries_the_contract(tmp_path):
    """The rules below are checked on CONTRACT; the manifest written to disk holds it."""
    _, j_path = generate(SwitchParams(ports=3, m=2, lanes=1, dtype="int8"), tmp_path)
    assert load_manifest(j_path)["contract"] == CONTRACT


def _node_dict(node) -> dict:
    return {"name": node.name, "kind": node.kind.value, "n_in": node.n_in, "n_out": node.n_out}


def _contract_allows(contract: dict, node, codes) -> bool:
    try:
        check_codes(contract, _node_dict(node), list(codes))
    except RouteError:
        return False
    return True


def _switch_sim(params: SwitchParams):
    """The switch under a clock domain whose reset the testbench can drive."""
    dut = FredSwitch(params)
    top = Module()
    top.domains.sync = cd = ClockDomain("sync")
    top.submodules.dut = dut
    sim = Simulator(top)
    sim.add_clock(1e-8)
    return dut, cd, sim, manifest(dut)


async def _write(ctx, dut, items) -> None:
    """cfg writes, one (slot, addr, data) per cycle (the port is always ready)."""
    for slot, addr, data in items:
        ctx.set(dut.cfg.valid, 1)
        ctx.set(dut.cfg.payload, {"slot": slot, "addr": addr, "data": data})
        _, _, ready = await ctx.tick().sample(dut.cfg.ready)
        assert ready
    ctx.set(dut.cfg.valid, 0)


async def _select(ctx, dut, slot: int, limit: int = 200) -> bool:
    """Raise select; True once it completes within ``limit`` cycles (left raised if not)."""
    ctx.set(dut.select.valid, 1)
    ctx.set(dut.select.payload, slot)
    for _ in range(limit):
        _, _, ready = await ctx.tick().sample(dut.select.ready)
        if ready:
            ctx.set(dut.select.valid, 0)
            return True
    return False


async def _stream(ctx, dut, send: dict, recv, cycles: int):
    """For ``cycles`` cycles, offer ``send[p]`` (lists of (data, last)) on inputs and take
    every output in ``recv``. Returns (flits accepted per input, flits received per output
    in ``recv``, the other outputs that were ever valid)."""
    idx = {p: 0 for p in send}
    got = {q: [] for q in recv}
    for q in recv:
        ctx.set(dut.o[q].ready, 1)
    ports = range(len(dut.o))
    strays = set()
    for _ in range(cycles):
        for p, flits in send.items():
            live = idx[p] < len(flits)
            ctx.set(dut.i[p].valid, live)
            if live:
                ctx.set(dut.i[p].payload, _flit(dut.i[p], *flits[idx[p]]))
        s = await ctx.tick().sample(
            *[dut.i[p].ready for p in send],
            *[dut.o[q].valid for q in ports],
            *[dut.o[q].payload for q in ports],
        )
        readies = s[2 : 2 + len(send)]
        valids = s[2 + len(send) : 2 + len(send) + len(ports)]
        payloads = s[2 + len(send) + len(ports) :]
        for p, r in zip(send, readies, strict=True):
            if r and idx[p] < len(send[p]):
                idx[p] += 1
        for q in ports:
            if valids[q] and q in got:
                got[q].append((payloads[q].data.as_bits(), int(payloads[q].last)))
            elif valids[q]:
                strays.add(q)
    for p in send:
        ctx.set(dut.i[p].valid, 0)
    return idx, got, strays


def _lanes(values, bits: int) -> int:
    return sum((v % (1 << bits)) << (i * bits) for i, v in enumerate(values))


def _flits(P: int, n: int, lanes: int, bits: int, last=lambda p, f: f == 2):
    """n flits per port with lane values that overflow ``bits`` when summed."""
    return {
        p: [
            (_lanes([(p + 1) * 91 + f * 37 + k * 5 for k in range(lanes)], bits), int(last(p, f)))
            for f in range(n)
        ]
        for p in range(P)
    }


def _sum_flit(flits, f: int, lanes: int, bits: int) -> int:
    mask = (1 << bits) - 1
    return _lanes(
        [sum((flits[p][f][0] >> (k * bits)) & mask for p in flits) & mask for k in range(lanes)],
        bits,
    )


# -- source codes and kind rules --------------------------------------------------------


@pytest.mark.parametrize("node", NODES, ids=lambda n: f"{n.kind}{n.n_in}x{n.n_out}")
def test_kind_rules_are_exactly_what_the_encoder_accepts(node):
    contract = CONTRACT
    allowed = 0
    for codes in itertools.product(range(1 << node.code_bits), repeat=node.n_out):
        try:
            check_node_codes(node, codes)
            accepted = True
        except ConfigError:
            accepted = False
        assert _contract_allows(contract, node, codes) == accepted, codes
        allowed += accepted
    assert allowed > 1  # something besides the all-nothing tuple


@pytest.mark.parametrize("node", NODES, ids=lambda n: f"{n.kind}{n.n_in}x{n.n_out}")
def test_every_allowed_code_does_what_the_contract_says(node):
    """A uSwitch of the node's shape, every allowed code tuple in turn, outputs ready:
    code 0 is never valid; 1 + i carries input i (data and last); the sum code carries the
    lane-wise wrapping sum of inputs 0 and 1 with input 0's last, valid only when both are
    valid; an input is ready exactly when some output takes it (alone or in the sum)."""
    contract = CONTRACT
    sc = contract["source_codes"]
    reducing = contract["kinds"][node.kind.value]["reducing"]
    lanes, bits = 2, 8
    fields = ConfigLayout.of_nodes([node]).node_fields(node.index)
    usw = USwitch(node, fields, flit_stream(bits, lanes), "int8", lanes)
    # A clock domain of the bench's own: a mux without an adder has no register of its
    # own (its ready comes from its select), yet the bench steps the codes cycle by cycle.
    top = Module()
    top.domains.sync = ClockDomain("sync")
    top.submodules.usw = usw
    sim = Simulator(top)
    sim.add_clock(1e-8)
    tuples = [
        c
        for c in itertools.product(range(1 << node.code_bits), repeat=node.n_out)
        if _contract_allows(contract, node, c)
    ]
    data = [_lanes([100 + 60 * i, 200 - 30 * i], bits) for i in range(node.n_in)]
    lasts = [int(i % 2 == 0) for i in range(node.n_in)]  # input 0's last differs from 1's
    sum_code = node.n_in + sc["sum_offset"] if reducing else None
    wrapped_sum = _lanes(
        [((data[0] >> (8 * k)) + (data[1] >> (8 * k))) & 255 for k in (0, 1)] if reducing else [],
        bits,
    )
    checked = []

    async def tb(ctx):
        for o in usw.o:
            ctx.set(o.ready, 1)
        for codes in tuples:
            ctx.set(usw.codes, dict(enumerate(codes)))
            for both_valid in (True, False):
                for i, port in enumerate(usw.i):
                    # Second pass: input 1 idle, so a sum has one operand only.
                    ctx.set(port.valid, both_valid or i != 1)
                    ctx.set(port.payload, _flit(port, data[i], lasts[i]))
                for q, c in enumerate(codes):
                    valid, payload = ctx.get(usw.o[q].valid), ctx.get(usw.o[q].payload)
                    if c == sc["none"]:
                        assert not valid, (codes, q)
                    elif c == sum_code:
                        assert valid == both_valid, (codes, q)  # a join waits for both
                        if valid:
                            assert payload.data.as_bits() == wrapped_sum, (codes, q)
                            assert int(payload.last) == lasts[sc["sum_operands"][0]]
                    else:
                        i = c - sc["input_offset"]
                        assert valid == (both_valid or i != 1), (codes, q)
                        assert (payload.data.as_bits(), int(payload.last)) == (data[i], lasts[i])
                direct = {c - sc["input_offset"] for c in codes if c not in (sc["none"], sum_code)}
                in_sum = sum_code is not None and sum_code in codes
                for i, port in enumerate(usw.i):
                    if not (both_valid or i != 1):
                        continue  # idle: nothing to accept
                    operand = in_sum and i in sc["sum_operands"]
                    # The sum consumes both operands together: one alone is not taken.
                    want = (i in direct or operand) and not (operand and not both_valid)
                    assert ctx.get(port.ready) == want, (codes, i, both_valid)
                await ctx.tick()
            checked.append(codes)

    sim.add_testbench(tb)
    sim.run()
    assert checked == tuples and len(tuples) > 1


# -- links, cfg word order --------------------------------------------------------------


@pytest.mark.parametrize("P,m", [(2, 2), (3, 3), (4, 2), (5, 3), (8, 3)])
def test_all_reduce_from_the_manifest_alone(P, m):
    """Codes chosen from the manifest's topology (links, boundary, codes, kind rules) and
    packed as contract.cfg says give the model's encoding of the same codes; written through
    cfg last word first, among words the contract says are ignored (addr >= words_per_slot,
    slot >= slots, both of which would otherwise land in slot 1 or beyond), they run an
    All-Reduce: every output gets the wrapping sum of every input."""
    params = SwitchParams(ports=P, m=m, lanes=2, dtype="int8", slots=5, word_width=16)
    dut, _, sim, info = _switch_sim(params)
    codes = route_all_reduce(info)
    words = config_words(info, codes)
    model = Configuration(params.topology, tuple(tuple(c) for c in codes))
    assert words == model.to_words(params.word_width)
    nw, addr_bits = len(words), info["config"]["cfg_payload"]["addr"]["width"]
    # Zero words: landing in slot 1 they would make it idle (all ones happen to be an
    # All-Reduce on the Clos: every uSwitch adds or copies).
    ignored = [(0, a, 0) for a in range(nw, 1 << addr_bits)]  # would hit slot 1
    slot_bits = info["config"]["cfg_payload"]["slot"]["width"]
    ignored += [(s, 0, 0) for s in range(params.slots, 1 << slot_bits)]
    flits = _flits(P, 5, 2, 8)
    result = {}

    async def tb(ctx):
        await _write(ctx, dut, [(1, a, w) for a, w in reversed(list(enumerate(words)))])
        await _write(ctx, dut, ignored)
        assert await _select(ctx, dut, 1)
        result["got"] = await _stream(ctx, dut, flits, range(P), 60)

    sim.add_testbench(tb)
    sim.run()
    sent, got, strays = result["got"]
    assert all(n == 5 for n in sent.values()) and not strays
    for q in range(P):
        assert got[q] == [(_sum_flit(flits, f, 2, 8), int(f == 2)) for f in range(5)], q


def test_writing_the_active_slot_changes_nothing_until_it_is_selected():
    P = 4
    params = SwitchParams(ports=P, m=2, lanes=1, dtype="int16")
    dut, _, sim, info = _switch_sim(params)
    words = config_words(info, route_all_reduce(info))
    flits = _flits(P, 3, 1, 16)
    out = {}

    async def tb(ctx):
        await _write(ctx, dut, [(1, a, w) for a, w in enumerate(words)])
        assert await _select(ctx, dut, 1)
        await _write(ctx, dut, [(1, a, 0) for a in range(len(words))])  # now the idle config
        out["before"] = await _stream(ctx, dut, flits, range(P), 40)
        assert await _select(ctx, dut, 1)
        out["after"] = await _stream(ctx, dut, flits, range(P), 40)

    sim.add_testbench(tb)
    sim.run()
    sent, got, _ = out["before"]
    assert all(len(got[q]) == 3 for q in range(P)) and all(n == 3 for n in sent.values())
    sent, got, strays = out["after"]
    assert not any(sent.values()) and not any(got.values()) and not strays


# -- last in sums -----------------------------------------------------------------------


def _lead_port(info: dict, codes, q: int) -> int:
    """The switch input whose flits reach output q through input 0 of every sum."""
    c = info["contract"]
    sc, boundary = c["source_codes"], c["links"]["boundary"]
    topo = info["config"]["topology"]
    driver = {(d, dp): (s, sp) for s, sp, d, dp in topo["links"]}
    node, port = driver[(boundary, q)]
    while node != boundary:
        n = topo["nodes"][node]
        code = codes[node][port]
        is_sum = code == n["n_in"] + sc["sum_offset"]
        k = sc["sum_operands"][0] if is_sum else code - sc["input_offset"]
        node, port = driver[(node, k)]
    return port


@pytest.mark.parametrize("P", [4, 5])
def test_sum_last_follows_input_0(P):
    """An All-Reduce (the model router's choice) whose inputs end packets at different
    flits: every output's last bits are those of its lead port (contract sum_last), and the
    data is still the full sum."""
    params = SwitchParams(ports=P, m=3, lanes=1, dtype="int16")
    dut, _, sim, info = _switch_sim(params)
    routing = route([Flow(range(P), range(P))], P, 3)
    codes = [list(c) for c in routing.config.codes]
    n = 8
    flits = _flits(P, n, 1, 16, last=lambda p, f: (f + 1) % (p + 2) == 0)
    out = {}

    async def tb(ctx):
        await _write(ctx, dut, [(1, a, w) for a, w in enumerate(routing.config.to_words(32))])
        assert await _select(ctx, dut, 1)
        out["got"] = await _stream(ctx, dut, flits, range(P), 60)

    sim.add_testbench(tb)
    sim.run()
    _, got, _ = out["got"]
    leads = set()
    for q in range(P):
        lead = _lead_port(info, codes, q)
        leads.add(lead)
        assert [g[1] for g in got[q]] == [flits[lead][f][1] for f in range(n)], q
        assert [g[0] for g in got[q]] == [_sum_flit(flits, f, 1, 16) for f in range(n)]
    # The ports' patterns differ, so the lead port is the only one that fits.
    assert len({tuple(x[1] for x in v) for v in flits.values()}) == P and leads


# -- unused inputs ----------------------------------------------------------------------


def test_unused_input_is_never_ready_and_holds_select_off():
    P = 4
    params = SwitchParams(ports=P, m=3, lanes=1, dtype="int16")
    dut, _, sim, _ = _switch_sim(params)
    routing = route([Flow([0], [1])], P, 3)
    out = {}

    async def tb(ctx):
        await _write(ctx, dut, [(1, a, w) for a, w in enumerate(routing.config.to_words(32))])
        assert await _select(ctx, dut, 1)
        send = {0: [(7, 0), (8, 0), (9, 1)], 3: [(5, 1)]}
        out["run"] = await _stream(ctx, dut, send, [1], 50)
        # Port 3 keeps offering its flit while the phase change is requested.
        ctx.set(dut.i[3].valid, 1)
        ctx.set(dut.i[3].payload, _flit(dut.i[3], 5, 1))
        out["held"] = await _select(ctx, dut, 0, limit=200)
        out["reconfiguring"] = ctx.get(dut.reconfiguring)
        ctx.set(dut.i[3].valid, 0)  # withdrawn: the change completes
        out["done"] = await _select(ctx, dut, 0, limit=50)

    sim.add_testbench(tb)
    sim.run()
    sent, got, strays = out["run"]
    assert sent == {0: 3, 3: 0}  # never accepted on the unused input
    assert got[1] == [(7, 0), (8, 0), (9, 1)] and not strays  # other ports undisturbed
    assert out["held"] is False and out["reconfiguring"] == 1
    assert out["done"] is True


# -- reset ------------------------------------------------------------------------------


def test_slots_after_power_up_and_after_rst():
    """Power-up: slot 1 is the idle configuration, slot 0 the identity. rst: the identity is
    active again and slot reads 0, but slots written before rst (slot 0 included) keep
    their words."""
    P = 4
    params = SwitchParams(ports=P, m=3, lanes=1, dtype="int16")
    dut, cd, sim, info = _switch_sim(params)
    assert info["contract"]["reset"]["active_slot"] == 0
    shift = route([Flow([p], [(p + 1) % P]) for p in range(P)], P, 3).config.to_words(32)
    swap = route([Flow([p], [p ^ 1]) for p in range(P)], P, 3).config.to_words(32)
    one = {p: [(10 + p, 1)] for p in range(P)}
    out = {}

    async def tb(ctx):
        assert await _select(ctx, dut, 1)  # never written
        out["idle"] = await _stream(ctx, dut, one, range(P), 30)
        assert await _select(ctx, dut, 0)
        out["slot0"] = await _stream(ctx, dut, one, range(P), 30)
        await _write(ctx, dut, [(0, a, w) for a, w in enumerate(swap)])
        await _write(ctx, dut, [(1, a, w) for a, w in enumerate(shift)])
        assert await _select(ctx, dut, 1)
        ctx.set(cd.rst, 1)
        await ctx.tick()
        ctx.set(cd.rst, 0)
        out["slot_after_rst"] = ctx.get(dut.slot)
        out["rst"] = await _stream(ctx, dut, one, range(P), 30)
        assert await _select(ctx, dut, 1)
        out["kept1"] = await _stream(ctx, dut, one, range(P), 30)
        assert await _select(ctx, dut, 0)
        out["kept0"] = await _stream(ctx, dut, one, range(P), 30)

    sim.add_testbench(tb)
    sim.run()

    def moved(key):
        sent, got, strays = out[key]
        assert not strays
        return {q: [d for d, _ in got[q]] for q in range(P)}, sent

    got, sent = moved("idle")
    assert not any(sent.values()) and not any(got.values())
    identity = {q: [10 + q] for q in range(P)}
    assert moved("slot0")[0] == identity
    assert out["slot_after_rst"] == 0 and moved("rst")[0] == identity
    assert moved("kept1")[0] == {q: [10 + (q - 1) % P] for q in range(P)}
    assert moved("kept0")[0] == {q: [10 + (q ^ 1)] for q in range(P)}
