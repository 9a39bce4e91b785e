"""Flows: the unit of communication inside a FRED switch.

A flow (IPs, OPs) reduces the data arriving on every input port in IPs and delivers
the result to every output port in OPs (paper §5.1). Input and output
ports are separate namespaces: port 3 may be an IP of one flow and an OP of another.
A set of concurrent flows must have pairwise disjoint IPs and pairwise disjoint OPs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from fredfab.model.collective_kind import CollectiveKind, flow_kind
from fredfab.model.errors import InputError


class FlowError(InputError):
    """Malformed flow or flow set (empty set, port out of range, overlapping ports)."""


@dataclass(frozen=True, order=True)
class Flow:
    """Reduce the data on every port of ``ips``; deliver the result to every port of ``ops``."""

    ips: frozenset[int]
    ops: frozenset[int]

    def __init__(self, ips: Iterable[int], ops: Iterable[int]) -> None:
        ips_set = frozenset(_port(p) for p in ips)
        ops_set = frozenset(_port(p) for p in ops)
        if not ips_set:
            raise FlowError("a flow needs at least one input port")
        if not ops_set:
            raise FlowError("a flow needs at least one output port")
        object.__setattr__(self, "ips", ips_set)
        object.__setattr__(self, "ops", ops_set)

    @property
    def kind(self) -> CollectiveKind:
        """All-Reduce, reduce, multicast or unicast, from the shape of the port sets."""
        return flow_kind(len(self.ips), len(self.ops))

    def __str__(self) -> str:
        return f"{_fmt_ports(self.ips)}:{_fmt_ports(self.ops)}"

    @classmethod
    def parse(cls, text: str) -> Flow:
        """Parse ``IPS:OPS``, each side a comma list of ports or ranges, e.g. ``0-3:0-3``."""
        left, sep, right = text.partition(":")
        if not sep:
            raise FlowError(f"flow {text!r}: expected IPS:OPS, e.g. 0,1:2 or 0-3:0-3")
        sides = []
        for side, part in (("input", left), ("output", right)):
            ports = parse_ports(part, what=f"flow {text!r}")
            twice = sorted({p for p in ports if ports.count(p) > 1})
            if twice:
                # A port named twice is a typo more often than not (0,0 for 0,1): refuse it
                # rather than fold it into one and run another flow than was meant.
                raise FlowError(f"flow {text!r} names {side} port {twice[0]} twice")
            sides.append(ports)
        return cls(*sides)


def parse_ports(text: str, what: str = "port list", unit: str = "port") -> list[int]:
    """Parse ``0,2,5-7`` into ``[0, 2, 5, 6, 7]`` (``unit``: what the numbers name, for
    messages: ports, or NPUs)."""
    ports: list[int] = []
    for item in text.split(","):
        item = item.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", item)
        if not m:
            one = "an NPU" if unit == "NPU" else f"a {unit}"
            raise FlowError(f"{what}: {item!r} is not {one} or range (use e.g. 3 or 0-7)")
        lo, hi = int(m[1]), int(m[2] if m[2] is not None else m[1])
        if hi < lo:
            raise FlowError(f"{what}: range {item!r} runs backwards")
        ports.extend(range(lo, hi + 1))
    return ports


def validate_flows(flows: Sequence[Flow], ports: int) -> tuple[Flow, ...]:
    """Check that ``flows`` can run concurrently on a ``ports``-port switch; return them as a tuple.

    Raises FlowError naming the first problem: a port out of range, or two flows sharing an
    input port or an output port.
    """
    flows = tuple(flows)
    if ports < 2:
        raise FlowError(f"a switch needs at least 2 ports, got {ports}")
    owner_in: dict[int, int] = {}
    owner_out: dict[int, int] = {}
    for i, flow in enumerate(flows):
        if not isinstance(flow, Flow):
            raise FlowError(f"flow {i} is a {type(flow).__name__}, not a Flow")
        for side, ports_of, owner in (
            ("input", flow.ips, owner_in),
            ("output", flow.ops, owner_out),
        ):
            for p in sorted(ports_of):
                if p >= ports:
                    raise FlowError(
                        f"flow {i} ({flow}): {side} port {p} out of range 0..{ports - 1}"
                    )
                if p in owner:
                    j = owner[p]
                    raise FlowError(
                        f"flows {j} ({flows[j]}) and {i} ({flow}) share {side} port {p}"
                    )
                owner[p] = i
    return flows


def _port(p: object) -> int:
    if isinstance(p, bool) or not isinstance(p, int | np.integer):
        raise FlowError(f"port {p!r} is not an integer")
    if p < 0:
        raise FlowError(f"port {p} is negative")
    return int(p)


def _fmt_ports(ports: Iterable[int]) -> str:
    """Compact text for a port set: ``0-3,6``."""
    items = sorted(ports)
    parts: list[str] = []
    start = prev = items[0]
    for p in items[1:] + [None]:  # type: ignore[list-item]
        if p is not None and p == prev + 1:
            prev = p
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if p is not None:
            start = prev = p
    return ",".join(parts)
