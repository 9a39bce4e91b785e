"""The model's configuration decoder (model/switch/config.py, model/switch/node.py) as
logic a proof can assume or compute with.

``accepted(node, codes)`` is high exactly when ``check_node_codes`` accepts the code tuple on
the node's fields: the tuples are enumerated in Python, through the model, at elaboration
time, so the proof's notion of a configuration the control unit may hold is the model's,
not a copy of it. ``word_accepted`` is the same for a whole configuration word.
"""

from __future__ import annotations

from functools import cache
from itertools import product

from amaranth.hdl import Cat, Const, Value

from fredfab.model.switch.config import ConfigError, check_node_codes
from fredfab.model.switch.graph import Node, SwitchGraph


@cache
def accepted_tuples(node: Node) -> tuple[tuple[int, ...], ...]:
    """Every tuple of field values (one per output, ``code_bits`` wide) the model accepts."""
    values = range(1 << node.code_bits)
    good = []
    for codes in product(values, repeat=node.n_out):
        try:
            check_node_codes(node, codes)
        except ConfigError:
            continue
        good.append(codes)
    return tuple(good)


def node_accepted(node: Node, fields: list[Value]) -> Value:
    """High when the node's fields (output 0 first) hold a tuple the model accepts."""
    bits = node.code_bits
    word = Cat(*fields)
    hits = [word == _pack(codes, bits) for codes in accepted_tuples(node)]
    return Cat(*hits).any() if hits else Const(0)


def word_accepted(topology: SwitchGraph, config) -> Value:
    """High when every node's fields of ``config`` (the interconnect's config layout view) hold
    a tuple the model accepts: ``Configuration.from_bits`` would not raise."""
    ok = []
    for node in topology.nodes:
        fields = [config[node.name][q] for q in range(node.n_out)]
        ok.append(node_accepted(node, fields))
    return Cat(*ok).all()


def _pack(codes: tuple[int, ...], bits: int) -> int:
    return sum(c << (q * bits) for q, c in enumerate(codes))
