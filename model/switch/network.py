"""Functional model of a configured FRED interconnect.

Data enter at the switch's input ports and move through every node of the flattened
``Topology`` as its configuration says: an output carries nothing, one input, or the sum of
the node's two inputs. The propagation is generic in what a "value" is:

* numeric: per-port numpy arrays added with the golden hardware adder (``run``);
* symbolic: input port numbers combined into reduction trees (``reduction_trees``), which
  tell the golden model in which order a flow's inputs were added, so that floating-point
  results can be checked bit-exact.

The model trusts nothing about the router: it only follows the source codes. Whether the
outputs are the right collective results is checked against the golden model, which computes
them from the flows' definitions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import numpy as np

from fredfab.model.errors import InputError
from fredfab.model.golden import Tree
from fredfab.model.switch.flow import Flow
from fredfab.model.switch.graph import BOUNDARY, SUM_OPERANDS, Endpoint, SourceKind, SwitchGraph

V = TypeVar("V")


class NetworkError(InputError):
    """The configuration asks for something the data cannot give (e.g. adding a missing input)."""


def propagate(
    topology: SwitchGraph,
    codes: Sequence[Sequence[int]],
    inputs: Mapping[int, V],
    add: Callable[[V, V], V],
) -> list[V | None]:
    """Values at every output port of the switch (None where nothing arrives)."""
    values: dict[Endpoint, V | None] = {
        Endpoint(BOUNDARY, p): inputs.get(p) for p in range(topology.ports)
    }
    for node, node_codes in zip(topology.nodes, codes, strict=True):
        ins = [values[d] for d in topology.node_inputs[node.index]]
        total: V | None = None
        for q, code in enumerate(node_codes):
            source = node.decode(code)
            if source.kind is SourceKind.NONE:
                out = None
            elif source.kind is SourceKind.SUM:
                if total is None:  # one adder per node, shared by every output taking SUM
                    a, b = (ins[k] for k in SUM_OPERANDS)
                    if a is None or b is None:
                        raise NetworkError(f"{node.name} adds its inputs but one carries nothing")
                    total = add(a, b)
                out = total
            else:
                out = ins[source.input]
            values[Endpoint(node.index, q)] = out
    return [values[topology.outputs[p]] for p in range(topology.ports)]


def reduction_trees(config, flows: Sequence[Flow]) -> tuple[Tree, ...]:
    """The reduction tree each flow realises, checked to be the same at all of its outputs."""
    topo = config.topology
    inputs = {p: p for f in flows for p in f.ips}
    outs = propagate(topo, config.codes, inputs, lambda a, b: (a, b))
    trees = []
    for f in flows:
        got = {outs[p] for p in f.ops}
        if len(got) != 1 or None in got:
            raise NetworkError(f"flow {f} does not reach all of its output ports with one value")
        trees.append(got.pop())
    return tuple(trees)


def run(
    config, inputs: Mapping[int, np.ndarray], add: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> list[np.ndarray | None]:
    """Numeric outputs of ``config`` for per-port input arrays, added with ``add``."""
    return propagate(config.topology, config.codes, inputs, add)
