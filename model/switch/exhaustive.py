"""Exhaustive search over uSwitch configurations: an independent check of the router.

The router only considers routings in which each flow uses one middle subnetwork per level.
This search knows nothing of that: it walks the nodes in topological order, tries every
source code each node's kind allows (config.check_node_codes, the hardware's rules) and keeps
every distinct state of the wires still waiting for their sink. A value on a wire is the
sorted tuple of input ports summed into it. A value that is not a duplicate-free subset of
some flow's input ports can never become a correct result (nothing subtracts), so it is
collapsed to "nothing", which keeps the state space small enough for P <= 5 or so.

A flow set is routable if some reachable final state delivers exactly each flow's input set
to each of its output ports.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import cache

from fredfab.model.switch.config import ConfigError, check_node_codes
from fredfab.model.switch.flow import Flow, validate_flows
from fredfab.model.switch.topology import (
    BOUNDARY,
    SUM_OPERANDS,
    Endpoint,
    Node,
    SourceKind,
    Topology,
)

Value = tuple[int, ...] | None


def exhaustively_routable(flows: Sequence[Flow], ports: int, m: int) -> bool:
    """Whether any configuration of Fred_m(ports) realises ``flows`` (small P only)."""
    flows = validate_flows(flows, ports)
    topo = Topology.build(ports, m)
    useful = [f.ips for f in flows]

    def clean(v: Value) -> Value:
        if v is None or len(set(v)) != len(v):
            return None
        return v if any(set(v) <= ips for ips in useful) else None

    # Live wires: endpoints whose value is still needed, as a sorted tuple of pairs.
    state0 = tuple(
        (Endpoint(BOUNDARY, p), (p,) if any(p in f.ips for f in flows) else None)
        for p in range(ports)
    )
    states = {state0}
    for node in topo.nodes:
        nxt = set()
        for state in states:
            values = dict(state)
            ins = [values.pop(d) for d in topo.node_inputs[node.index]]
            for codes in _legal_codes(node):
                outs = _apply(node, codes, ins)
                if outs is None:
                    continue
                new = dict(values)
                for q, v in enumerate(outs):
                    new[Endpoint(node.index, q)] = clean(v)
                nxt.add(tuple(sorted(new.items(), key=lambda kv: kv[0])))
        states = nxt
    want = {topo.outputs[p]: tuple(sorted(f.ips)) for f in flows for p in f.ops}
    return any(all(dict(s)[e] == v for e, v in want.items()) for s in states)


def _apply(node: Node, codes: tuple[int, ...], ins: list[Value]) -> list[Value] | None:
    outs: list[Value] = []
    for c in codes:
        source = node.decode(c)
        if source.kind is SourceKind.NONE:
            outs.append(None)
        elif source.kind is SourceKind.SUM:
            a, b = (ins[k] for k in SUM_OPERANDS)
            if a is None or b is None:
                return None  # would wait forever for the missing operand
            outs.append(tuple(sorted(a + b)))
        else:
            outs.append(ins[source.input])
    return outs


@cache
def _legal_codes(node: Node) -> list[tuple[int, ...]]:
    legal = []
    for codes in itertools.product(range(node.n_sources), repeat=node.n_out):
        try:
            check_node_codes(node, codes)
        except ConfigError:
            continue
        legal.append(codes)
    return legal
