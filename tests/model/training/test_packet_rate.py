"""Every fabric's communication at the payload rate packet headers leave."""

import pytest

from fredfab.model.training.packet_rate import at_payload_rate
from fredfab.model.training.timeline import Timeline


def _graph() -> Timeline:
    tl = Timeline()
    a = tl.add("f", "s", [("compute", 2.0), ("mp", 1.0)], where=[(0, 1)])
    tl.add("dp", "c", 0.5, "dp", deps=[a])
    tl.add("w", "io", 0.9, "weights")
    tl.add("b", "s", [("compute", 1.0), ("pp", 0.25), ("input", 0.125)])
    return tl


def test_every_communication_part_is_divided_and_compute_is_not():
    tl = _graph()
    out = at_payload_rate(tl, 8 / 9)
    for before, after in zip(tl.tasks, out.tasks, strict=True):
        for (c, d), (c2, d2) in zip(before.parts, after.parts, strict=True):
            assert c2 == c
            assert d2 == (d if c == "compute" else pytest.approx(d * 9 / 8))
        assert (after.name, after.resource, after.where) == (
            before.name,
            before.resource,
            before.where,
        )
    assert out.deps == tl.deps and dict(out.queue) == dict(tl.queue)
    # The input graph is not modified.
    assert tl.tasks[0].parts == (("compute", 2.0), ("mp", 1.0))


def test_pure_communication_scales_exactly_by_the_fraction():
    tl = Timeline()
    a = tl.add("x", "r1", 3.0, "mp")
    tl.add("y", "r2", 1.0, "dp", deps=[a])
    tl.add("z", "r3", 2.0, "pp")
    assert at_payload_rate(tl, 0.8).schedule().makespan == pytest.approx(4.0 / 0.8)


def test_no_header_leaves_the_graph_alone():
    tl = _graph()
    assert at_payload_rate(tl, 1.0) is tl


@pytest.mark.parametrize("bad", [0.0, -0.5, 1.5, float("nan")])
def test_the_fraction_is_checked(bad):
    with pytest.raises(ValueError, match="payload fraction"):
        at_payload_rate(_graph(), bad)
