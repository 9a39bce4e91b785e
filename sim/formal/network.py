"""Harnesses of the whole interconnect (hw/interconnect.py), Clos or crossbar, built by the
generator from ``SwitchParams`` with one int8 lane (the integer adder).

Every node registers its configuration field (hw/interconnect.py), so a word applies from
the cycle after it is set; the control units admit no flit until then (they change the
configuration only while the switch is drained and its ports closed). The harnesses keep
that contract: the word is set in the first cycle and no sender offers a flit in it.

Function (``function_harness``): the interconnect without register slices
(``regs_per_stage=0``, so an output shows this cycle's inputs), configured by ANY word the
model's decoder accepts (``AnyConst``, assumed accepted by model/switch/config.py's rules),
any senders with any data (from the second cycle on), any receivers. Asserted at every
output port, every cycle: an output the model leaves silent is never valid; a valid output
has every input the model adds into it valid, and its data are the wrapping integer sum of
exactly those inputs' data.
The data are universally quantified, so equal sums for every data mean equal sets of inputs,
each counted once.

Stream rules (``rules_harness``): the registered interconnect (``regs_per_stage=1``, the
default RTL, optionally with adder pipes) under any accepted word: every output keeps the
stream rules.

Flits (``flits_harness``): the registered interconnect; input port p's k-th flit carries
``((k + 1) mod 8) << 3p`` (a field of TAG_BITS = 3 bits per port). Asserted: an output's j-th
flit is the sum of the j-th flits of exactly the inputs the model assigns to it (field p holds
j + 1, mod 8, for those inputs and 0 for the others), so flits are neither lost, duplicated,
reordered nor mixed across positions; and the count of flits out of each output never
exceeds the count into any input it depends on, nor trails it by more than the flits the path
can hold.
"""

from __future__ import annotations

from amaranth.asserts import AnyConst, AnySeq
from amaranth.hdl import Assert, Assume, Cat, Const, Module, Mux, Signal

from fredfab.hw.config_layout import config_data_layout
from fredfab.hw.interconnect import Interconnect, path_capacity
from fredfab.hw.params import SwitchParams
from fredfab.sim.formal import streams
from fredfab.sim.formal.decoder import word_accepted
from fredfab.sim.formal.mutation import drop_valid_while_stalled, mutated
from fredfab.sim.formal.runner import harness_module
from fredfab.sim.formal.spec import expected_outputs

#: Bits of a port's field in the tagged data of ``flits_harness``.
TAG_BITS = 3


def interconnect_params(
    ports: int, m: int, arch: str, regs: int, dtype: str = "int8", adder_stages: int = 0
):
    return SwitchParams(
        ports=ports,
        m=m,
        lanes=1,
        dtype=dtype,
        regs_per_stage=regs,
        adder_stages=adder_stages,
        arch=arch,
    )


def _configured(m: Module, ic: Interconnect, swap_bits: bool, any_word: bool = False):
    """A free configuration word the model accepts (``any_word``: any word at all), driven
    into ``ic``; the view the spec reads. ``swap_bits``: the negative control, the RTL gets
    the word with its two lowest bits (the first node's first field) swapped."""
    layout = config_data_layout(ic.topology.config_layout)
    word = AnyConst(layout.size)
    config = layout(word)
    if not any_word:
        accepted = word_accepted(ic.topology, config)
        m.d.comb += Assume(accepted, "config: a word the model accepts")
    if swap_bits:
        word = Cat(word[1], word[0], word[2:])
    m.d.comb += ic.config.eq(word)
    # The nodes hold the word from the second cycle on: nothing enters before (module
    # docstring).
    configured = Signal(name="configured")
    m.d.sync += configured.eq(1)
    with m.If(~configured):
        for p, i in enumerate(ic.i):
            m.d.comb += Assume(~i.valid, f"i{p}: no flit before the nodes hold the word")
    return config


