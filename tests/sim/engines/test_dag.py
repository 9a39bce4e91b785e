"""The DAG simulation of Chakra traces: against `fred collective`, hand-computed timelines,
link sharing between overlapping collectives, and the breakdown adding up."""

import pytest

from fredfab.model.chakra import read_trace, write_trace
from fredfab.model.chakra.trace import TraceNode
from fredfab.model.system import CollectiveRequest, load_fabric
from fredfab.sim.engines.dag import simulate_trace
from fredfab.sim.engines.system import simulate
from tests.chakra_nodes import coll, comp

MiB = 2**20


def run(tmp_path, ranks, fabric="fred-d", **kw):
    write_trace(tmp_path / "j", ranks)
    return simulate_trace(read_trace(tmp_path / "j"), load_fabric(fabric), **kw)


@pytest.mark.parametrize(
    ("fabric", "comm_type", "op"),
    [
        ("fred-d", 0, "all-reduce"),
        ("fred-b", 7, "reduce-scatter"),
        ("mesh-5x4", 2, "all-gather"),
        ("fred-a", 6, "all-to-all"),
    ],
)
def test_a_collective_only_trace_equals_fred_collective(tmp_path, fabric, comm_type, op):
    size = 24 * MiB
    res = run(tmp_path, [[coll(0, size, comm_type=comm_type)]] * 20, fabric)
    alone = simulate(load_fabric(fabric), [CollectiveRequest(op, range(20), size)])
    # Communication runs at the packets' payload rate, as in the training estimates.
    assert res.time * res.payload_fraction == pytest.approx(alone.time, rel=1e-12)
    assert res.breakdown == pytest.approx({op: res.time, "compute": 0.0, "idle": 0.0})
    assert res.algorithms == {alone.requests[0].algorithm: 1}


def test_compute_and_overlap_match_a_hand_computed_timeline(tmp_path):
    fab = load_fabric("fred-d")
    size = 2048 * MiB
    one = simulate(fab, [CollectiveRequest("all-reduce", range(20), size)]).time
    f = fab.timing.card.packet_costs.header_payload_fraction
    a = one / f  # the all-reduce at the payload rate
    assert a > 0.5e-3  # so that it outlasts the compute it overlaps
    # c0 (1 ms) -> all-reduce x1 and c2 (0.5 ms) run together -> c3 (0.2 ms) needs both;
    # c4 (0.1 ms) is ready with c2 but has the higher id, so it runs after it.
    prog = [
        comp(0, 1e-3),
        coll(1, size, deps=[0]),
        comp(2, 0.5e-3, deps=[0]),
        comp(4, 0.1e-3, deps=[0]),
        comp(3, 0.2e-3, deps=[1, 2]),
    ]
    res = run(tmp_path, [prog] * 20)
    start, end = res.start[0], res.end[0]
    pos = {n.id: i for i, n in enumerate(res.job.trace.programs[0].nodes)}
    assert end[pos[2]] == pytest.approx(1.5e-3)
    assert (start[pos[4]], end[pos[4]]) == pytest.approx((1.5e-3, 1.6e-3))
    assert end[pos[1]] == pytest.approx(1e-3 + a)
    t3 = max(1e-3 + a, 1.6e-3)
    assert (start[pos[3]], res.time) == pytest.approx((t3, t3 + 0.2e-3))
    exposed = t3 - 1.6e-3
    assert res.breakdown == pytest.approx(
        {"compute": 1.8e-3, "all-reduce": exposed, "idle": 0.0}, abs=1e-12
    )
    assert sum(res.breakdown.values()) == pytest.approx(res.time)


def test_overlapping_collectives_share_links(tmp_path):
    size = 256 * MiB
    alone = run(tmp_path, [[coll(0, size)]] * 20, "mesh-5x4").time
    # Two independent all-reduces at once take longer than one, less than two in a row.
    both = run(tmp_path, [[coll(0, size), coll(1, size)]] * 20, "mesh-5x4").time
    assert alone < both < 2 * alone * 1.001
    # The second launched half-way through the first: it finishes later than alone would.
    late = [coll(0, size), comp(1, alone / 2), coll(2, size, deps=[1])]
    res = run(tmp_path, [late] * 20, "mesh-5x4")
    pos = {n.id: i for i, n in enumerate(res.job.trace.programs[0].nodes)}
    assert res.end[0][pos[0]] > alone * 1.01  # slowed by the second
    assert res.end[0][pos[2]] > alone / 2 + alone * 1.01


def test_send_and_receive_meet_and_ranks_follow_the_placement(tmp_path):
    size = 8 * MiB
    s = TraceNode(1, "s", "COMM_SEND", deps=(0,), data_count=1, size=size, src=0, dst=1)
    r = TraceNode(1, "r", "COMM_RECV", size=size, src=0, dst=1)
    ranks = [[comp(0, 1e-3), s], [comp(0, 1e-4), r]]
    fab = load_fabric("mesh-5x4")
    res = run(tmp_path, ranks, "mesh-5x4", placement=[0, 19])
    p2p = simulate(fab, [CollectiveRequest("p2p", (0, 19), size)]).time
    assert res.time * res.payload_fraction == pytest.approx(1e-3 * res.payload_fraction + p2p)
    # Rank 1 waited from 0.1 ms for the transfer: idle, then exposed p2p.
    ref = res.breakdown
    assert res.reference == 0 and ref["compute"] == pytest.approx(1e-3)
    assert ref["p2p"] == pytest.approx(res.time - 1e-3)


def test_ranks_extra_for_the_fabric(tmp_path):
    write_trace(tmp_path / "x", [[comp(0, 1e-6)]] * 21)
    with pytest.raises(ValueError, match=r"21 ranks .*x\.20\.et is rank 20.* has 20 NPUs"):
        simulate_trace(read_trace(tmp_path / "x"), load_fabric("fred-d"))


def test_involved_dimensions_make_the_groups(tmp_path):
    # A 4 x 4 torus: involved_dim [True, False] spans dimension 0, so each rank all-reduces
    # with the 4 NPUs of its ring along dimension 0; the four rings run at once.
    from fredfab.model.system.topologies import torus

    fab = torus([4, 4], 50e9, 100e-9)
    node = TraceNode(0, "ar", "COMM_COLL", comm_type=0, size=MiB, involved_dim=(True, False))
    write_trace(tmp_path / "d", [[node]] * 16)
    res = simulate_trace(read_trace(tmp_path / "d"), fab, payload_fraction=1.0)
    rows = [CollectiveRequest("all-reduce", [4 * y + x for x in range(4)], MiB) for y in range(4)]
    assert res.time == pytest.approx(simulate(fab, rows).time, rel=1e-12)
    assert len(res.job.events) == 1 and len(res.job.events[0].instances) == 4
    # On a fabric without dimensions the attribute cannot be read.
    with pytest.raises(ValueError, match="involved_dim: names network dimensions"):
        simulate_trace(read_trace(tmp_path / "d"), load_fabric("fred-d"))
