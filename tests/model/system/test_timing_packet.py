"""Packet-mode costs of a timing card: derived from the packet format and the circuit timing
when a card lacks them, measured values round-tripping through JSON."""

import dataclasses
import json

import pytest

from fredfab.model.packet.format import PacketFormat
from fredfab.model.timing_card import TimingCard, TimingCardError, default_card
from fredfab.model.timing_packet import MEANINGS, PACKET_FIELDS


def test_every_packet_field_has_a_meaning():
    assert set(MEANINGS) == set(PACKET_FIELDS)


def test_the_built_in_card_derives_every_packet_cost():
    card = default_card()
    costs = card.packet_costs
    fmt = PacketFormat()
    assert costs.derived == PACKET_FIELDS
    assert (costs.packet_flits, costs.data_depth, costs.header_flits) == (
        fmt.packet_flits,
        fmt.data_depth,
        1,
    )
    # One header flit per 8 payload flits: 1/9 of the link is headers.
    assert costs.header_overhead == pytest.approx(1 / 9)
    # Whole packet in flight (9) + drain (latency 5) + slot copy (5 words + 1).
    assert costs.preempt_cycles == 9 + card.latency_cycles + card.slot_write_cycles + 1 == 20
    # The buffers cover the derived round trip: credits do not throttle.
    assert costs.credit_rtt_cycles == 4 * 9 and costs.credit_rate == 1.0
    assert costs.payload_fraction == pytest.approx(8 / 9)
    # A served phase keeps its whole rate while a lower one waits (nothing measured yet).
    assert costs.vc_share == costs.competing_share == 1.0


def test_derived_costs_follow_the_cards_circuit_timing():
    slow = dataclasses.replace(default_card(), latency_cycles=11, slot_write_cycles=40)
    assert slow.packet_costs.preempt_cycles == 9 + 11 + 40 + 1


def test_an_old_card_reads_as_before_and_names_the_derived_costs():
    d = default_card().to_dict()
    assert set(d["derived"]) == set(PACKET_FIELDS)
    assert not set(PACKET_FIELDS) & set(d)  # nothing measured: no packet field of its own
    del d["derived"]  # a card written before packet mode
    assert TimingCard.from_dict(d) == default_card()


def test_measured_costs_round_trip_and_replace_the_derived_ones():
    measured = {"preempt_cycles": 31, "credit_rtt_cycles": 72, "vc_share": 0.75}
    card = dataclasses.replace(default_card(), **measured)
    d = json.loads(card.to_json())
    assert {k: d[k] for k in measured} == measured
    assert "preempt_cycles" not in d["derived"] and "packet_flits" in d["derived"]
    back = TimingCard.from_dict(d)
    assert back == card
    c = back.packet_costs
    assert c.preempt_cycles == 31 and "preempt_cycles" not in c.derived
    # A round trip twice the buffer's cover halves a VC's rate.
    assert c.credit_rate == pytest.approx(0.5)
    # A phase served alone: the header's share (every fabric's) times the switch's (FRED's,
    # the credit rate). The VC share is not in it: it applies only while a lower phase
    # waits on the same switch, as the competing share.
    assert c.payload_fraction == pytest.approx(8 / 9 * 0.5)
    assert c.header_payload_fraction == pytest.approx(8 / 9)
    assert c.switch_fraction == pytest.approx(0.5)
    assert c.competing_share == 0.75


def test_derived_values_in_a_card_are_not_read_back():
    """`derived` is for readers: a card whose derived block disagrees with its fields gets
    the values its fields imply."""
    d = default_card().to_dict()
    d["derived"]["preempt_cycles"] = 999
    assert TimingCard.from_dict(d).packet_costs.preempt_cycles == 20


@pytest.mark.parametrize(
    "fields",
    [
        {"packet_flits": 0},
        {"packet_flits": 8.5},
        {"data_depth": 16},
        {"header_flits": -1},
        {"preempt_cycles": -1},
        {"preempt_cycles": True},
        {"credit_rtt_cycles": 0},
        {"vc_share": 0},
        {"vc_share": 1.5},
        {"derived": []},
    ],
)
def test_bad_packet_fields_are_rejected_by_name(fields):
    name = next(iter(fields))
    with pytest.raises(TimingCardError, match=name):
        TimingCard.from_dict(default_card().to_dict() | fields)
