"""Harnesses of the circuit switch (hw/switch.py: control unit + interconnect): phase
changes and slot writes, at the switch's ports.

The environment is any sender on every port (packets of any length, ``last`` free), any
receiver, any configuration words on ``cfg`` at any time (slots the router never wrote
included), and any ``select`` requests. ``mixing_harness`` assumes the sender contract of
hw/control.py and nothing more: when ``select`` rises every sender has finished the old phase
(its packets ended, its flits accepted, none offered in that cycle); new-phase flits come from
the next cycle on. Without it, a sender that keeps offering packets holds the change off and
its packets run under the old configuration, with the old phase, as hw/control.py says.

No mixing (``mixing_harness``). Each flit carries its phase's mark in its data: phase e
(the count of select requests, modulo 3) puts 1 in the five-bit field e of an int16 lane.
A sum of up to five flits of one phase keeps one field non-zero; flits of two phases added
together would make two. Asserted: every output flit has one non-zero field at most, and the
outputs keep the stream rules.

Slot writes (``slot_write_harness``): the configuration the interconnect runs (the control
unit's ``active`` output, the interconnect's ``config`` input) changes only in a cycle that
follows one in which the switch said ``reconfiguring``: a write to any slot, the running one
included, leaves the running phase's routing alone.

Slot loads (``slot_load_harness``): a shadow copy of one slot (any slot, ``AnyConst``)
follows the ``cfg`` writes to it; when a ``select`` of that slot completes, the active
configuration is the shadow, word for word.
"""

from __future__ import annotations

from amaranth.asserts import AnyConst, AnySeq
from amaranth.hdl import Assert, Assume, Cat, Module, Mux, Signal

from fredfab.hw.control import cfg_layout, default_config, n_words
from fredfab.hw.params import SwitchParams
from fredfab.hw.switch import FredSwitch
from fredfab.sim.formal import streams
from fredfab.sim.formal.mutation import mutated
from fredfab.sim.formal.runner import harness_module

#: Bits of one phase's field in ``mixing_harness``'s data (a sum of P <= 5 ones fits).
MARK_BITS = 5
PHASE_MARKS = 3
#: Configuration word width of ``slot_load_harness``: two words per slot at P = 4 (a copy
#: of several words, in as few cycles as that allows, so the bounded check reaches a load
#: after several writes).
LOAD_WORD_WIDTH = 12
#: Configuration word width of ``mixing_harness``: one word per slot at P = 4 and m = 2, so
#: that a phase with a reduction is loaded within a few cycles and the bounded check can
#: reach a second phase change behind it.
MIXING_WORD_WIDTH = 24


def switch_params(ports: int, m: int, dtype: str = "int8", word_width: int = 8) -> SwitchParams:
    return SwitchParams(ports=ports, m=m, lanes=1, dtype=dtype, word_width=word_width)


def _free_cfg(m: Module, sw: FredSwitch) -> None:
    """Any configuration word at any time (the port is always ready)."""
    layout = cfg_layout(sw.params)
    m.d.comb += [sw.cfg.valid.eq(AnySeq(1)), sw.cfg.payload.eq(AnySeq(layout.size))]


def _select_requests(m: Module, sw: FredSwitch) -> tuple[Signal, Signal]:
    """Any select requests that keep the stream rules; (a request rises now, the requests
    so far modulo 3)."""
    streams.free_input(m, sw.select, "select")
    was = Signal(name="select_was_waiting")
    m.d.sync += was.eq(sw.select.valid & ~sw.select.ready)
    rise = Signal(name="select_rise")
    m.d.comb += rise.eq(sw.select.valid & ~was)
    phase = Signal(range(PHASE_MARKS), name="env_phase")
    with m.If(rise):
        m.d.sync += phase.eq(Mux(phase == PHASE_MARKS - 1, 0, phase + 1))
    return rise, phase


