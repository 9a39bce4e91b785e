"""Structure of Fred_m(P): wiring rules, counts, and the base cases."""

from collections import Counter

import pytest

from fredfab.model.switch.topology import BOUNDARY, Endpoint, Kind, Topology, stages_of


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6])
def test_benes_shape(k):
    """m = 2 and P = 2^k is a Benes network: 2k-1 stages of P/2 uSwitches."""
    P = 2**k
    topo = Topology.build(P, 2)
    assert topo.stages == 2 * k - 1
    per_stage = Counter(n.stage for n in topo.nodes)
    assert sorted(per_stage) == list(range(2 * k - 1))
    assert set(per_stage.values()) == {P // 2}
    assert all(n.n_in == 2 and n.n_out == 2 for n in topo.nodes)


def _expected_counts(P: int, m: int) -> Counter:
    """uSwitch counts by kind from the recursion's definition, independent of the builder."""
    if P == 2:
        return Counter({"RD": 1})
    r, odd = P // 2, P % 2
    n_mid = 2 if P == 3 else m
    c = Counter({"R": r, "D": r, "DEMUX": odd, "MUX": odd})
    for kind, n in _expected_counts(r + odd, m).items():
        c[kind] += n_mid * n
    return c


@pytest.mark.parametrize("m", [2, 3, 4])
@pytest.mark.parametrize("P", list(range(2, 26)) + [32, 33, 64])
def test_counts_follow_recursion(P, m):
    topo = Topology.build(P, m)
    counts = topo.counts()
    expected = _expected_counts(P, m)
    assert {k.value: counts[k.value] for k in Kind} == {k.value: expected[k.value] for k in Kind}
    assert counts["adders"] == expected["R"] + expected["RD"]
    assert counts["stages"] == stages_of(P)


@pytest.mark.parametrize("m", [2, 3])
@pytest.mark.parametrize("P", [2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17])
def test_graph_is_wired_once_and_acyclic(P, m):
    topo = Topology.build(P, m)
    dsts = Counter(lk.dst for lk in topo.links)
    srcs = Counter(lk.src for lk in topo.links)
    # Every node input and output, and every switch port, is used by exactly one link.
    expected_dst = {Endpoint(n.index, i) for n in topo.nodes for i in range(n.n_in)}
    expected_dst |= {Endpoint(BOUNDARY, p) for p in range(P)}
    expected_src = {Endpoint(n.index, q) for n in topo.nodes for q in range(n.n_out)}
    expected_src |= {Endpoint(BOUNDARY, p) for p in range(P)}
    assert set(dsts) == expected_dst and set(dsts.values()) == {1}
    assert set(srcs) == expected_src and set(srcs.values()) == {1}
    # Topological order: links go forward in node index and in stage.
    for lk in topo.links:
        if lk.src.node != BOUNDARY and lk.dst.node != BOUNDARY:
            assert lk.src.node < lk.dst.node
            assert topo.nodes[lk.src.node].stage < topo.nodes[lk.dst.node].stage


@pytest.mark.parametrize("P", [4, 5, 8, 9])
def test_port_pairs_share_outer_uswitches(P):
    """Ports 2k and 2k+1 enter input uSwitch k and leave output uSwitch k; odd P's last port
    uses the demux/mux; output j of in-uSwitch k feeds port k of middle j."""
    topo = Topology.build(P, 3)
    for p in range(P):
        n_in, n_out = topo.nodes[topo.inputs[p].node], topo.nodes[topo.outputs[p].node]
        if P % 2 and p == P - 1:
            assert (n_in.name, n_out.name) == ("demux", "mux")
        else:
            assert (n_in.name, topo.inputs[p].port) == (f"in{p // 2}", p % 2)
            assert (n_out.name, topo.outputs[p].port) == (f"out{p // 2}", p % 2)
    for k in range(P // 2):
        src = topo.node(f"in{k}")
        for j in range(3):
            dst = topo.sink[Endpoint(src.index, j)]
            assert topo.nodes[dst.node].name.startswith(f"m{j}.")
            mid_ports = P // 2 + P % 2
            # Port k of the middle: the 2-port uSwitch k // 2 on input k % 2, or its demux.
            name = topo.nodes[dst.node].name.removeprefix(f"m{j}.")
            if mid_ports == 2:
                assert (name, dst.port) == ("rd", k)
            elif mid_ports % 2 and k == mid_ports - 1:
                assert name == "demux"
            else:
                assert (name, dst.port) == (f"in{k // 2}", k % 2)


def test_base_case_fred3_uses_two_middles_for_any_m():
    for m in (2, 3, 5):
        c = Topology.build(3, m).counts()
        assert (c["R"], c["D"], c["RD"], c["DEMUX"], c["MUX"]) == (1, 1, 2, 1, 1)


@pytest.mark.parametrize("bad", [(1, 3), (0, 3), (4, 1), (4, 0), (2.0, 3)])
def test_bad_parameters(bad):
    with pytest.raises(ValueError, match="Fred_m"):
        Topology(*bad)


def test_to_dict_is_consistent():
    d = Topology.build(6, 3).to_dict()
    assert d["counts"]["uswitches"] == len(d["nodes"])
    assert len(d["links"]) == len(Topology.build(6, 3).links)
    assert sum(n["n_out"] * n["code_bits"] for n in d["nodes"]) == d["counts"]["config_bits"]