def function_harness(
    ports: int, m_: int, arch: str = "clos", any_word: bool = False, mutant: bool = False
) -> Module:
    """``any_word``: every word the control unit can hold, the model's rejected ones too
    (where the spec extends the model: an unknown code, or a sum of a silent operand, is
    silent)."""
    params = interconnect_params(ports, m_, arch, regs=0)
    m = harness_module()
    m.submodules.ic = ic = Interconnect(params)
    config = _configured(m, ic, swap_bits=mutant, any_word=any_word)
    width = params.data_width
    for p in range(ports):
        streams.free_input(m, ic.i[p], f"i{p}")
        streams.free_ready(m, ic.o[p])
    inputs = [(ic.i[p].valid, ic.i[p].payload.data.as_value()) for p in range(ports)]
    want = expected_outputs(m, ic.topology, config, inputs, width)
    for q, w in enumerate(want):
        o = ic.o[q]
        with m.If(~w.routed):
            m.d.comb += Assert(~o.valid, f"o{q}: silent where the model sends nothing")
        with m.If(o.valid):
            m.d.comb += [
                Assert(w.valid, f"o{q}: valid only when every input it adds is valid"),
                Assert(o.payload.data.as_value() == w.data, f"o{q}: the model's sum"),
            ]
    return m


def rules_harness(
    ports: int, m_: int, arch: str = "clos", mutant: bool = False, adder_stages: int = 0
) -> Module:
    params = interconnect_params(ports, m_, arch, regs=1, adder_stages=adder_stages)
    m = harness_module()
    ic = Interconnect(params)
    m.submodules.ic = (
        mutated(ic, drop_valid_while_stalled(lambda c: c.o[0], registered=False)) if mutant else ic
    )
    _configured(m, ic, swap_bits=False)
    for p in range(ports):
        streams.free_input(m, ic.i[p], f"i{p}")
        streams.free_ready(m, ic.o[p])
        streams.assert_rules(m, ic.o[p], f"o{p}")
    return m


def flits_harness(
    ports: int,
    m_: int,
    arch: str = "clos",
    any_word: bool = False,
    mutant: bool = False,
    count_bits: int = 5,
    adder_stages: int = 0,
) -> Module:
    """Tagged flits (module docstring); counts modulo ``2**count_bits``, so the check is
    exact for fewer than ``2**count_bits - 1`` flits per port (a BMC depth below that).
    ``adder_stages``: the nodes of the adding columns carry adder pipes (hw/uswitch.py)."""
    dtype = "int16" if TAG_BITS * ports <= 16 else "int32"
    if TAG_BITS * ports > 32:
        raise ValueError(f"tagged flits fit {32 // TAG_BITS} ports in an int32 lane, not {ports}")
    params = interconnect_params(ports, m_, arch, regs=1, dtype=dtype, adder_stages=adder_stages)
    m = harness_module()
    m.submodules.ic = ic = Interconnect(params)
    config = _configured(m, ic, swap_bits=mutant, any_word=any_word)
    width = params.data_width
    accepted = []
    for p in range(ports):
        n = streams.counter(m, streams.transfer(ic.i[p]), count_bits, f"accepted{p}")
        accepted.append(n)
        tag = Signal(width, name=f"tag{p}")
        m.d.comb += tag.eq((n + 1)[:TAG_BITS] << (TAG_BITS * p))
        streams.free_input(m, ic.i[p], f"i{p}", payload=Cat(tag, AnySeq(1)))
        streams.free_ready(m, ic.o[p])
    # Which inputs each output depends on: the spec run on one-hot markers.
    marks = [(Const(1), Const(1 << p, ports)) for p in range(ports)]
    uses = expected_outputs(m, ic.topology, config, marks, ports)
    # What the longest path holds: two per skid buffer, three in a crossbar's room buffer,
    # n + 1 in a pipe of n adder stages (hw/interconnect.py).
    capacity = path_capacity(params)
    for q in range(ports):
        o, u = ic.o[q], uses[q]
        emitted = streams.counter(m, streams.transfer(o), count_bits, f"emitted{q}")
        data = o.payload.data.as_value()
        with m.If(o.valid):
            for p in range(ports):
                field = data[TAG_BITS * p : TAG_BITS * (p + 1)]
                want = Mux(u.data[p], (emitted + 1)[:TAG_BITS], 0)
                m.d.comb += Assert(field == want, f"o{q}: field {p} is flit j of port {p} or 0")
        for p in range(ports):
            with m.If(u.routed & u.data[p]):
                lag = (accepted[p] - emitted)[:count_bits]
                m.d.comb += Assert(
                    lag <= capacity, f"o{q}: never ahead of input {p}, behind by its capacity"
                )
    return m
