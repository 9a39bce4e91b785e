"""A timing card can carry a measured switch clock (clock_hz, clock_source); the system model
uses it when the fabric file states none, and says where its clock comes from."""

import dataclasses
import json

import pytest

from fredfab.model.system import SwitchTiming, load_fabric
from fredfab.model.system.elements import FabricError
from fredfab.model.system.switch_timing import DEFAULT_CLOCK_HZ, DEFAULT_CLOCK_SOURCE
from fredfab.model.timing_card import TimingCard, TimingCardError, default_card

SOURCE = "nextpnr-ecp5 Fmax, LFE5U-85F-8CABGA381, seed 1"


def _clocked(hz: float = 40e6) -> TimingCard:
    return dataclasses.replace(default_card(), clock_hz=hz, clock_source=SOURCE)


def test_a_card_without_a_clock_is_written_and_read_as_before():
    d = default_card().to_dict()
    assert "clock_hz" not in d and "clock_source" not in d
    assert TimingCard.from_dict(d).clock_hz is None


def test_a_clocked_card_round_trips_through_json():
    card = _clocked()
    back = TimingCard.from_json(card.to_json())
    assert back == card and back.clock_hz == 40e6 and back.clock_source == SOURCE


@pytest.mark.parametrize(
    "fields",
    [
        {"clock_hz": 40e6},  # no source
        {"clock_source": SOURCE},  # no clock
        {"clock_hz": 0, "clock_source": SOURCE},
        {"clock_hz": -1.0, "clock_source": SOURCE},
        {"clock_hz": "40MHz", "clock_source": SOURCE},
        {"clock_hz": 40e6, "clock_source": 7},
    ],
)
def test_a_clock_needs_a_positive_value_and_a_source(fields):
    with pytest.raises(TimingCardError, match="clock"):
        TimingCard.from_dict(default_card().to_dict() | fields)


def test_the_model_uses_the_cards_clock_else_the_default():
    assumed = SwitchTiming(default_card())
    assert assumed.clock_hz == DEFAULT_CLOCK_HZ
    assert assumed.clock_source == DEFAULT_CLOCK_SOURCE
    measured = SwitchTiming(_clocked(40e6))
    assert measured.clock_hz == 40e6
    assert SOURCE in measured.clock_source and "40 MHz" in measured.describe_clock()
    # 25x slower clock: every cycle count takes 25x longer
    assert measured.hop_latency == pytest.approx(25 * assumed.hop_latency)
    assert measured.reconfiguration_time == pytest.approx(25 * assumed.reconfiguration_time)


def test_a_given_clock_beats_the_cards(tmp_path):
    t = SwitchTiming(_clocked(40e6), clock_hz=2e9)
    assert t.clock_hz == 2e9 and t.describe_clock() == "2 GHz (given)"
    with pytest.raises(FabricError, match="clock"):
        SwitchTiming(_clocked(), clock_hz=0.0)


def _fabric_file(tmp_path, card: TimingCard, switch_extra: str = "") -> str:
    (tmp_path / "card.json").write_text(card.to_json())
    text = (
        'schema = "fred-fabric/1"\nname = "t"\n[tree]\nradix = [4, 5]\n'
        "bandwidth_GBps = [3000, 1500]\nlatency_ns = 10\nin_switch_collectives = true\n"
        f'[switch]\ntiming_card = "card.json"\n{switch_extra}'
    )
    (tmp_path / "f.toml").write_text(text)
    return str(tmp_path / "f.toml")


def test_a_fabric_file_takes_the_cards_clock_unless_it_states_one(tmp_path):
    f = load_fabric(_fabric_file(tmp_path, _clocked(40e6)))
    assert f.timing.clock_hz == 40e6 and SOURCE in f.timing.describe_clock()
    g = load_fabric(_fabric_file(tmp_path, _clocked(40e6), "clock_GHz = 2.0\n"))
    assert g.timing.clock_hz == 2e9 and "clock_GHz" in g.timing.clock_source


def test_a_legacy_card_file_still_loads_with_the_default_clock(tmp_path):
    legacy = default_card().to_dict()
    legacy["schema"] = "fred-switch-timing/1"
    legacy["config_load_cycles"] = legacy.pop("slot_write_cycles")
    (tmp_path / "old.json").write_text(json.dumps(legacy))
    f = load_fabric("fred-b", timing_card=tmp_path / "old.json")
    assert f.timing.clock_hz == DEFAULT_CLOCK_HZ


@pytest.mark.parametrize("hz", [0, -1e9])
def test_a_clock_that_is_not_positive_is_told_so(hz):
    # It said "must be a finite number >= 0" of -1e9, and 0 is refused too.
    fields = {"clock_hz": hz, "clock_source": SOURCE}
    with pytest.raises(TimingCardError, match=r"'clock_hz' must be a finite number > 0, got"):
        TimingCard.from_dict(default_card().to_dict() | fields)
