"""The valid/ready rules of ``amaranth.lib.stream`` as assumptions and assertions.

A producer raises ``valid`` with a payload and keeps both, unchanged, until the cycle in
which ``ready`` is also high (the transfer). Where the environment produces a stream (a
design input) the harness *assumes* the rules; where the design produces one it *asserts*
them. ``free_input`` and ``free_ready`` give the environment every behaviour the rules allow
(``AnySeq``), so a proof covers every sender and every receiver.
"""

from __future__ import annotations

from amaranth.asserts import AnySeq
from amaranth.hdl import Assert, Assume, Module, Signal, Value


def _stalled(m: Module, s, name: str) -> tuple[Signal, Signal]:
    """Registers: last cycle ``s`` was valid and not ready; its payload then."""
    stalled = Signal(name=f"{name}_stalled")
    payload = Signal(len(Value.cast(s.payload)), name=f"{name}_held")
    m.d.sync += [stalled.eq(s.valid & ~s.ready), payload.eq(s.payload)]
    return stalled, payload


def _rules(m: Module, s, name: str, check, held: str, stable: str) -> None:
    stalled, payload = _stalled(m, s, name)
    with m.If(stalled):
        m.d.comb += [
            check(s.valid, f"{name}: {held}"),
            check(Value.cast(s.payload) == payload, f"{name}: {stable}"),
        ]


def assert_rules(m: Module, s, name: str) -> None:
    """The design drives ``s``: valid held until the transfer, payload stable meanwhile."""
    _rules(m, s, name, Assert, "valid held until the transfer", "payload stable until then")


def assume_rules(m: Module, s, name: str) -> None:
    """The environment drives ``s``: it keeps the rules (assumed)."""
    _rules(m, s, name, Assume, "sender holds valid", "sender holds the payload")


def free_input(m: Module, s, name: str, payload: Value | None = None) -> None:
    """Drive the design input ``s`` with any sender that keeps the rules. ``payload`` replaces
    the free payload (e.g. a tagged one the harness computes)."""
    m.d.comb += s.valid.eq(AnySeq(1))
    width = len(Value.cast(s.payload))
    m.d.comb += s.payload.eq(AnySeq(width) if payload is None else payload)
    assume_rules(m, s, name)


def free_ready(m: Module, s) -> None:
    """Drive the ready of the design output ``s`` with any receiver."""
    m.d.comb += s.ready.eq(AnySeq(1))


def transfer(s) -> Value:
    return s.valid & s.ready


def counter(m: Module, event: Value, width: int, name: str) -> Signal:
    """Events counted modulo ``2**width``; harnesses pick ``width`` so that a bounded check
    never wraps it (more than ``depth`` events cannot happen in ``depth`` cycles)."""
    count = Signal(width, name=name)
    with m.If(event):
        m.d.sync += count.eq(count + 1)
    return count
