"""The FRED phase rule on a task graph: one phase per switch at a time, MP > PP > DP,
a preemption cost per interruption, the switch's share of a port for the served phase, and
the competing share a served phase keeps while a lower one waits on its switch."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fredfab.model.training.phase_priority import PhaseRule, prioritise, tree_switches
from fredfab.model.training.timeline import Timeline


def by_name(groups):
    """Test fabrics: a group's members are the switches it uses."""
    return frozenset(groups)


def comm(tl, name, cls, dur, switches, delay=0.0):
    """A communication task of class ``cls`` on its own resource, after ``delay`` of compute
    on that resource; returns the communication task's id."""
    res = f"r-{name}"
    if delay:
        tl.add(f"{name}-wait", res, delay)
    return tl.add(name, res, dur, cls, where=[tuple(switches)])


def times(tl):
    s = tl.schedule()
    return s.start, s.end


def test_no_overlap_in_time_or_switches_gives_the_same_times():
    tl = Timeline()
    # MP, then PP, then DP on one switch, one after the other.
    a = comm(tl, "mp", "mp", 1.0, [0])
    b = tl.add("pp", "x", 2.0, "pp", deps=[a], where=[(0,)])
    tl.add("dp", "y", 3.0, "dp", deps=[b], where=[(0,)])
    # At the same time as all of them, on other switches: nothing waits.
    comm(tl, "dp2", "dp", 5.0, [1])
    comm(tl, "pp2", "pp", 5.0, [2, 3])
    out = prioritise(tl, PhaseRule(preempt_s=0.25), by_name)
    assert times(out.timeline) == times(tl)  # exactly
    assert not any(out.preemptions) and not any(sum(w) for w in out.waited)


def test_lower_classes_wait_in_priority_order():
    tl = Timeline()
    d = comm(tl, "dp", "dp", 3.0, [0])
    p = comm(tl, "pp", "pp", 2.0, [0])
    m = comm(tl, "mp", "mp", 1.0, [0])
    out = prioritise(tl, PhaseRule(preempt_s=0.25), by_name)
    _, end = times(out.timeline)
    # All three ready at 0: MP runs first, then PP, then DP; nobody was running when a
    # higher class came, so nobody pays a preemption.
    assert (end[m], end[p], end[d]) == (1.0, 3.0, 6.0)
    assert out.preemptions == (0, 0, 0)


def test_a_preempted_phase_pays_once_per_interruption_and_resumes():
    tl = Timeline()
    d = comm(tl, "dp", "dp", 3.0, [0])
    m1 = comm(tl, "mp1", "mp", 1.0, [0], delay=1.0)  # arrives at 1, runs 1..2
    m2 = comm(tl, "mp2", "mp", 0.5, [0], delay=2.5)  # arrives at 2.5, runs 2.5..3
    out = prioritise(tl, PhaseRule(preempt_s=0.125), by_name)
    _, end = times(out.timeline)
    assert (end[m1], end[m2]) == (2.0, 3.0)  # MP never slowed
    # DP: 1 s done, stopped 1 s (+0.125), 0.5 s more by 2.625, stopped until 3 (+0.125),
    # the last 1.5 s: 3 s of work + 1.5 s of MP + two preemptions.
    assert out.preemptions[d] == 2
    assert end[d] == pytest.approx(3.0 + 1.5 + 2 * 0.125)
    assert out.waited[d] == (pytest.approx(1.5 + 2 * 0.125),)


def test_mp_is_never_slowed_by_lower_classes():
    tl = Timeline()
    ms = [comm(tl, f"mp{k}", "mp", 1.0 + k, [0], delay=0.5 * k) for k in range(3)]
    comm(tl, "dp", "dp", 10.0, [0])
    comm(tl, "pp", "pp", 4.0, [0], delay=0.2)
    alone = Timeline()
    for k in range(3):
        comm(alone, f"mp{k}", "mp", 1.0 + k, [0], delay=0.5 * k)
    end_alone = times(alone)[1]
    end = times(prioritise(tl, PhaseRule(preempt_s=0.1), by_name).timeline)[1]
    assert [end[t] for t in ms] == [end_alone[t] for t in ms]


