"""Mesh NPU numbering: serpentine by default (consecutive ids are neighbours, so the paper's
placement keeps MP pairs one hop apart), row-major on request, coordinates right either way."""

import textwrap

import pytest

from fredfab.model.system import FabricError, Strategy, load_fabric, mesh
from fredfab.model.system.generators import MESH_NUMBERING, mesh_position


def hops(f, a, b):
    return len(f.route(a, b))


def strategies(n):
    """Every MP x DP x PP = n."""
    return [
        Strategy(mp=mp, dp=n // (mp * pp), pp=pp)
        for mp in range(1, n + 1)
        for pp in range(1, n + 1)
        if n % (mp * pp) == 0
    ]


@pytest.mark.parametrize(("w", "h"), [(5, 4), (4, 5), (2, 3), (7, 1), (1, 6), (3, 3)])
def test_serpentine_ids_walk_the_grid(w, h):
    f = mesh(w, h)
    assert MESH_NUMBERING == "serpentine"
    for u in f.npus:
        v = f.nodes[u]
        assert f.grid[v.x, v.y] == u and (v.x, v.y) == mesh_position(u, w)
        assert v.y == u // w  # row y still holds ids w*y .. w*y + w-1
    assert all(hops(f, u, u + 1) == 1 for u in range(w * h - 1))


def test_row_major_on_request():
    f = mesh(5, 4, numbering="row-major")
    assert all((f.nodes[u].x, f.nodes[u].y) == (u % 5, u // 5) for u in f.npus)
    assert hops(f, 4, 5) == 5  # the end of one row to the start of the next
    with pytest.raises(FabricError, match="numbering must be one of 'serpentine', 'row-major'"):
        mesh(5, 4, numbering="column-major")


def test_io_controllers_sit_on_the_same_places_either_way():
    s, r = mesh(5, 4), mesh(5, 4, numbering="row-major")
    at = [(f.nodes[f.attach[io]].x, f.nodes[f.attach[io]].y) for f in (s, r) for io in f.ios]
    assert at[:18] == at[18:]
    # The links join the same places (same ids, same ends by position).
    for a, b in zip(s.links, r.links, strict=True):
        pa = [(s.nodes[u].x, s.nodes[u].y) for u in (a.src, a.dst)]
        pb = [(r.nodes[u].x, r.nodes[u].y) for u in (b.src, b.dst)]
        assert pa == pb


def test_the_toml_field(tmp_path):
    text = textwrap.dedent(
        """\
        schema = "fred-fabric/1"
        name = "m"
        [mesh]
        width = 5
        height = 4
        link_bandwidth_GBps = 750
        """
    )
    p = tmp_path / "m.toml"
    p.write_text(text)
    assert load_fabric(p).grid[4, 1] == 5
    p.write_text(text + 'numbering = "row-major"\n')
    assert load_fabric(p).grid[4, 1] == 9
    p.write_text(text + 'numbering = "zigzag"\n')
    with pytest.raises(FabricError, match=r"\[mesh\].*numbering.*'serpentine'"):
        load_fabric(p)
    assert load_fabric("mesh").grid[4, 1] == 5  # the shipped wafer uses the default


def test_paper_placement_keeps_mp_and_pp_neighbours_adjacent():
    """Every MP pair (MP = 2) and every pipeline pair whose stages are consecutive workers
    (MP = 1) of every strategy of the 20-NPU wafer is one hop apart; so are consecutive members
    of every MP group. (With MP > 1 a pipeline pair is MP ids apart; consecutive ids alternate
    the grid's two colours, so for even MP no numbering can make those pairs neighbours.)"""
    f = load_fabric("mesh")
    checked = 0
    for st in strategies(20):
        for g in st.mp_groups():
            assert all(hops(f, a, b) == 1 for a, b in zip(g, g[1:], strict=False)), (st, g)
            checked += st.mp == 2
        if st.mp == 1:
            assert all(hops(f, a, b) == 1 for a, b in st.pp_pairs()), st
            checked += len(st.pp_pairs())
    assert checked > 50
    # Row-major breaks it: MP2-DP5-PP2 puts MP pair (4, 5) at opposite ends of two rows.
    r = mesh(5, 4, numbering="row-major")
    assert max(hops(r, *g) for g in Strategy(mp=2, dp=5, pp=2).mp_groups()) == 5
