"""The phase-routability table in docs/ is recomputed here, and its inputs are checked."""

from pathlib import Path

import pytest

from fredfab.model.switch.flow import validate_flows
from fredfab.model.switch.phase_study import (
    PHASES,
    Strategy,
    factorisations,
    phase_flows,
    render_markdown,
    study,
)

DOC = Path(__file__).resolve().parents[3] / "docs" / "phase-routability.md"


def test_docs_table_is_current():
    assert DOC.read_text() == render_markdown(study()), (
        "docs/phase-routability.md is stale: regenerate with "
        "`python -m fredfab.model.switch.phase_study > docs/phase-routability.md`"
    )


def test_factorisations_are_complete_and_distinct():
    for P in (1, 12, 24):
        got = factorisations(P)
        assert len(set(got)) == len(got)
        assert all(s.ports == P for s in got)
        brute = {
            (a, b, c) for a in range(1, P + 1) for b in range(1, P + 1) for c in range(1, P + 1)
        }
        assert {(s.mp, s.dp, s.pp) for s in got} == {t for t in brute if t[0] * t[1] * t[2] == P}


def test_placement_is_mp_then_pp_then_dp():
    s = Strategy(mp=2, dp=3, pp=2)
    assert [s.port(0, 0, 0), s.port(1, 0, 0), s.port(0, 1, 0), s.port(0, 0, 1)] == [0, 1, 2, 4]
    assert sorted(s.port(a, b, c) for a in range(2) for b in range(2) for c in range(3)) == list(
        range(12)
    )


@pytest.mark.parametrize("s", factorisations(12) + factorisations(18))
def test_phases_are_valid_concurrent_flow_sets(s):
    for phase in PHASES:
        flows = phase_flows(s, phase)
        validate_flows(flows, s.ports)
        if phase == "MP":
            assert len(flows) == (s.dp * s.pp if s.mp > 1 else 0)
            assert all(f.ips == f.ops and len(f.ips) == s.mp for f in flows)
        if phase == "DP":
            assert all(f.ips == f.ops and len(f.ips) == s.dp for f in flows)
        if phase.startswith("PP"):
            assert len(flows) == (s.dp * (s.pp - 1) if s.pp > 1 else 0)
            assert all(len(f.ips) == 1 and len(f.ops) == s.mp for f in flows)


def test_unknown_phase():
    with pytest.raises(ValueError, match="unknown phase"):
        phase_flows(Strategy(2, 2, 2), "TP")