def test_switch_fraction_scales_every_communication_part_not_compute():
    tl = Timeline()
    tl.add("f", "s", [("compute", 2.0), ("mp", 1.0)])
    tl.add("in", "io", 0.9, "input")
    out = prioritise(tl, PhaseRule(switch_fraction=0.9), by_name).timeline
    assert out.tasks[0].parts == (("compute", 2.0), ("mp", pytest.approx(1.0 / 0.9)))
    assert out.tasks[1].parts == (("input", pytest.approx(1.0)),)


def test_without_overlap_the_competing_share_changes_nothing():
    """Parts that never wait for each other (apart in time, or on other switches) keep their
    rate whatever the share: it is paid only while a lower class waits."""
    tl = Timeline()
    a = comm(tl, "mp", "mp", 1.0, [0])
    b = tl.add("pp", "x", 2.0, "pp", deps=[a], where=[(0,)])
    tl.add("dp", "y", 3.0, "dp", deps=[b], where=[(0,)])
    comm(tl, "dp2", "dp", 5.0, [1])
    comm(tl, "pp2", "pp", 5.0, [2, 3])
    tl.add("in", "io", 4.0, "input", where=[(0,)])  # I/O beside MP on its switch
    out = prioritise(tl, PhaseRule(preempt_s=0.25, competing_share=0.5), by_name)
    assert times(out.timeline) == times(tl)  # exactly
    assert not any(sum(s) for s in out.slowed) and not any(sum(w) for w in out.waited)


@pytest.mark.parametrize("share", [1.0, 0.9, 0.5])
def test_mp_overlapping_dp_is_stretched_by_the_share_and_dp_waits_for_it(share):
    """MP (2 s of work) alone for 1 s, then DP arrives on its switch and waits: MP's last
    1 s of work takes 1/share s, and DP waits exactly that long."""
    tl = Timeline()
    m = comm(tl, "mp", "mp", 2.0, [0])
    d = comm(tl, "dp", "dp", 1.0, [0], delay=1.0)
    io = tl.add("in", "io", 3.0, "input", where=[(0,)])
    out = prioritise(tl, PhaseRule(preempt_s=0.125, competing_share=share), by_name)
    start, end = times(out.timeline)
    overlap = 1.0 / share  # the wall time MP's last second of work takes while DP waits
    assert end[m] == pytest.approx(1.0 + overlap)
    assert out.slowed[m] == (pytest.approx(overlap - 1.0),)
    assert out.waited[m] == (0.0,)
    # DP never progressed before MP ended: no preemption, only the longer wait.
    assert start[d] == 1.0 and out.waited[d] == (pytest.approx(overlap),)
    assert end[d] == pytest.approx(1.0 + overlap + 1.0) and out.preemptions[d] == 0
    assert out.slowed[d] == (0.0,)
    # I/O is neither stopped nor slowed.
    assert end[io] == 3.0 and out.slowed[io] == (0.0,)


def test_the_share_applies_to_whichever_class_stops_a_lower_one():
    """PP served while DP waits on its switch keeps the share too; MP that stops PP on one
    switch is slowed, while MP on a switch nobody waits for is not."""
    tl = Timeline()
    p = comm(tl, "pp", "pp", 1.0, [0])
    d = comm(tl, "dp", "dp", 1.0, [0])
    m = comm(tl, "mp", "mp", 1.0, [1])  # nobody else on switch 1
    out = prioritise(tl, PhaseRule(competing_share=0.5), by_name)
    _, end = times(out.timeline)
    assert (end[p], end[d], end[m]) == (2.0, 3.0, 1.0)
    assert out.slowed[p] == (1.0,) and out.waited[d] == (2.0,)
    assert out.slowed[m] == (0.0,)


