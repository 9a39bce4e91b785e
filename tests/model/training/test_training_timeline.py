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
    # Seen from stage 0 (all stages equally busy: the first is the reference). The bubble is
    # what it would idle with free transfers, the classic (P - 1) (F + B); the transfers add
    # the rest, 2 (P - 1) c, all exposed PP: the fill's transfers delay the last stage, and
    # with it everything after, even though stage 0 keeps computing while they run.
    assert s.reference == "s0"
    assert s.breakdown["bubble"] == pytest.approx((P - 1) * 3.0)
    assert s.breakdown["pp"] == pytest.approx(2 * (P - 1) * c)


def test_bubble_and_exposed_kinds_do_not_depend_on_where_waits_fall():
    # Weight streaming's shape: layers alternate between two stages, two microbatches per
    # layer, each task compute then a blocking MP collective, a PP transfer between stages.
    # Attributing stage 0's waits to what stage 1 does meanwhile counted half of each
    # PP-caused gap as "mp" (stage 1's MP runs late because its input arrived late) and
    # moved fill time between "bubble" and "mp" as the MP time changed.
    def run(mp: float, c: float):
        tl = Timeline()
        last: dict[int, int] = {}
        for layer in range(4):
            s = layer % 2
            for i in range(2):
                dep = last.get(i)
                if dep is not None:
                    dep = tl.add("x", f"pp{1 - s}-{s}", c, "pp", deps=[dep])
                last[i] = tl.add(
                    f"L{layer}.{i}", f"s{s}", [("compute", 1.0), ("mp", mp)], deps=[dep]
                )
        return tl.schedule()

    for mp in (0.1, 0.6, 1.0):
        for c in (0.05, 0.3):
            s = run(mp, c)
            assert s.breakdown["bubble"] == pytest.approx(1.0)  # free transfers: one layer
            assert s.breakdown["mp"] == pytest.approx(run(mp, 0.0).breakdown["mp"])
            assert s.breakdown["pp"] == pytest.approx(3 * c)  # three stage crossings
            assert sum(s.breakdown.values()) == pytest.approx(s.makespan)


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
