"""Negative controls: the real generator's design with one deliberate fault added.

``mutated(component, fault)`` elaborates ``component`` exactly as the generator does and
then lets ``fault(m, component)`` add statements to its module. Amaranth gives the later
statement the last word, so the fault overrides one behaviour (a valid that drops, a wrong
payload) and leaves everything else as built. A proof must fail on its mutant: that shows
its assertions can see the fault they are about (tests/sim/formal).
"""

from __future__ import annotations

from collections.abc import Callable

from amaranth.hdl import Module, Signal


def mutated(component, fault: Callable[[Module, object], None]):
    """``component``, changed in place so that its elaboration ends with
    ``fault(module, component)``; returned for use where the original would be."""
    base = type(component)

    class Mutant(base):
        def elaborate(self, platform) -> Module:
            m = super().elaborate(platform)
            fault(m, self)
            return m

    Mutant.__name__ = Mutant.__qualname__ = f"Mutant{base.__name__}"
    component.__class__ = Mutant
    return component


def drop_valid_while_stalled(
    stream_of: Callable[[object], object], registered: bool = False
) -> Callable:
    """A fault: the stream ``stream_of(component)`` lowers valid in every other cycle in which
    it is stalled (valid and not ready), the "dropped valid hold". ``registered``: the design
    drives that valid from a register, so the fault clears the register (valid falls in the
    next cycle) instead of overriding the logic."""

    def fault(m: Module, component) -> None:
        s = stream_of(component)
        toggle = Signal(name="mutant_toggle")
        m.d.sync += toggle.eq(~toggle)
        if registered:
            with m.If(s.valid & ~s.ready & toggle):
                m.d.sync += s.valid.eq(0)
        else:
            # From last cycle's stall (a register), so the fault adds no combinational loop.
            stalled = Signal(name="mutant_stalled")
            m.d.sync += stalled.eq(s.valid & ~s.ready)
            with m.If(stalled & toggle):
                m.d.comb += s.valid.eq(0)

    return fault


def ready_regardless(stream_of: Callable[[object], object]) -> Callable:
    """A fault: the input stream ``stream_of(component)`` is always ready, whether or not the
    design has room for (or has passed on) the flit: flits are lost."""

    def fault(m: Module, component) -> None:
        m.d.comb += stream_of(component).ready.eq(1)

    return fault
