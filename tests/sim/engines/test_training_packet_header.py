"""The packet header's cost on every fabric: the mesh's links carry the same packets as
FRED's, so every fabric's communication moves at the payload share the timing card's header
leaves; the switch's own costs (phase rule, credit rate, VC share) stay FRED's."""

import dataclasses
import json

import pytest

from fredfab.model.timing_card import default_card
from fredfab.model.training import workload_from_dict
from fredfab.sim.engines import training
from fredfab.sim.engines.training import clear_cache, compare, estimate

FABRICS = ["mesh", "fred-d"]


def _card(tmp_path, name="card", **fields):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(dataclasses.replace(default_card(), **fields).to_dict()))
    return path


def _mp_only(flops: float):
    """Four layers whose only communication is blocking MP All-Reduces (no parameters: no
    DP, no weights; no inputs): one communicating class, nothing overlaps communication."""
    return workload_from_dict(
        {
            "schema": "fred-workload/1",
            "name": "mp-only",
            "input_bytes": 0,
            "layers": [
                {
                    "name": "l",
                    "params": 0,
                    "fwd_flops": flops,
                    "in_bytes": 0,
                    "out_bytes": 0,
                    "hbm_bytes": 0,
                    "repeat": 4,
                    "mp_comm": [
                        {"op": "all-reduce", "pass": "fwd", "bytes": 2**24},
                        {"op": "all-reduce", "pass": "bwd", "bytes": 2**24},
                    ],
                }
            ],
            "training": {"strategy": "MP4-DP5-PP1", "samples_per_replica": 1},
        }
    )


def test_the_mesh_pays_the_cards_header_like_fred(tmp_path):
    wl = _mp_only(1e12)
    none = _card(tmp_path, "none", header_flits=0)
    two = _card(tmp_path, "two", header_flits=2)
    for f in FABRICS:
        base = estimate(wl, f, timing_card=none)
        built_in = estimate(wl, f)
        heavy = estimate(wl, f, timing_card=two)
        assert base.payload_fraction == 1.0
        assert built_in.payload_fraction == pytest.approx(8 / 9)
        assert heavy.payload_fraction == pytest.approx(8 / 10)
        # Blocking MP is all exposed: its time scales by exactly 1 / payload share.
        assert base.breakdown["mp"] > 0
        assert built_in.breakdown["mp"] == pytest.approx(9 / 8 * base.breakdown["mp"], rel=1e-9)
        assert heavy.breakdown["mp"] == pytest.approx(10 / 8 * base.breakdown["mp"], rel=1e-9)
        assert built_in.breakdown["compute"] == pytest.approx(base.breakdown["compute"], rel=1e-12)


@pytest.mark.parametrize("flops", [0.0, 1e12])
def test_fred_against_the_mesh_does_not_depend_on_the_header_without_overlap(tmp_path, flops):
    """With nothing overlapping, the header stretches both fabrics' exposed communication
    alike: the reduction of exposed communication is the same, and so is the speedup when
    there is no compute."""
    wl = _mp_only(flops)
    none = compare(wl, _card(tmp_path, header_flits=0), fabrics=FABRICS)
    full = compare(wl, fabrics=FABRICS)

    def reduction(res):
        mesh, fred = res.estimates
        return 1 - fred.exposed_comm / mesh.exposed_comm

    assert reduction(full) == pytest.approx(reduction(none), rel=1e-9)
    assert reduction(full) > 0
    speedups = [res.speedup(res.estimates[1]) for res in (none, full)]
    if flops == 0:
        assert speedups[1] == pytest.approx(speedups[0], rel=1e-9)
    else:  # compute does not stretch: the header weighs communication, where FRED gains
        assert 1 < speedups[0] < speedups[1]


def test_no_header_card_leaves_every_fabric_at_line_rate(tmp_path, monkeypatch):
    card = _card(tmp_path, header_flits=0)
    got = {f: estimate("transformer-17b", f, timing_card=card) for f in FABRICS}
    monkeypatch.setattr(training, "at_payload_rate", lambda tl, fraction: tl)
    clear_cache()
    for f in FABRICS:
        alone = estimate("transformer-17b", f, timing_card=card)
        assert got[f].time == alone.time and got[f].breakdown == alone.breakdown


def test_the_switchs_credit_rate_is_freds_only(tmp_path):
    """A card whose credit round trip is twice what the buffers cover gives a VC half a port:
    FRED's transfers slow down; the mesh's routers are not FRED switches, so only the
    header applies to them."""
    wl = _mp_only(0.0)
    half = _card(tmp_path, credit_rtt_cycles=72)
    mesh, fred = (estimate(wl, f, timing_card=half) for f in FABRICS)
    mesh0, fred0 = (estimate(wl, f) for f in FABRICS)
    assert mesh.time == mesh0.time
    assert fred.time == pytest.approx(2 * fred0.time, rel=1e-6)
    assert fred.phase_rule["switch_fraction"] == 0.5 and mesh.phase_rule == {}


def test_the_vc_share_costs_nothing_without_a_waiting_phase(tmp_path):
    """The VC share applies only while a lower phase waits on the switch: with MP the only
    communicating class, a card keeping half of it changes neither fabric."""
    wl = _mp_only(0.0)
    half = _card(tmp_path, vc_share=0.5)
    mesh, fred = (estimate(wl, f, timing_card=half) for f in FABRICS)
    mesh0, fred0 = (estimate(wl, f) for f in FABRICS)
    assert mesh.time == mesh0.time and fred.time == fred0.time
    assert fred.breakdown == fred0.breakdown
    assert fred.phase_rule["competing_share"] == 0.5 and mesh.phase_rule == {}
