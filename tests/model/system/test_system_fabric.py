import textwrap

import pytest

from fredfab.model.system import (
    FabricError,
    fabric_from_dict,
    fred_tree,
    load_fabric,
    mesh,
    shipped_fabrics,
)


def test_shipped_fabrics_match_the_paper():
    assert set(shipped_fabrics()) == {"mesh-5x4", "fred-a", "fred-b", "fred-c", "fred-d"}
    m = load_fabric("mesh")
    assert (m.num_npus, len(m.ios), m.width, m.height) == (20, 18, 5, 4)
    # 31 NPU-NPU links of 750 GB/s each way, 18 I/O links of 128 GB/s each way.
    npu_links = [lk for lk in m.links if lk.src in m.npus and lk.dst in m.npus]
    assert len(npu_links) == 62 and {lk.bandwidth for lk in npu_links} == {750e9}
    # Corner NPU 0 carries two I/O controllers, an inner NPU none.
    assert sum(1 for io in m.ios if m.attach[io] == 0) == 2
    assert not any(m.attach[io] == 6 for io in m.ios)
    for name, up, ins in (
        ("fred-a", 1.5e12, False),
        ("fred-b", 1.5e12, True),
        ("fred-c", 12e12, False),
        ("fred-d", 12e12, True),
    ):
        f = load_fabric(name)
        assert (f.num_npus, len(f.ios), len(f.switches), f.in_switch) == (20, 18, 6, ins)
        l1 = f.l1_of(0)
        assert f.bandwidth[f.link_id[l1, f.root]] == up
        assert f.bandwidth[f.link_id[0, l1]] == 3e12
        # Bisection: half of the L1 switches (2.5 of 5) times the uplink = 3.75 / 30 TB/s.
        assert 2.5 * up in (3.75e12, 30e12)


def test_routes_follow_xy_and_the_tree():
    m = mesh(5, 4)  # serpentine: row 1 holds 9 8 7 6 5, row 2 10 .. 14
    path = [m.links[i].dst for i in m.route(0, 13)]  # (0,0) -> (3,2): X first, then Y
    assert path == [1, 2, 3, 6, 13]
    r = mesh(5, 4, numbering="row-major")
    assert [r.links[i].dst for i in r.route(0, 13)] == [1, 2, 3, 8, 13]
    t = fred_tree([4, 5], [3e12, 1.5e12])
    hops = [t.nodes[t.links[i].dst].name for i in t.route(1, 17)]
    assert hops == ["L1.0", "L2", "L1.4", "npu17"]
    assert len(t.route(1, 2)) == 2


def test_generators_scale():
    t = fred_tree([8, 8, 16], [3e12, 12e12, 48e12], io_controllers=10)
    assert t.num_npus == 1024 and len(t.switches) == 128 + 16 + 1
    assert t.nodes[t.root].level == 3 and len(t.ios) == 10
    assert mesh(32, 32).num_npus == 1024


def _load(tmp_path, text):
    p = tmp_path / "f.toml"
    p.write_text(textwrap.dedent(text))
    return load_fabric(p)


STAR = """
schema = "fred-fabric/1"
name = "star"
routing = "tree"
[[nodes]]
name = "s"
kind = "switch"
level = 1
{npus}
{links}
"""


def _star(n, extra_links=""):
    npus = "".join(f'[[nodes]]\nname = "n{i}"\nkind = "npu"\n' for i in range(n))
    links = "".join(
        f'[[links]]\na = "n{i}"\nb = "s"\nbandwidth_GBps = 100\nlatency_ns = 10\n' for i in range(n)
    )
    return STAR.format(npus=npus, links=links + extra_links)


def test_explicit_graph_loads_like_the_generator(tmp_path):
    f = _load(tmp_path, _star(4))
    g = fred_tree([4], [100e9], in_switch=False)
    assert f.num_npus == 4 and f.routing == "tree"
    assert [f.links[i].bandwidth for i in f.route(0, 3)] == [
        g.links[i].bandwidth for i in g.route(0, 3)
    ]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('name = "x"\n[mesh]\nwidth = 2\nheight = 2\nlink_bandwidth_GBps = 1\n', "schema"),
        (
            'schema = "fred-fabric/1"\nname = "x"\n[mesh]\nwidth = 2\nheight = 2\n'
            "link_bandwidth_GBps = 1\ncolour = 3\n",
            "unknown key",
        ),
        ('schema = "fred-fabric/1"\nname = "x"\n[mesh]\nwidth = 2\nheight = 2\n', "link_bandwidth"),
        (
            'schema = "fred-fabric/1"\nname = "x"\n[mesh]\nwidth = 0\nheight = 2\n'
            "link_bandwidth_GBps = 1\n",
            r"'width' must be an integer in \[1, 4096\], got 0",
        ),
        (
            'schema = "fred-fabric/1"\nname = "x"\n[tree]\nradix = [4, 5]\n'
            "bandwidth_GBps = [1]\nin_switch_collectives = true\n",
            "one bandwidth per level",
        ),
        ('schema = "fred-fabric/1"\nname = "x"\n', "exactly one of"),
        (
            'schema = "fred-fabric/1"\nname = "x"\n[mesh]\nwidth = 2\nheight = 2\n'
            "link_bandwidth_GBps = -1\n",
            r"'link_bandwidth_GBps' must be a finite number in \(0, 3000000000\], got -1",
        ),
        ("this is = = not toml", "not valid TOML"),
    ],
)
def test_bad_toml_is_rejected_with_a_clear_message(tmp_path, text, match):
    with pytest.raises(FabricError, match=match):
        _load(tmp_path, text)


def test_explicit_graph_errors(tmp_path):
    cyc = '[[links]]\na = "n0"\nb = "n1"\nbandwidth_GBps = 1\n'
    with pytest.raises(FabricError, match="cycle|exactly one switch"):
        _load(tmp_path, _star(3, cyc))
    ghost = '[[links]]\na = "n0"\nb = "ghost"\nbandwidth_GBps = 1\n'
    with pytest.raises(FabricError, match="ghost"):
        _load(tmp_path, _star(3, ghost))
    with pytest.raises(FabricError, match="routing"):
        _load(tmp_path, _star(2).replace('"tree"', '"hypercube"'))


def test_in_switch_needs_a_tree_and_unknown_fabrics_are_named():
    with pytest.raises(FabricError, match="neither a shipped fabric"):
        load_fabric("fred-z")
    d = {
        "schema": "fred-fabric/1",
        "name": "m",
        "routing": "xy",
        "in_switch_collectives": True,
        "nodes": [
            {"name": "a", "kind": "npu", "x": 0, "y": 0},
            {"name": "b", "kind": "npu", "x": 1, "y": 0},
        ],
        "links": [{"a": "a", "b": "b", "bandwidth_GBps": 1}],
    }
    with pytest.raises(FabricError, match="need a tree"):
        fabric_from_dict(d)
    d["in_switch_collectives"] = False
    assert fabric_from_dict(d).num_npus == 2