def mixing_harness(ports: int = 4, m_: int = 2, mutant: bool = False) -> Module:
    params = switch_params(ports, m_, dtype="int16", word_width=MIXING_WORD_WIDTH)
    m = harness_module()
    sw = FredSwitch(params)
    if mutant:
        # Ports that never close for a phase change: new flits meet old ones inside.
        mutated(sw.control, _ports_always_open)
    m.submodules.sw = sw
    _free_cfg(m, sw)
    rise, phase = _select_requests(m, sw)
    for p in range(ports):
        i = sw.i[p]
        # A flit belongs to the phase of the cycle it is first offered in (the select requests
        # made before it); a flit held across cycles keeps it.
        stalled = Signal(name=f"i{p}_stalled")
        kept = Signal(range(PHASE_MARKS), name=f"i{p}_kept_phase")
        which = Signal(range(PHASE_MARKS), name=f"i{p}_phase")
        m.d.comb += which.eq(Mux(stalled, kept, phase))
        m.d.sync += [kept.eq(which), stalled.eq(i.valid & ~i.ready)]
        inside = Signal(name=f"i{p}_inside")  # the sender's packet has begun, not ended
        with m.If(streams.transfer(i)):
            m.d.sync += inside.eq(~i.payload.last)
        mark = Signal(params.data_width, name=f"i{p}_mark")
        with m.Switch(which):
            for e in range(PHASE_MARKS):
                with m.Case(e):
                    m.d.comb += mark.eq(1 << (MARK_BITS * e))
        streams.free_input(m, i, f"i{p}", payload=Cat(mark, AnySeq(1)))
        with m.If(rise):
            m.d.comb += Assume(~i.valid & ~inside, f"i{p}: old phase finished as select rises")
        streams.free_ready(m, sw.o[p])
        streams.assert_rules(m, sw.o[p], f"o{p}")
    for q in range(ports):
        o = sw.o[q]
        data = o.payload.data.as_value()
        used = [data[MARK_BITS * e : MARK_BITS * (e + 1)] != 0 for e in range(PHASE_MARKS)]
        pairs = [used[a] & used[b] for a in range(PHASE_MARKS) for b in range(a + 1, PHASE_MARKS)]
        with m.If(o.valid):
            m.d.comb += Assert(~Cat(*pairs).any(), f"o{q}: a flit of one phase only")
    return m


def _ports_always_open(m: Module, control) -> None:
    m.d.comb += control.open.eq(-1)


def _cfg_into_active(m: Module, control) -> None:
    """A slot write that also lands in the running configuration's first word."""
    width = control.params.word_width
    with m.If(control.cfg.valid):
        m.d.sync += control.active.as_value()[:width].eq(control.cfg.payload.data)


def _load_flips_bit0(m: Module, control) -> None:
    """A phase change that ends with bit 0 of the loaded configuration inverted."""
    with m.If(control.reconfiguring & ~control.select.ready):
        m.d.sync += control.active.as_value()[0].eq(~control.active.as_value()[0])


def _free_switch(m: Module, params: SwitchParams, fault) -> FredSwitch:
    """The switch in ``m`` with any cfg writes, select requests and traffic; ``fault`` (or
    None) applied to its control unit."""
    sw = FredSwitch(params)
    if fault is not None:
        mutated(sw.control, fault)
    m.submodules.sw = sw
    _free_cfg(m, sw)
    _select_requests(m, sw)
    for p in range(params.ports):
        streams.free_input(m, sw.i[p], f"i{p}")
        streams.free_ready(m, sw.o[p])
    return sw


def slot_write_harness(ports: int = 4, m_: int = 2, mutant: bool = False) -> Module:
    m = harness_module()
    sw = _free_switch(m, switch_params(ports, m_), _cfg_into_active if mutant else None)
    active = sw.interconnect.config.as_value()
    before = Signal.like(active, name="active_before")
    was_reconfiguring = Signal(name="was_reconfiguring")
    started = Signal(name="started")
    m.d.sync += [before.eq(active), was_reconfiguring.eq(sw.reconfiguring), started.eq(1)]
    with m.If(started & ~was_reconfiguring):
        m.d.comb += Assert(active == before, "active: changes only in a phase change")
    with m.If(~sw.reconfiguring):
        m.d.comb += Assert(sw.select.ready == 0, "select: completes only in a phase change")
    return m


def slot_load_harness(ports: int = 4, m_: int = 2, mutant: bool = False) -> Module:
    params = switch_params(ports, m_, word_width=LOAD_WORD_WIDTH)
    m = harness_module()
    sw = _free_switch(m, params, _load_flips_bit0 if mutant else None)
    nw, width = n_words(params), params.word_width
    watched = AnyConst(len(sw.select.payload))
    m.d.comb += Assume(watched < params.slots, "watched: a slot that exists")
    reset_words = default_config(params).to_words(width)
    shadow = [
        Signal(width, name=f"shadow{w}", init=0) for w in range(nw)
    ]  # slot 0's reset contents are set below
    boot = Signal(init=1, name="boot")
    m.d.sync += boot.eq(0)
    cfg = sw.cfg.payload
    for w in range(nw):
        with m.If(boot & (watched == 0)):
            m.d.comb += Assume(shadow[w] == reset_words[w], "shadow: slot 0 starts as reset")
        with m.If(sw.cfg.valid & (cfg.slot == watched) & (cfg.addr == w)):
            m.d.sync += shadow[w].eq(cfg.data)
    # The contract: no write to the slot being loaded while the phase change runs.
    with m.If(sw.reconfiguring & (sw.select.payload == watched)):
        m.d.comb += Assume(~(sw.cfg.valid & (cfg.slot == watched)), "cfg: loaded slot not written")
    bits = len(sw.interconnect.config.as_value())
    with m.If(sw.select.valid & sw.select.ready & (sw.select.payload == watched)):
        m.d.comb += Assert(
            sw.interconnect.config.as_value() == Cat(*shadow)[:bits],
            "active: the selected slot's words, as written",
        )
    return m
