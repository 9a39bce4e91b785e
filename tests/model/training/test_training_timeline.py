"""Task graph scheduling and the critical-path breakdown, against hand-computed cases."""

import pytest

from fredfab.model.training.timeline import Timeline


def pipeline(P, m, F, B, c=0.0, gpipe=False):
    """Uniform pipeline: every stage takes F forward and B backward per microbatch; c per
    transfer between stages."""
    tl = Timeline()
    f, b = {}, {}
    for s in range(P):
        warm = m if gpipe else min(P - s - 1, m)
        order = [("F", i) for i in range(warm)]
        for i in range(m - warm):
            order += [("F", warm + i), ("B", i)]
        order += [("B", i) for i in range(m - warm, m)]
        for k, i in order:
            (f if k == "F" else b)[s, i] = tl.add(f"{k}{s}.{i}", f"s{s}", F if k == "F" else B)
    for s in range(1, P):
        for i in range(m):
            a = tl.add("a", f"fw{s}", c, "pp", [f[s - 1, i]])
            tl.depend(f[s, i], a)
            g = tl.add("g", f"bw{s}", c, "pp", [b[s, i]])
            tl.depend(b[s - 1, i], g)
    return tl.schedule()


@pytest.mark.parametrize("gpipe", [False, True])
@pytest.mark.parametrize("P, m", [(1, 1), (2, 8), (4, 4), (5, 20)])
def test_uniform_pipeline_closed_form(P, m, gpipe):
    # (m + P - 1) slots of F and of B: the classic bubble, same for GPipe and 1F1B.
    s = pipeline(P, m, 1.0, 2.0, gpipe=gpipe)
    assert s.makespan == pytest.approx((m + P - 1) * 3.0)
    # Every stage computes m (F + B); the rest is the bubble.
    assert s.breakdown["compute"] == pytest.approx(m * 3.0)
    assert s.breakdown["bubble"] == pytest.approx((P - 1) * 3.0)


def test_pipeline_transfers_on_the_critical_path():
    P, m, c = 3, 6, 0.25

    s = pipeline(P, m, 1.0, 2.0, c=c, gpipe=True)
    # The fill and the drain each cross P - 1 transfers.
    assert s.makespan == pytest.approx((m + P - 1) * 3.0 + 2 * (P - 1) * c)
    assert sum(s.breakdown.values()) == pytest.approx(s.makespan)
    assert s.breakdown["compute"] == pytest.approx(m * 3.0)
    # Seen from stage 0 (all stages equally busy: the first is the reference), the fill's
    # transfers happen while it computes later microbatches (hidden); it waits through the
    # drain, whose P - 1 gradient transfers are exposed. Ties on the forward path of the
    # last microbatch go to compute (stage 1's chain is as long as the transfer path).
    assert s.reference == "s0"
    assert s.breakdown["pp"] == pytest.approx((P - 1) * c)
    assert s.breakdown["bubble"] == pytest.approx(s.makespan - m * 3.0 - (P - 1) * c)


def test_overlap_hides_short_communication_and_exposes_long():
    for comm, exposed in ((0.5, 0.0), (3.0, 1.0)):
        tl = Timeline()
        b1 = tl.add("b1", "npu", 1.0)
        tl.add("ar1", "net", comm, "dp", [b1])  # overlaps b2
        b2 = tl.add("b2", "npu", 2.0)
        ar2 = tl.add("ar2", "net", 0.5, "dp", [b2])
        s = tl.schedule()
        # ar2 waits for b2 (ends 3.0) and for ar1 (ends 1 + comm).
        assert s.start[ar2] == pytest.approx(max(3.0, 1.0 + comm))
        assert s.breakdown["dp"] == pytest.approx(0.5 + exposed)
        assert s.breakdown["compute"] == pytest.approx(s.makespan - 0.5 - exposed)


def test_parts_and_cycle_detection():
    tl = Timeline()
    t = tl.add("f", "npu", [("compute", 1.0), ("mp", 0.25)])
    s = tl.schedule()
    assert s.breakdown["mp"] == 0.25 and s.makespan == 1.25 and s.critical == (t,)
    assert s.breakdown["bubble"] == 0.0
    tl2 = Timeline()
    a = tl2.add("a", "x", 1.0)
    b = tl2.add("b", "y", 1.0, deps=[a])
    tl2.depend(a, b)
    with pytest.raises(RuntimeError, match="cycle"):
        tl2.schedule()
    with pytest.raises(ValueError, match="category"):
        Timeline().add("z", "x", 1.0, "gossip")
