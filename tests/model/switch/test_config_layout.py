"""The configuration field table: it tiles the bits, agrees with the encoding, and the node's
source codes decode back to what they were built from."""

import contextlib
import subprocess
import sys

import numpy as np
import pytest

from fredfab.model.switch.arches import ARCHES, build_topology
from fredfab.model.switch.flowgen import random_flow_set
from fredfab.model.switch.graph import NONE, Kind, Node, Source, SourceKind
from fredfab.model.switch.router import RouteConflict, route

GRAPHS = [("clos", P, m) for P in range(2, 18) for m in (2, 3, 4)]
GRAPHS += [("xbar", P, None) for P in range(2, 14)]


@pytest.mark.parametrize("arch,P,m", GRAPHS)
def test_fields_tile_the_configuration_without_gaps_or_overlaps(arch, P, m):
    topo = build_topology(P, m, arch)
    layout = topo.config_layout
    end = 0
    for f in sorted(layout.fields, key=lambda f: f.lsb):
        assert f.lsb == end, f"gap or overlap at {f}"
        end = f.lsb + f.width
    assert end == layout.bits == topo.config_bits
    assert sum(n.n_out * n.code_bits for n in topo.nodes) == layout.bits  # the encoding rule
    # Every node output has exactly one field, as wide as its node's codes need.
    assert sorted((f.node, f.output) for f in layout.fields) == sorted(
        (n.index, q) for n in topo.nodes for q in range(n.n_out)
    )
    for f in layout.fields:
        node = topo.nodes[f.node]
        assert (f.name, f.kind, f.width) == (node.name, node.kind, node.code_bits)
        assert 1 << f.width >= node.n_sources


@pytest.mark.parametrize("arch", list(ARCHES))
def test_every_code_sits_in_its_field_of_the_bits(arch):
    rng = np.random.default_rng(3)
    checked = 0
    while checked < 20:
        P = int(rng.integers(2, 16))
        with contextlib.suppress(RouteConflict):
            config = route(random_flow_set(rng, P), P, int(rng.integers(2, 4)), arch=arch).config
            bits = config.to_bits()
            for f in config.topology.config_layout.fields:
                assert (bits >> f.lsb) & ((1 << f.width) - 1) == config.codes[f.node][f.output]
            checked += 1


def test_words_count_from_the_table():
    layout = build_topology(8, 3).config_layout
    assert [layout.n_words(w) for w in (1, layout.bits, layout.bits - 1)] == [layout.bits, 1, 2]
    with pytest.raises(ValueError, match="word width"):
        layout.n_words(0)


def _nodes_of_every_kind() -> list[Node]:
    nodes = {}
    for topo in (build_topology(5, 3, "clos"), build_topology(5, None, "xbar")):
        for n in topo.nodes:
            nodes.setdefault((n.kind, n.n_in, n.n_out), n)
    return list(nodes.values())


def test_every_kind_is_covered():
    assert {n.kind for n in _nodes_of_every_kind()} == set(Kind)


@pytest.mark.parametrize(
    "node", _nodes_of_every_kind(), ids=lambda n: f"{n.kind}{n.n_in}x{n.n_out}"
)
def test_decode_and_encode_round_trip(node):
    for code in range(node.n_sources):
        assert node.encode(node.decode(code)) == code
    assert node.decode(NONE) == Source(SourceKind.NONE)
    for i in range(node.n_in):
        assert node.decode(node.source_input(i)) == Source(SourceKind.INPUT, i)
    if node.kind in (Kind.R, Kind.RD, Kind.ART):
        assert node.decode(node.source_sum()) == Source(SourceKind.SUM)
        assert node.sum_code == node.source_sum() == node.n_sources - 1
    else:
        assert node.sum_code is None
        with pytest.raises(ValueError, match="no adder"):
            node.source_sum()
    assert node.source_input(0) == 1  # the encoding stored configurations use
    with pytest.raises(ValueError, match="code"):
        node.decode(node.n_sources)
    with pytest.raises(ValueError, match="inputs"):
        node.source_input(node.n_in)


def test_source_text():
    rd = build_topology(2, 2).nodes[0]
    assert [str(rd.decode(c)) for c in range(rd.n_sources)] == ["none", "in0", "in1", "sum"]


def test_unknown_arch_names_the_known_ones():
    with pytest.raises(ValueError, match="use one of clos, xbar"):
        build_topology(4, 3, "mesh")


def test_graph_vocabulary_does_not_import_the_architectures():
    code = (
        "import sys, fredfab.model.switch.graph; "
        "print(sorted(m for m in sys.modules if m.startswith('fredfab.model')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "fredfab.model.switch.topology" not in out.stdout
    assert "fredfab.model.switch.xbar_topology" not in out.stdout
    assert "fredfab.model.switch.graph" in out.stdout
