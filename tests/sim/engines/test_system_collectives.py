"""Collective times against closed forms, the packet model, and congestion."""

import pytest

from fredfab.model.system import (
    CollectiveRequest,
    Schedule,
    Strategy,
    SwitchTiming,
    build,
    fred_tree,
    load_fabric,
    mesh,
    plan_request,
)
from fredfab.model.timing_card import TimingCard, default_card
from fredfab.sim.engines.netsim import run_schedule
from fredfab.sim.engines.system import CollectiveConflict, phase_bandwidth, simulate

D = 64 * 2**20
REL = 1e-9


def ar(group, size=D, op="all-reduce"):
    return CollectiveRequest(op, group, size)


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_ring_all_reduce_closed_form_on_a_star(n):
    # Every ring hop is NPU -> switch -> NPU: 2 links + 1 switch pipeline.
    B, lat = 100e9, 10e-9
    f = fred_tree([n], [B], latency=lat, in_switch=False)
    hop = 2 * lat + f.timing.hop_latency
    t = simulate(f, [ar(range(n))], chunks=1).time
    assert t == pytest.approx(2 * (n - 1) * (D / (n * B) + hop), rel=REL)


@pytest.mark.parametrize("n", [2, 4, 7])
def test_ring_on_a_mesh_line_without_latency(n):
    # The closing hop runs back over the reverse links, which nothing else uses.
    f = mesh(n, 1, link_bandwidth=750e9, link_latency=0, io_controllers=0)
    r = simulate(f, [ar(range(n))], chunks=1)
    assert r.requests[0].algorithm == "ring"
    assert r.time == pytest.approx(2 * (n - 1) / n * D / 750e9, rel=REL)
    assert r.requests[0].busbw == pytest.approx(750e9, rel=REL)


@pytest.mark.parametrize(("w", "h"), [(5, 4), (3, 2), (4, 4)])
def test_mesh_2d_closed_form(w, h):
    B = 750e9
    f = mesh(w, h, link_bandwidth=B, link_latency=0, io_controllers=0)
    s = Schedule(f)  # by name: the mesh's default All-Reduce is faster (mesh_algorithms)
    build(s, plan_request(f, ar(range(w * h)), algorithm="mesh-2d"), chunks=1)
    expect = (2 * (w - 1) / w + 2 * (h - 1) / (h * w)) * D / B
    assert run_schedule(s).makespan == pytest.approx(expect, rel=REL)


@pytest.mark.parametrize(("name", "up"), [("fred-b", 1.5e12), ("fred-d", 12e12)])
def test_in_switch_all_reduce_is_d_over_b(name, up):
    f = load_fabric(name)
    r = simulate(f, [ar(range(20))])
    assert r.requests[0].algorithm == "in-switch-all-reduce"
    # NPU -> L1 -> L2 -> L1 -> NPU: 4 links, 3 switch pipelines.
    lat = 4 * 10e-9 + 3 * f.timing.hop_latency
    assert r.time == pytest.approx(D / min(3e12, up) + lat, rel=REL)
    # Inside one L1 switch: one link up, one down, one switch.
    r = simulate(f, [ar(range(4))])
    assert r.time == pytest.approx(D / 3e12 + 2 * 10e-9 + f.timing.hop_latency, rel=REL)


def test_hierarchical_ring_closed_form():
    k, g, b1, b2 = 4, 5, 3e12, 12e12
    f = fred_tree(
        [k, g], [b1, b2], latency=0, in_switch=False, timing=SwitchTiming(_card(latency=0))
    )
    r = simulate(f, [ar(range(k * g))], chunks=1)
    assert r.requests[0].algorithm == "hierarchical-ring"
    inter = 2 * (g - 1) / g * (D / k) / min(b1, b2 / k)
    assert r.time == pytest.approx(2 * (k - 1) / k * D / b1 + inter, rel=REL)


def test_in_switch_reduce_scatter_pays_n_serial_steps():
    f = load_fabric("fred-d")
    n = 4
    # Forced: inside one L1 switch the ring is faster ((n-1)/n D at 3 TB/s) and wins by default.
    r = simulate(
        f, [ar(range(n), op="reduce-scatter")], chunks=1, algorithm="in-switch-reduce-scatter"
    )
    lat = 2 * 10e-9 + f.timing.hop_latency
    # Each step: D/n at 3 TB/s; steps are serial, separated by a reconfiguration; the last
    # step's latency is paid once (each next step starts when the previous has been sent).
    expect = n * D / n / 3e12 + (n - 1) * f.timing.reconfiguration_time + lat
    assert r.time == pytest.approx(expect, rel=REL)


