import pytest

from fredfab.model.system import Strategy


def test_paper_placement_mp_then_pp_then_dp():
    st = Strategy.parse("MP2-DP5-PP2")
    assert (st.mp, st.dp, st.pp, st.workers) == (2, 5, 2, 20)
    assert st.worker(1, 1, 4) == 1 + 2 * (1 + 2 * 4)
    assert st.mp_groups()[:2] == [(0, 1), (2, 3)]
    assert st.dp_groups()[0] == (0, 4, 8, 12, 16)
    assert st.pp_pairs()[0] == (0, 2)
    groups = st.mp_groups()
    assert sorted(u for g in groups for u in g) == list(range(20))
    assert Strategy.parse("dp20") == Strategy(dp=20)
    ph = st.phase_requests(1, 2, 3)
    assert [len(ph[k]) for k in ("MP", "DP", "PP")] == [10, 4, 10]


@pytest.mark.parametrize("bad", ["MP2-XP5", "MP0", "MP2-MP2", "", "MP2.5"])
def test_bad_strategies(bad):
    with pytest.raises(ValueError):
        Strategy.parse(bad)
