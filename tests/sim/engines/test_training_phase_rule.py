"""FRED's phase rule in training estimates: applied on FRED fabrics only, from the timing
card's packet costs; with no overlap the times are the same as without it, whatever the
card's VC share. (The header's payload rate applies to every fabric:
test_training_packet_header.py.)"""

import dataclasses
import json

import pytest

from fredfab.model.timing_card import default_card
from fredfab.model.training.phase_priority import Prioritised
from fredfab.sim.engines import training
from fredfab.sim.engines.training import clear_cache, estimate

PIPELINED = dict(strategy="MP5-DP1-PP4")  # MP groups over two L1 switches, 1F1B


def _card(tmp_path, **fields):
    path = tmp_path / "card.json"
    path.write_text(json.dumps(dataclasses.replace(default_card(), **fields).to_dict()))
    return path


def _without_rule(monkeypatch):
    """Estimates as before the rule: every collective timed alone at line rate."""
    monkeypatch.setattr(
        training,
        "prioritise",
        lambda tl, rule, sw: Prioritised(
            tl,
            tuple(tuple(0.0 for _ in t.parts) for t in tl.tasks),
            (0,) * len(tl.tasks),
            tuple(tuple(0.0 for _ in t.parts) for t in tl.tasks),
        ),
    )
    clear_cache()


def test_the_rule_applies_on_fred_only_with_the_cards_costs():
    mesh = estimate("transformer-17b", "mesh", **PIPELINED)
    assert mesh.phase_rule == {} and "packet" not in mesh.switch_timing
    fred = estimate("transformer-17b", "fred-a", **PIPELINED)
    rule = fred.phase_rule
    assert rule["preempt_s"] == pytest.approx(20e-9)  # 20 cycles at the assumed 1 GHz
    # The switch loses nothing of a port to the served phase's VC (built-in card), alone or
    # while a lower phase waits; the header's 8/9 is every fabric's, the mesh's too.
    assert rule["switch_fraction"] == 1.0 and rule["competing_share"] == 1.0
    assert rule["slowed_s"] == {}
    assert fred.payload_fraction == mesh.payload_fraction == pytest.approx(8 / 9)
    # PP crosses switches where MP runs: it waits; MP never does.
    assert rule["waited_s"]["pp"] > 0 and "mp" not in rule["waited_s"]
    assert fred.switch_timing["packet"]["derived"] == list(default_card().packet_costs.derived)


def test_without_overlap_or_header_the_times_are_unchanged(tmp_path, monkeypatch):
    """ResNet-152 on pure DP has one communicating class, so nothing waits and the VC share
    (paid only while a lower class waits) costs nothing; a card without a header flit leaves
    the rates alone: the estimate equals one without the rule."""
    card = _card(tmp_path, header_flits=0, vc_share=0.5)
    with_rule = estimate("resnet-152", "fred-d", timing_card=card)
    _without_rule(monkeypatch)
    alone = estimate("resnet-152", "fred-d", timing_card=card)
    assert with_rule.time == alone.time
    assert with_rule.breakdown == alone.breakdown


def test_priority_only_slows_lower_classes_and_header_stretches_all(tmp_path, monkeypatch):
    no_header = _card(tmp_path, header_flits=0)
    ordered = estimate("transformer-17b", "fred-a", timing_card=no_header, **PIPELINED)
    full = estimate("transformer-17b", "fred-a", **PIPELINED)
    _without_rule(monkeypatch)
    alone = estimate("transformer-17b", "fred-a", timing_card=no_header, **PIPELINED)
    # The priority alone: PP waits for MP, the iteration gets longer, MP is not slowed.
    assert ordered.time > alone.time
    assert ordered.breakdown["pp"] > alone.breakdown["pp"]
    assert ordered.breakdown["mp"] == pytest.approx(alone.breakdown["mp"], rel=0.01)
    # The header flit stretches every transfer by 9/8 on top of that.
    assert full.time > ordered.time
    assert full.breakdown["mp"] == pytest.approx(9 / 8 * ordered.breakdown["mp"], rel=0.01)


def test_the_vc_share_slows_the_served_phase_only_while_a_lower_one_waits(tmp_path):
    """With PP waiting for MP on shared switches, a card whose served VC keeps half its rate
    while competing stretches MP (by the overlapped time) and makes PP wait longer; the
    mesh's estimate does not move."""
    half = _card(tmp_path, vc_share=0.5)
    full = estimate("transformer-17b", "fred-a", **PIPELINED)
    slow = estimate("transformer-17b", "fred-a", timing_card=half, **PIPELINED)
    rule = slow.phase_rule
    assert rule["competing_share"] == 0.5 and rule["switch_fraction"] == 1.0
    assert rule["slowed_s"]["mp"] > 0 and "dp" not in rule["slowed_s"]
    assert slow.breakdown["mp"] > full.breakdown["mp"]
    assert rule["waited_s"]["pp"] > full.phase_rule["waited_s"]["pp"]
    assert slow.time > full.time
    # Slowed by half while competing: at most twice the time of its own parts.
    assert slow.breakdown["mp"] <= 2 * full.breakdown["mp"]
    mesh = estimate("transformer-17b", "mesh", **PIPELINED)
    assert estimate("transformer-17b", "mesh", timing_card=half, **PIPELINED).time == mesh.time
