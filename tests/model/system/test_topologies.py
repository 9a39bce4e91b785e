import numpy as np
import pytest

from fredfab.model.system import Fabric, FabricError, fabric_from_dict
from fredfab.model.system.dims import FULLY_CONNECTED, RING, SWITCH, Dim, Dims
from fredfab.model.system.elements import MAX_NPUS, build_links
from fredfab.model.system.topologies import dims_fabric, fully_connected, ring, single_switch, torus
from fredfab.model.system.units import GB, NS


def _hops(f: Fabric, src: int, dst: int) -> list[int]:
    return [int(f.link_dst[lk]) for lk in f.route(src, dst)]


def test_npu_ids_are_mixed_radix_dimension_0_fastest():
    # ASTRA-sim's own example (MultiDimTopology::translate_id_to_address): [2, 8, 4], 47.
    d = Dims((Dim(RING, 2, 1.0, 0.0), Dim(FULLY_CONNECTED, 8, 1.0, 0.0), Dim(SWITCH, 4, 1.0, 0.0)))
    assert d.coords([47]).tolist() == [[1, 7, 2]]
    assert d.npu([1, 7, 2]) == 47
    assert d.strides == (1, 2, 16) and d.num_npus == 64 and d.num_switches == 16


def test_a_ring_takes_the_shorter_way_and_clockwise_on_a_tie():
    f = ring(8)
    assert _hops(f, 0, 3) == [1, 2, 3]
    assert _hops(f, 0, 5) == [7, 6, 5]  # 3 hops back rather than 5 ahead
    assert _hops(f, 6, 1) == [7, 0, 1]  # through the wrap link
    assert _hops(f, 0, 4) == [1, 2, 3, 4]  # 4 either way: clockwise
    assert len(f.links) == 16  # 8 links, both directions


def test_a_two_npu_ring_has_one_link_each_way():
    f = ring(2)
    assert [(lk.src, lk.dst) for lk in f.links] == [(0, 1), (1, 0)]


def test_fully_connected_links_every_pair_directly():
    f = fully_connected(5)
    assert len(f.links) == 5 * 4
    assert all(_hops(f, a, b) == [b] for a in range(5) for b in range(5) if a != b)


def test_a_switch_dimension_routes_through_its_group_switch():
    f = dims_fabric([Dim(RING, 2, 100 * GB, 10 * NS), Dim(SWITCH, 4, 50 * GB, 20 * NS)])
    assert f.num_npus == 8 and len(f.switches) == 2  # one switch per group of dimension 1
    path = [f.nodes[v].name for v in _hops(f, 0, 7)]
    # Dimension 0 first (0 -> 1), then through the switch of NPU 1's group (1, 3, 5, 7).
    assert path == ["npu1", "sw1.1", "npu7"]
    assert _hops(f, 2, 6)[0] == f.dims.switch_of(2, 1) == f.node_by_name("sw1.0")


def test_astra_switches_are_ideal_not_fred_switches():
    f = single_switch(4, 50 * GB, 20 * NS)
    links = np.array(f.route(0, 3))
    # No FRED pipeline latency and no throughput card on a link leaving the switch.
    assert np.allclose(f.hop_latency[links], 20 * NS)
    assert np.all(f.kind_weight(links, "multicast") == 1.0)
    assert f.summary()["switch_hop_latency_ns"] == 0.0


def test_a_torus_routes_dimension_0_first():
    f = torus([4, 4])
    assert _hops(f, 0, 5) == [1, 5]
    assert _hops(f, 0, 15) == [3, 15]  # both wrap links: -1 in x, then -1 in y
    assert len(f.links) == 16 * 4


def test_a_4096_npu_torus_builds():
    f = torus([16, 16, 16])
    assert f.num_npus == MAX_NPUS and len(f.links) == MAX_NPUS * 6
    assert len(f.route(0, MAX_NPUS - 1)) == 3  # one wrap hop per dimension


@pytest.mark.parametrize(
    "dims, match",
    [
        ([Dim(RING, 4096, 1.0, 0.0), Dim(RING, 2, 1.0, 0.0)], "at most 4096"),
        ([Dim(SWITCH, 2, 1.0, 0.0)] * 12, "switches; a fabric has at most 4096"),
        ([], "1 to 12 dimensions"),
        (
            [Dim(FULLY_CONNECTED, 64, 1.0, 0.0), Dim(FULLY_CONNECTED, 64, 1.0, 0.0)],
            "516096 directed links; a topology has at most 262144",
        ),
        ([(RING, 4, 1.0, 0.0)], "a topology is a list of Dim"),
    ],
)
def test_size_limits(dims, match):
    with pytest.raises(FabricError, match=match):
        dims_fabric(dims)


@pytest.mark.parametrize(
    "kind, size, bw, lat, match",
    [
        ("Mesh", 4, 1.0, 0.0, "must be one of"),
        (RING, 1, 1.0, 0.0, "npus_count must be an integer >= 2"),
        (RING, 4, 0.0, 0.0, "bandwidth"),
        (RING, 4, 1.0, -1.0, "latency"),
    ],
)
def test_a_bad_dimension_is_refused(kind, size, bw, lat, match):
    with pytest.raises(FabricError, match=match):
        Dim(kind, size, bw, lat)


def test_a_dims_fabric_needs_its_shape_and_exactly_its_links():
    f = ring(4)
    with pytest.raises(FabricError, match="needs its dimensions"):
        Fabric("x", f.nodes, f.links, "dims")
    shape = Dims((Dim(RING, 4, f.links[0].bandwidth, f.links[0].latency),))
    assert Fabric("x", f.nodes, f.links, "dims", dims=shape).route(0, 2) == f.route(0, 2)
    chord = build_links(
        [(a, (a + 1) % 4, f.links[0].bandwidth, f.links[0].latency) for a in (0, 1, 2)]
    )
    with pytest.raises(FabricError, match="does not match topology R4"):
        Fabric("x", f.nodes, chord, "dims", dims=shape)


def test_a_dims_table_in_a_fabric_file_uses_decimal_gigabytes():
    f = fabric_from_dict(
        {
            "schema": "fred-fabric/1",
            "name": "t",
            "dims": {
                "topology": ["Ring", "Switch"],
                "npus_count": [4, 2],
                "bandwidth_GBps": [100, 25],
                "latency_ns": [500, 0],
            },
        }
    )
    assert f.routing == "dims" and f.num_npus == 8 and len(f.switches) == 4
    assert {lk.bandwidth for lk in f.links} == {100e9, 25e9}
    assert f.dims.dims[0].latency == pytest.approx(500e-9)
