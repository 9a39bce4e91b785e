import json

import pytest

from fredfab.model.timing_card import (
    SCHEMA,
    TimingCard,
    TimingCardError,
    default_card,
    load_timing_card,
)


def test_default_card_round_trips_through_json():
    card = default_card()
    again = TimingCard.from_json(card.to_json())
    assert again == card
    assert again.fraction("all-reduce") == 1.0
    assert json.loads(card.to_json())["schema"] == SCHEMA


def test_unknown_schema_version_is_rejected():
    d = default_card().to_dict()
    d["schema"] = "fred-switch-timing/3"
    with pytest.raises(TimingCardError, match="not supported"):
        TimingCard.from_dict(d)


def test_version_1_card_is_read_with_its_renamed_field():
    """A /1 card's config_load_cycles is the /2 slot_write_cycles; it loads as a /2 card."""
    d = default_card().to_dict()
    d["schema"] = "fred-switch-timing/1"
    d["config_load_cycles"] = d.pop("slot_write_cycles") + 7
    card = TimingCard.from_dict(d)
    assert card.schema == SCHEMA
    assert card.slot_write_cycles == default_card().slot_write_cycles + 7
    assert "config_load_cycles" not in card.to_dict()
    # The new name is not accepted in a /1 card, nor the old one in a /2 card.
    d["slot_write_cycles"] = 1
    with pytest.raises(TimingCardError):
        TimingCard.from_dict(d)
    d = default_card().to_dict()
    d["config_load_cycles"] = d.pop("slot_write_cycles")
    with pytest.raises(TimingCardError, match="slot_write_cycles"):
        TimingCard.from_dict(d)


def test_default_card_follows_the_default_generator_parameters():
    """The built-in card's latency and slot write time come from the formulas the generator
    uses, at the default parameters (the RTL itself is compared in tests/hw/test_timing.py)."""
    from fredfab.model import defaults
    from fredfab.model.switch.arches import build_topology

    card = default_card()
    g = card.generator
    assert (g["m"], g["lanes"], g["dtype"]) == (defaults.M, defaults.LANES, defaults.DTYPE)
    graph = build_topology(g["ports"], g["m"], g["arch"])
    # Fred_3(8): 2 log2(8) - 1 = 5 stages, one register slice each.
    assert graph.register_depth == 5 and card.latency_cycles == 5 * g["regs_per_stage"]
    assert card.slot_write_cycles == -(-graph.config_bits // g["word_width"])


@pytest.mark.parametrize("field", ["latency_cycles", "throughput", "simulator"])
def test_missing_field_is_named(field):
    d = default_card().to_dict()
    del d[field]
    with pytest.raises(TimingCardError, match=field):
        TimingCard.from_dict(d)


def test_throughput_must_cover_every_kind_and_be_a_fraction():
    d = default_card().to_dict()
    del d["throughput"]["multicast"]
    d["throughput"]["broadcast"] = d["throughput"]["unicast"]
    with pytest.raises(TimingCardError) as exc:
        TimingCard.from_dict(d)
    # The kinds by name, as a card writes them, not as Python's enum members.
    assert "needs exactly the kinds all-reduce, " in str(exc.value) and "<" not in str(exc.value)
    assert str(exc.value).endswith("; missing multicast, unknown broadcast")
    d = default_card().to_dict()
    d["throughput"]["unicast"]["ready"] = 1.5
    with pytest.raises(TimingCardError, match=r"\(0, 1\]"):
        TimingCard.from_dict(d)


def test_load_reads_a_file_and_the_default_without_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load_timing_card(None).simulator == "default"
    assert load_timing_card(None).name == "built-in"
    d = default_card().to_dict()
    d["simulator"] = "verilator 5.048"
    d["latency_cycles"] = 11
    p = tmp_path / "card.json"
    p.write_text(json.dumps(d))
    card = load_timing_card(p)
    assert card.latency_cycles == 11 and card.source == str(p) and card.name == str(p)
    # A card where co-simulation writes them is not picked up unless named.
    (tmp_path / "build/timing").mkdir(parents=True)
    (tmp_path / "build/timing/fred8.json").write_text(json.dumps(d))
    assert load_timing_card(None) == default_card()
    with pytest.raises(TimingCardError, match="does not exist"):
        load_timing_card(tmp_path / "nope.json")
    p.write_text("{not json")
    with pytest.raises(TimingCardError, match="not valid JSON"):
        load_timing_card(p)