def test_io_broadcast_in_switch_runs_at_the_io_rate():
    f = load_fabric("fred-d")
    r = simulate(f, [CollectiveRequest("io-broadcast", range(20), D)], chunks=1)
    # 18 controllers each multicast D/18 at 128 GB/s; the NPU links (3 TB/s) take all 18.
    lat = 100e-9 + 3 * 10e-9 + 3 * f.timing.hop_latency  # I/O link, 3 links, 3 switches
    assert r.time == pytest.approx(D / 18 / 128e9 + lat, rel=REL)
    mesh_t = simulate(load_fabric("mesh"), [CollectiveRequest("io-broadcast", range(20), D)]).time
    assert mesh_t > r.time


@pytest.mark.parametrize(
    "op", ["reduce", "broadcast", "all-gather", "reduce-scatter", "all-to-all", "io-reduce"]
)
@pytest.mark.parametrize("fabric", ["mesh", "fred-a", "fred-b"])
def test_every_op_runs_and_respects_the_link_bound(op, fabric):
    f = load_fabric(fabric)
    r = simulate(f, [CollectiveRequest(op, range(8), D)])
    assert r.time > 0
    if op in ("all-gather", "reduce-scatter", "all-to-all"):
        # Every NPU receives at least (N-1)/N D through its links (at most 3 TB/s in).
        assert r.time >= 7 / 8 * D / 3e12


def test_p2p_closed_form_and_local_ops():
    f = load_fabric("fred-c")
    r = simulate(f, [CollectiveRequest("p2p", (0, 19), D)], chunks=1)
    lat = 4 * 10e-9 + 3 * f.timing.hop_latency
    assert r.time == pytest.approx(D / 3e12 + lat, rel=REL)
    assert simulate(f, [ar([3])]).time == 0.0


def test_concurrent_groups_sharing_a_link_slow_each_other():
    f = load_fabric("fred-a")  # 1.5 TB/s per L1 uplink
    dp0 = (0, 4, 8, 12, 16)
    alone = simulate(f, [ar(dp0)]).time
    four = simulate(f, [ar((i, i + 4, i + 8, i + 12, i + 16)) for i in range(4)])
    assert all(r.time > 3.5 * alone for r in four.requests)
    # Groups on separate L1 switches do not interfere.
    mp = simulate(f, [ar((4 * i, 4 * i + 1)) for i in range(5)])
    solo = simulate(f, [ar((0, 1))])
    assert mp.time == pytest.approx(solo.time, rel=REL)


def test_conflicting_in_switch_requests_are_serialised_or_rejected():
    f = load_fabric("fred-d")
    reqs = [ar((0, 1, 2, 3)), ar((0, 4, 8))]  # both use NPU 0's input port at once
    r = simulate(f, reqs, chunks=1)
    assert r.batches == 2 and r.fallbacks and "batch 1" in r.fallbacks[0]
    one = simulate(f, reqs[:1], chunks=1).time
    two = simulate(f, reqs[1:], chunks=1).time
    assert r.time == pytest.approx(one + two, rel=REL)
    assert r.requests[1].start == pytest.approx(one, rel=REL)
    with pytest.raises(CollectiveConflict, match="conflicts"):
        simulate(f, reqs, on_conflict="error")


def test_paper_placement_routes_every_phase_without_fallback():
    for name in ("fred-b", "fred-d"):
        res = phase_bandwidth(load_fabric(name), "MP2-DP5-PP2", D)
        assert set(res) == {"MP", "DP", "PP"}
        assert not any(p.fallbacks for p in res.values())
        assert res["DP"].algorithms == ("in-switch-all-reduce",)