def test_dependencies_and_resource_order_still_hold():
    """A stretched DP delays what depends on it, exactly as a longer DP would."""
    tl = Timeline()
    d = comm(tl, "dp", "dp", 2.0, [0])
    comm(tl, "mp", "mp", 1.0, [0], delay=0.5)
    after = tl.add("opt", "s", 1.0, deps=[d])
    out = prioritise(tl, PhaseRule(preempt_s=0.0), by_name)
    start, end = times(out.timeline)
    assert end[d] == 3.0 and start[after] == 3.0


def test_rule_values_are_checked():
    with pytest.raises(ValueError, match="switch_fraction"):
        PhaseRule(switch_fraction=0.0)
    with pytest.raises(ValueError, match="competing_share"):
        PhaseRule(competing_share=0.0)
    with pytest.raises(ValueError, match="competing_share"):
        PhaseRule(competing_share=1.5)
    with pytest.raises(ValueError, match="preempt_s"):
        PhaseRule(preempt_s=-1.0)


def test_tree_switches_are_those_on_the_routes_among_members():
    # root switch 0; L1 switches 1 and 2; NPUs 3, 4 under 1 and 5 under 2.
    parent = [-1, 0, 0, 1, 1, 2]
    sw = tree_switches(parent, lambda v: v < 3)
    assert sw((3, 4)) == {1}
    assert sw((3, 5)) == {0, 1, 2}
    assert sw((4, 3, 5)) == {0, 1, 2}
    assert sw(()) == frozenset()


RANK = {"mp": 0, "pp": 1, "dp": 2}


def _measure(intervals, a, b):
    """Length of the union of ``intervals`` inside [a, b]."""
    cut = sorted((max(x, a), min(y, b)) for x, y in intervals if min(y, b) > max(x, a))
    total, reach = 0.0, a
    for x, y in cut:
        x = max(x, reach)
        if y > x:
            total += y - x
            reach = y
    return total


tasks = st.lists(
    st.tuples(
        st.sampled_from(["mp", "pp", "dp"]),
        st.floats(0.1, 5.0),  # duration
        st.floats(0.0, 5.0),  # arrival
        st.sets(st.integers(0, 2), min_size=1, max_size=2),  # switches
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=150, deadline=None)
@given(tasks, st.sampled_from([0.0, 0.05]), st.sampled_from([1.0, 0.9, 0.5]))
def test_each_phase_waits_exactly_for_higher_classes_on_its_switches(spec, preempt, share):
    """Busy time is conserved: a part's stretch is the time higher classes held a switch it
    uses while it was pending, plus one preemption per interruption, plus (1 - share) of the
    time it progressed while a lower class was pending on a switch it uses; MP is never
    stopped, and a lower class never makes a higher one wait."""
    tl = Timeline()
    ids = [comm(tl, f"c{k}", c, d, sw, delay=a) for k, (c, d, a, sw) in enumerate(spec)]
    out = prioritise(tl, PhaseRule(preempt_s=preempt, competing_share=share), by_name)
    start, end = times(out.timeline)
    for k, (c, d, a, sw) in enumerate(spec):
        t = ids[k]
        assert start[t] == pytest.approx(a)
        sharing = [(j, c2) for j, (c2, _, _, sw2) in enumerate(spec) if sw & sw2]
        higher = [(start[ids[j]], end[ids[j]]) for j, c2 in sharing if RANK[c2] < RANK[c]]
        lower = [(start[ids[j]], end[ids[j]]) for j, c2 in sharing if RANK[c2] > RANK[c]]
        blocked = _measure(higher, start[t], end[t])
        # Progressing (no higher class holds its switches) while a lower class is pending.
        competing = _measure(higher + lower, start[t], end[t]) - blocked
        assert out.waited[t][0] == pytest.approx(blocked + preempt * out.preemptions[t], abs=1e-9)
        assert out.slowed[t][0] == pytest.approx((1 - share) * competing, abs=1e-9)
        assert end[t] - start[t] == pytest.approx(d + out.waited[t][0] + out.slowed[t][0], abs=1e-9)
        if c == "mp":
            assert out.waited[t] == (0.0,) and out.preemptions[t] == 0
            if share == 1.0:  # MP keeps its time when competing costs nothing
                assert out.timeline.tasks[t].parts == (("mp", d),)
