"""Flow tables of packet mode from routed flows, and the unicast shift rounds."""

from __future__ import annotations

import pytest

from fredfab.model.packet.flow_tables import inputs_of_input, inputs_of_output, shift_flows
from fredfab.model.switch.flow import Flow, FlowError


def test_tables_of_a_reduction_and_a_unicast() -> None:
    flows = [Flow({0, 1, 2}, {2, 3}), Flow({4}, {0})]
    assert inputs_of_input(flows, 6) == [0b111, 0b111, 0b111, 0, 0b10000, 0]
    assert inputs_of_output(flows, 6) == [0b10000, 0, 0b111, 0b111, 0, 0]


def test_overlapping_flows_are_rejected() -> None:
    with pytest.raises(FlowError, match="share input port 1"):
        inputs_of_input([Flow({0, 1}, {0}), Flow({1}, {2})], 4)


@pytest.mark.parametrize("ports", [2, 5, 8])
def test_shift_rounds_cover_every_pair_once(ports: int) -> None:
    pairs = []
    for r in range(ports):
        flows = shift_flows(ports, r)
        # Each round is a permutation: every input alone in its flow, every output fed once.
        assert inputs_of_input(flows, ports) == [1 << p for p in range(ports)]
        assert sorted(inputs_of_output(flows, ports)) == sorted(1 << p for p in range(ports))
        pairs += [(min(f.ips), min(f.ops)) for f in flows]
    assert sorted(pairs) == [(s, d) for s in range(ports) for d in range(ports)]


def test_shift_round_out_of_range() -> None:
    with pytest.raises(FlowError, match="round 4 out of range"):
        shift_flows(4, 4)
