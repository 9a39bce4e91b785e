"""The latency formulas (model/switch/latency.py): register slices and adder stages per node,
the longest path, and the path of every flow through a routed configuration."""

import numpy as np
import pytest

from fredfab.model.switch.arches import build_topology
from fredfab.model.switch.flow import Flow
from fredfab.model.switch.flowgen import random_flow_set
from fredfab.model.switch.graph import Kind
from fredfab.model.switch.latency import (
    MAX_ADDER_STAGES,
    adder_columns,
    carries_adder_pipeline,
    latency_cycles,
    node_cycles,
    path_cycles,
)
from fredfab.model.switch.router import RouteConflict, route

SHAPES = [(P, arch) for P in (2, 3, 4, 5, 6, 7, 8, 11, 16) for arch in ("clos", "xbar")]


@pytest.mark.parametrize("P,arch", SHAPES)
@pytest.mark.parametrize("regs", [0, 1, 2])
def test_without_adder_stages_the_latency_is_register_depth_times_slices(P, arch, regs):
    graph = build_topology(P, 3, arch)
    assert latency_cycles(graph, regs) == graph.register_depth * regs
    assert latency_cycles(graph, regs, 0) == graph.register_depth * regs


@pytest.mark.parametrize("P", [2, 3, 4, 5, 7, 8, 12, 16])
def test_clos_adder_columns_are_its_input_stages_and_base_cases(P):
    """Fred_m(P) adds in its R columns (the input stages of every level) and its RD column
    (the base cases): 1 + the levels above the base; every column there adds, every other
    column only multicasts."""
    graph = build_topology(P, 3, "clos")
    cols = adder_columns(graph)
    kinds = {s: {n.kind for n in graph.nodes if n.stage == s} for s in range(graph.stages)}
    assert cols == {s for s, ks in kinds.items() if ks & {Kind.R, Kind.RD}}
    assert len(cols) == (graph.stages + 1) // 2
    for s, ks in kinds.items():
        assert (s in cols) == (not ks <= {Kind.D, Kind.MUX}), (s, ks)
    # An odd Fred_m(P) routes its last port through a DEMUX that shares the R column.
    demuxes = [n for n in graph.nodes if n.kind is Kind.DEMUX]
    assert all(carries_adder_pipeline(graph, n.index) for n in demuxes)
    assert bool(demuxes) == any(p % 2 for p in _levels(P))


def _levels(P):
    while P > 2:
        yield P
        P = P // 2 + P % 2


@pytest.mark.parametrize("P,arch", SHAPES)
@pytest.mark.parametrize("regs,adder", [(1, 1), (1, 3), (0, 2), (2, MAX_ADDER_STAGES)])
def test_longest_path_adds_the_adder_stages_of_every_adding_column_on_it(P, arch, regs, adder):
    graph = build_topology(P, 3, arch)
    lat = latency_cycles(graph, regs, adder)
    if arch == "clos":
        # Every path crosses every column once.
        assert lat == graph.stages * regs + len(adder_columns(graph)) * adder
    else:
        # Leaf select, the tree's height of adding nodes, output select.
        height = graph.register_depth - 2
        assert lat == graph.register_depth * regs + height * adder
    cycles = node_cycles(graph, regs, adder)
    assert len(cycles) == len(graph.nodes)
    for n, c in zip(graph.nodes, cycles, strict=True):
        assert c == regs * n.registered + adder * carries_adder_pipeline(graph, n.index)


def _routings(P, arch, rng, count):
    out = []
    while len(out) < count:
        try:
            out.append(route(random_flow_set(rng, P), P, 3, arch=arch))
        except RouteConflict:
            continue
    return out


