"""The model's network function (model/switch/network.py ``propagate``) over symbolic
configuration bits, as logic a proof compares the RTL with.

``propagate`` walks the graph in node order and gives every node output nothing, one of its
inputs, or the sum of inputs 0 and 1, as ``node.decode(code)`` says; this module walks the
same graph the same way, but with the code a free value: for every value a field can hold
it asks ``node.decode`` (the model) what the output carries, and selects that with a mux.
A value no source has (``decode`` raises) carries nothing; so does a sum one of whose
operands carries nothing (where ``propagate`` raises NetworkError). Each endpoint carries:

* ``routed``: the configuration sends something there (independent of traffic);
* ``valid``: every switch input it depends on offers a flit now;
* ``data``: the integer sum (wrapping) of those inputs' data, each counted as often as the
  configuration adds it.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Const, Module, Signal, Value

from fredfab.model.switch.graph import BOUNDARY, SUM_OPERANDS, Endpoint, SourceKind, SwitchGraph


@dataclass(frozen=True)
class Carried:
    """What one endpoint carries (module docstring)."""

    routed: Value
    valid: Value
    data: Value


def expected_outputs(
    m: Module, topology: SwitchGraph, config, inputs: list[tuple[Value, Value]], width: int
) -> list[Carried]:
    """What every switch output port carries under ``config`` (the interconnect's config
    layout view), given each input port's (valid, data)."""
    nothing = Carried(Const(0), Const(0), Const(0, width))
    values: dict[Endpoint, Carried] = {
        Endpoint(BOUNDARY, p): Carried(Const(1), valid, data)
        for p, (valid, data) in enumerate(inputs)
    }
    for node in topology.nodes:
        ins = [values[d] for d in topology.node_inputs[node.index]]
        for q in range(node.n_out):
            code = config[node.name][q]
            out = Carried(
                Signal(name=f"spec_{_ident(node.name)}_o{q}_routed"),
                Signal(name=f"spec_{_ident(node.name)}_o{q}_valid"),
                Signal(width, name=f"spec_{_ident(node.name)}_o{q}_data"),
            )
            with m.Switch(code):
                for value in range(1 << node.code_bits):
                    try:
                        source = node.decode(value)
                    except ValueError:
                        continue  # carries nothing: the signals' zero default
                    if source.kind is SourceKind.NONE:
                        continue
                    if source.kind is SourceKind.INPUT:
                        picked = ins[source.input]
                    else:
                        a, b = (ins[k] for k in SUM_OPERANDS)
                        picked = Carried(
                            a.routed & b.routed, a.valid & b.valid, (a.data + b.data)[:width]
                        )
                    with m.Case(value):
                        m.d.comb += [
                            out.routed.eq(picked.routed),
                            out.valid.eq(picked.routed & picked.valid),
                            out.data.eq(picked.data),
                        ]
            values[Endpoint(node.index, q)] = out
    return [values.get(topology.outputs[p], nothing) for p in range(topology.ports)]


def _ident(name: str) -> str:
    return name.replace(".", "_")