def test_phase_bandwidth_orders_the_fabrics():
    st = Strategy(mp=2, dp=5, pp=2)
    dp = {
        n: phase_bandwidth(load_fabric(n), st, D)["DP"].busbw
        for n in ("mesh", "fred-a", "fred-b", "fred-c", "fred-d")
    }
    # Four DP groups share each L1 uplink: 1.5 TB/s / 4 per NPU on FRED-A (ring traffic).
    assert dp["fred-a"] == pytest.approx(1.5e12 / 4, rel=1e-3)
    assert dp["fred-d"] > dp["fred-c"] > dp["fred-b"] > dp["fred-a"]
    with pytest.raises(ValueError, match="needs 40 NPUs"):
        phase_bandwidth(load_fabric("mesh"), "MP2-DP5-PP4", D)


def _card(latency=None, frac=1.0):
    """The built-in card with another latency (None: its own) and throughput."""
    d = default_card().to_dict()
    if latency is not None:
        d["latency_cycles"] = latency
    d["throughput"] = {k: {"ready": frac, "backpressure": frac} for k in d["throughput"]}
    return TimingCard.from_dict(d)


def test_timing_card_throughput_and_latency_reach_the_collective_time():
    base = fred_tree([4, 5], [3e12, 12e12], in_switch=True)
    slow = fred_tree([4, 5], [3e12, 12e12], in_switch=True, timing=SwitchTiming(_card(frac=0.5)))
    late = fred_tree(
        [4, 5],
        [3e12, 12e12],
        in_switch=True,
        timing=SwitchTiming(_card(latency=default_card().latency_cycles + 1000)),
    )
    t0 = simulate(base, [ar(range(20))]).time
    assert simulate(slow, [ar(range(20))]).time == pytest.approx(
        2 * D / 3e12 + (t0 - D / 3e12), rel=REL
    )
    # Three switch pipelines on the path, each 1000 cycles longer at 1 GHz.
    assert simulate(late, [ar(range(20))]).time == pytest.approx(t0 + 3 * 1e-6, rel=REL)


SMALL = [
    (fred_tree([2, 2], [100e9, 50e9], in_switch=False), [ar(range(4), 4e6)]),
    (fred_tree([2, 2], [100e9, 50e9], in_switch=True), [ar(range(4), 4e6)]),
    (mesh(3, 2, link_bandwidth=100e9, io_controllers=0), [ar(range(6), 4e6)]),
    (mesh(3, 2, link_bandwidth=100e9, io_controllers=0), [ar((0, 2, 4), 4e6), ar((1, 3, 5), 4e6)]),
    (fred_tree([3], [100e9], in_switch=True), [CollectiveRequest("reduce-scatter", range(3), 3e6)]),
]


@pytest.mark.parametrize(("fab", "reqs"), SMALL, ids=lambda x: getattr(x, "name", ""))
@pytest.mark.parametrize("chunks", [1, 2])
def test_packet_model_agrees_with_flow_model(fab, reqs, chunks):
    flow = simulate(fab, reqs, chunks=chunks)
    # Packets small against the pipelined hierarchical ring's transfers (D / (2 x 64 chunks)
    # per step): a transfer of a few packets pays store-and-forward the flow model has not.
    pkt = simulate(fab, reqs, chunks=chunks, engine="packet", packet_bytes=4e6 / 1600)
    for a, b in zip(flow.requests, pkt.requests, strict=True):
        assert b.algorithm == a.algorithm
        assert b.time == pytest.approx(a.time, rel=0.02)


def test_packet_model_confirms_max_min_not_proportional_sharing():
    # Three flows into NPU 3 share its downlink; one of them also shares NPU 0's uplink
    # with 0 -> 1, which max-min gives the 2/3 the other cannot use.
    f = fred_tree([4], [100e9], in_switch=False)
    reqs = [CollectiveRequest("p2p", (s, 3), 6e6) for s in (0, 1, 2)]
    reqs.append(CollectiveRequest("p2p", (0, 1), 6e6))
    mm = simulate(f, reqs, chunks=1).requests[3].time
    pr = simulate(f, reqs, chunks=1, sharing="proportional").requests[3].time
    pk = simulate(f, reqs, chunks=1, engine="packet", packet_bytes=1e4).requests[3].time
    assert mm == pytest.approx(6e6 / (2 / 3 * 100e9) + 2 * 10e-9 + f.timing.hop_latency, rel=REL)
    assert pr > 1.25 * mm
    assert pk == pytest.approx(mm, rel=0.02)