@pytest.mark.parametrize("P", [3, 4, 5, 8, 9, 16])
@pytest.mark.parametrize("regs,adder", [(1, 0), (1, 2), (0, 3), (2, 1)])
def test_every_clos_flow_has_the_switch_latency(P, regs, adder):
    """Adding and passing nodes delay alike, so on the Clos every input of every flow reaches
    every output of the flow in exactly latency_cycles, whatever the routing."""
    graph = build_topology(P, 3, "clos")
    cycles = node_cycles(graph, regs, adder)
    lat = latency_cycles(graph, regs, adder)
    rng = np.random.default_rng(P * 10 + adder)
    for routing in _routings(P, "clos", rng, 6):
        paths = path_cycles(graph, routing.config.codes, cycles)
        for f in routing.flows:
            for q in f.ops:
                assert paths[q] == {p: lat for p in f.ips}, (f, q)


@pytest.mark.parametrize("P", [3, 4, 5, 8, 13])
def test_crossbar_paths_end_where_segments_complete(P):
    """On the crossbar a flow's latency depends on the tree node where its segment completes:
    an All-Reduce over every port completes at the root (the longest path, from the deepest
    leaf; all leaves are that deep when P is a power of two); any flow takes at most that,
    and at least leaf select, one tree node (where a one-leaf segment leaves the tree) and
    output select."""
    graph = build_topology(P, 3, "xbar")
    regs, adder = 1, 2
    cycles = node_cycles(graph, regs, adder)
    lat = latency_cycles(graph, regs, adder)
    everyone = route([Flow(range(P), range(P))], P, arch="xbar")
    paths = path_cycles(graph, everyone.config.codes, cycles)
    for path in paths:
        assert set(path) == set(range(P)) and max(path.values()) == lat
        assert (min(path.values()) == lat) == (P & (P - 1) == 0)
    unicast = route([Flow([p], [(p + 1) % P]) for p in range(P)], P, arch="xbar")
    paths = path_cycles(graph, unicast.config.codes, cycles)
    shortest = 2 * regs + (regs + adder)
    assert all(set(paths[(p + 1) % P]) == {p} for p in range(P))
    assert all(shortest <= c <= lat for path in paths for c in path.values())
    rng = np.random.default_rng(P)
    for routing in _routings(P, "xbar", rng, 6):
        paths = path_cycles(graph, routing.config.codes, cycles)
        for f in routing.flows:
            for q in f.ops:
                assert set(paths[q]) == set(f.ips)
                assert all(shortest <= c <= lat for c in paths[q].values())


def test_ports_that_nothing_reaches_have_no_paths():
    graph = build_topology(4, 3, "clos")
    routing = route([Flow([0, 1], [2])], 4, 3)
    paths = path_cycles(graph, routing.config.codes, node_cycles(graph, 1, 1))
    assert paths[2] == {0: latency_cycles(graph, 1, 1), 1: latency_cycles(graph, 1, 1)}
    assert paths[0] == paths[1] == paths[3] == {}


@pytest.mark.parametrize(
    "regs,adder,message",
    [
        (-1, 0, r"regs_per_stage must be >= 0, got -1"),
        (True, 0, r"regs_per_stage must be an integer, got True"),
        (1, -1, r"adder_stages must be >= 0 and <= 6, got -1"),
        (1, MAX_ADDER_STAGES + 1, r"adder_stages must be >= 0 and <= 6, got 7"),
        (1, 1.0, r"adder_stages must be an integer, got 1.0"),
    ],
)
def test_bad_counts_are_value_errors_saying_what_is_allowed(regs, adder, message):
    graph = build_topology(4, 3, "clos")
    with pytest.raises(ValueError, match=message):
        latency_cycles(graph, regs, adder)
    with pytest.raises(ValueError, match=message):
        node_cycles(graph, regs, adder)


def test_path_cycles_needs_one_latency_per_node():
    graph = build_topology(4, 3, "clos")
    codes = route([Flow([0], [1])], 4, 3).config.codes
    with pytest.raises(ValueError, match=r"3 node latencies for \d+ nodes"):
        path_cycles(graph, codes, [1, 1, 1])
