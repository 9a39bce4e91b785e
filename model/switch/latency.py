"""Switch pipeline latency: the one set of formulas that the generator, its manifest, the
built-in timing card and the co-simulation benches share.

A node of the interconnect (model/switch/graph.py) holds a flit for

    node_cycles = regs_per_stage      (register slices on its outputs, if it is registered)
                + adder_stages        (if it sits in an *adder column*, below)

cycles. An adder column is a stage (column of nodes) that holds at least one reducing node:
a pipelined adder splits its sum into ``adder_stages + 1`` slices with a register between
each two (hw/adder.py), and every node of such a column delays every input by as many
registers, whether it adds or passes (hw/uswitch.py). So the delay of a node does not depend
on its configuration, and on the Clos, where every path crosses every column once, every
flow has the same latency: the DEMUX of an odd Fred_m(P) shares its column with the
R-uSwitches and is delayed alike.

A flit accepted at a switch input in cycle t is valid at its output in cycle t + latency,
where latency is the sum of node_cycles along its path (``path_cycles``); ``latency_cycles``
is the longest path of the graph. On the Clos that is every flow's latency; on the crossbar a
flow whose segment completes below the root of the tree arrives earlier. With
``adder_stages = 0`` this is ``register_depth * regs_per_stage``, the formula before the
adders were pipelined.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from fredfab.model.errors import InputError
from fredfab.model.switch.graph import BOUNDARY, SUM_OPERANDS, Endpoint, SourceKind, SwitchGraph

#: Register stages a pipelined adder can have (hw/adder.py splits a float adder into at most
#: this many + 1 slices; more registers would only add latency).
MAX_ADDER_STAGES = 6


def _count(name: str, value: object, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{name} must be an integer, got {value!r}")
    if value < 0 or (high is not None and value > high):
        bound = f">= 0 and <= {high}" if high is not None else ">= 0"
        raise InputError(f"{name} must be {bound}, got {value}")
    return value


@cache
def adder_columns(graph: SwitchGraph) -> frozenset[int]:
    """The stages of ``graph`` that hold a reducing node (and so a pipelined adder)."""
    return frozenset(n.stage for n in graph.nodes if n.reducing)


def carries_adder_pipeline(graph: SwitchGraph, node: int) -> bool:
    """Whether node ``node`` delays its inputs by the adder's register stages."""
    return graph.nodes[node].stage in adder_columns(graph)


def node_cycles(graph: SwitchGraph, regs_per_stage: int, adder_stages: int = 0) -> tuple[int, ...]:
    """Cycles each node of ``graph`` holds a flit, by node index (module docstring)."""
    _count("regs_per_stage", regs_per_stage)
    _count("adder_stages", adder_stages, MAX_ADDER_STAGES)
    return tuple(
        (regs_per_stage if n.registered else 0)
        + (adder_stages if carries_adder_pipeline(graph, n.index) else 0)
        for n in graph.nodes
    )


def latency_cycles(graph: SwitchGraph, regs_per_stage: int, adder_stages: int = 0) -> int:
    """Input accepted to output valid, in cycles, for the longest path of ``graph``."""
    cycles = node_cycles(graph, regs_per_stage, adder_stages)
    depth = [0] * len(graph.nodes)
    for n in graph.nodes:
        before = [depth[e.node] for e in graph.node_inputs[n.index] if e.node != BOUNDARY]
        depth[n.index] = cycles[n.index] + max(before, default=0)
    return max(depth[e.node] for e in graph.outputs)


def path_cycles(
    graph: SwitchGraph, codes: Sequence[Sequence[int]], cycles: Sequence[int]
) -> list[dict[int, int]]:
    """For every switch output port, the cycles from each input port whose data reach it
    under the configuration ``codes`` (one tuple of source codes per node, as
    ``Configuration.codes``), each node holding a flit for ``cycles[node]`` (``node_cycles``,
    or the manifest's ``node_cycles``): ``result[q][p]`` is the latency of input port p's
    flits at output port q, absent where p does not reach q.

    A sum arrives once its later operand has arrived: a flit of output q whose inputs were
    accepted in cycles ``t[p]`` is valid at q in cycle ``max(t[p] + result[q][p])`` when
    nothing stalls it (what the co-simulation bench checks for every flit).
    """
    if len(cycles) != len(graph.nodes):
        raise InputError(f"{len(cycles)} node latencies for {len(graph.nodes)} nodes")
    reach: dict[Endpoint, dict[int, int]] = {
        Endpoint(BOUNDARY, p): {p: 0} for p in range(graph.ports)
    }
    for node, node_codes in zip(graph.nodes, codes, strict=True):
        ins = [reach[e] for e in graph.node_inputs[node.index]]
        for q, code in enumerate(node_codes):
            source = node.decode(code)
            arriving: dict[int, int] = {}
            if source.kind is SourceKind.INPUT:
                arriving = ins[source.input]
            elif source.kind is SourceKind.SUM:
                first, second = (ins[k] for k in SUM_OPERANDS)
                arriving = {**first, **second}
            reach[Endpoint(node.index, q)] = {
                p: c + cycles[node.index] for p, c in arriving.items()
            }
    return [dict(reach[graph.outputs[q]]) for q in range(graph.ports)]
