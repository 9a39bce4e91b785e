"""Flow tables of packet mode, as the control unit holds them per configuration slot
(docs/switch-rtl.md, "Control unit"): for every input port, the inputs of its flow (a
commit needs a head on all of them), and for every output port, the inputs of the flow that
feeds it (an ACK/NACK from that output's receiver goes back to all of them). Masks are
integers, bit p = port p, the way the RTL stores them."""

from __future__ import annotations

from collections.abc import Sequence

from fredfab.model.switch.flow import Flow, FlowError, validate_flows


def _mask(ports: frozenset[int]) -> int:
    return sum(1 << p for p in ports)


def inputs_of_input(flows: Sequence[Flow], ports: int) -> list[int]:
    """Row p: the mask of the input ports of the flow input p belongs to; 0 if p is unused."""
    table = [0] * ports
    for flow in validate_flows(flows, ports):
        for p in flow.ips:
            table[p] = _mask(flow.ips)
    return table


def inputs_of_output(flows: Sequence[Flow], ports: int) -> list[int]:
    """Row q: the mask of the input ports of the flow output q belongs to; 0 if q is unused."""
    table = [0] * ports
    for flow in validate_flows(flows, ports):
        for q in flow.ops:
            table[q] = _mask(flow.ips)
    return table


def shift_flows(ports: int, r: int) -> list[Flow]:
    """Unicast round ``r``: every port p sends to (p + r) mod P. The P rounds together carry
    any source-destination pair, so packet mode routes them once at generation time."""
    if ports < 2:
        raise FlowError(f"a switch needs at least 2 ports, got {ports}")
    if not 0 <= r < ports:
        raise FlowError(f"round {r} out of range 0..{ports - 1}")
    return [Flow({p}, {(p + r) % ports}) for p in range(ports)]
