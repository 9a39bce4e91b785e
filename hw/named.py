"""Name an expression once.

An Amaranth expression used in several places is built again at each (a Python object
reused is not a wire shared; one that appears twice in the next step of a chain doubles at
every step): ``named`` computes it into a signal once, which every user reads. The
generated Verilog, and a Verilated model's speed, follow the netlist's size."""

from __future__ import annotations

from amaranth.hdl import Module, Signal, Value


def named(m: Module, value: Value | int | bool, name: str) -> Signal:
    value = Value.cast(value)
    sig = Signal(value.shape(), name=name)
    m.d.comb += sig.eq(value)
    return sig
