"""The fabric generator (hw/fabric.py): wiring, parameters, manifest and Verilog lint."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from fredfab.hw.control import n_words
from fredfab.hw.fabric import fabric_words, word_bases
from fredfab.hw.fabric_manifest import generate, latency_cycles, path_latency
from fredfab.hw.fabric_params import FabricParams
from fredfab.model import defaults
from fredfab.model.switch.fabric_wiring import BOUNDARY, FabricWiring
from fredfab.model.system.loader import load_fabric
from fredfab.sim.verify.toolchain import verilator_lint

#: An ASTRA-sim network of dimensions (Ring, FullyConnected, Switch): no switch tree.
ASTRA_DIMS = Path(__file__).parents[2] / "examples" / "astra-sim" / "ring_fc_switch.yml"


def test_fred_d_wiring_uses_every_port_once() -> None:
    w = FabricWiring.of(load_fabric("fred-d"))
    assert [(s.name, s.ports) for s in w.switches] == [
        ("L1.0", 12),
        ("L1.1", 12),
        ("L1.2", 12),
        ("L1.3", 11),
        ("L1.4", 11),
        ("L2", 20),
    ]
    assert len(w.boundary) == 20 + 18
    outs = Counter((x.src.switch, x.src.port) for x in w.wires)
    ins = Counter((x.dst.switch, x.dst.port) for x in w.wires)
    for k, site in enumerate(w.switches):
        for p in range(site.ports):
            assert outs[k, p] == 1 and ins[k, p] == 1, (site.name, p)
    for b in w.boundary:
        assert outs[BOUNDARY, b] == 1 and ins[BOUNDARY, b] == 1
    # Every L1 joins the L2 by a bundle of 4 lanes, both ways: 5 x 4 x 2 wires.
    assert len(w.switch_to_switch()) == 40


def test_bundle_lanes_follow_port_base() -> None:
    fab = load_fabric("fred-d")
    w = FabricWiring.of(fab)
    l2 = w.switch_index(fab.root)
    for c in fab.children[fab.root]:
        up = fab.port_base(c)[fab.root]
        down = fab.port_base(fab.root)[c]
        for j in range(fab.lanes[c]):
            src = w.feeding(type(w.wires[0].dst)(l2, down + j))
            assert (src.switch, src.port) == (w.switch_index(c), up + j)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"spec": "mesh-5x4"}, "'mesh-5x4' is a mesh; the fabric RTL needs a switch tree"),
        ({"spec": str(ASTRA_DIMS)}, "is a topology of dimensions; the fabric RTL needs"),
        ({"spec": "tree:2x2", "link_delay": -1}, "link_delay"),
        ({"spec": "tree:2x2", "arch": "ring"}, "arch"),
        ({"spec": "tree:2y2"}, "tree:RxR"),
        ({"spec": "tree:2x2", "m": 9}, r"m = 9; the switch RTL is generated for m = 2\.\.4"),
    ],
)
def test_bad_parameters_are_refused(kw: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FabricParams(**kw)


def test_configuration_addresses_tile_the_switches() -> None:
    p = FabricParams("fred-d")
    bases = word_bases(p)
    sizes = [n_words(p.switch_params(s)) for s in p.wiring.switches]
    assert bases == [sum(sizes[:k]) for k in range(len(sizes))]
    assert fabric_words(p) == sum(sizes)


def test_latency_is_the_longest_path() -> None:
    p = FabricParams("fred-d", link_delay=2)
    lat = {s.node: p.switch_params(s).latency_cycles for s in p.wiring.switches}
    fab = p.fabric
    l1 = lat[fab.parent[0]]
    # NPU 0 to NPU 19: L1, L2, L1 and four links.
    assert path_latency(p, 0, 19) == 2 * l1 + lat[fab.root] + 4 * 2
    # NPU 0 to NPU 1: one switch, two links.
    assert path_latency(p, 0, 1) == l1 + 2 * 2
    assert latency_cycles(p) == path_latency(p, 0, 19)


@pytest.mark.needs("verilator")
@pytest.mark.parametrize("arch", ["clos", pytest.param("xbar", marks=pytest.mark.slow)])
def test_generated_verilog_is_lint_clean(tmp_path, arch: str) -> None:
    p = FabricParams("tree:2x2+io1", arch=arch, link_delay=2)
    v, j = generate(p, tmp_path)
    info = json.loads(j.read_text())
    assert info["top"] == p.name
    assert len(info["streams"]["i"]) == 5  # 4 NPUs and one I/O controller
    assert [s["word_base"] for s in info["switches"]] == word_bases(p)
    assert verilator_lint(v, p.name) == []


SMALL_TREE = """\
schema = "fred-fabric/1"
name = "small"
[tree]
radix = [2, 2]
bandwidth_GBps = [3000, 3000]
in_switch_collectives = true
switch_m = 2
"""


def test_the_fabric_files_switch_m_builds_the_switches(tmp_path) -> None:
    """Issue 25: a fabric file saying switch_m = 2 was built at m = 3."""
    spec = tmp_path / "small.toml"
    spec.write_text(SMALL_TREE)
    p = FabricParams(str(spec))
    assert p.switch_m == 2 and {p.switch_params(s).m for s in p.wiring.switches} == {2}
    assert FabricParams(str(spec), m=2).switch_m == 2  # an explicit m that agrees
    with pytest.raises(ValueError, match="has switch_m = 2, m = 3 disagrees"):
        FabricParams(str(spec), m=3)
    # A parametric tree takes m as its switches' (and the system model's) m.
    t = FabricParams("tree:2x2", m=2)
    assert t.switch_m == t.fabric.switch_m == 2
    assert FabricParams("tree:2x2").switch_m == 3


def test_a_switch_m_the_generator_does_not_build_is_told_as_the_fabrics(tmp_path) -> None:
    """The model takes switch_m up to 64; the Clos generator builds m = 2..4. The file's m
    is named (it used to be "m must be ... got 5", as if given on the command line), and
    the crossbar, which has no m, builds the same fabric."""
    spec = tmp_path / "m5.toml"
    spec.write_text(SMALL_TREE.replace("switch_m = 2", "switch_m = 5"))
    with pytest.raises(
        ValueError, match=r"has switch_m = 5; the switch RTL is generated for m = 2\.\.4"
    ):
        FabricParams(str(spec))
    x = FabricParams(str(spec), arch="xbar")
    assert {x.switch_params(s).m for s in x.wiring.switches} == {defaults.M}
    # An m given for a parametric tree is named as given.
    with pytest.raises(ValueError, match=r"^m = 8; the switch RTL is generated for m = 2\.\.4"):
        FabricParams("tree:2x2", m=8)


def test_fred_generate_writes_a_fabrics_verilog_and_manifest(tmp_path, capsys) -> None:
    """Issue 25: the fabric's RTL without co-simulating it."""
    from fredfab.sim.cli import main

    spec = tmp_path / "small.toml"
    spec.write_text(SMALL_TREE)
    out = tmp_path / "v"
    argv = ["generate", "--fabric", str(spec), "--lanes", "1", "--dtype", "int16", "-o", str(out)]
    assert main([*argv, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    info = json.loads(Path(d["manifest"]).read_text())
    assert info["schema"] == "fred-fabric-manifest/1"
    assert f"module {info['top']}(" in Path(d["verilog"]).read_text()
    assert [sw["params"]["m"] for sw in info["switches"]] == [2, 2, 2]
    assert len(info["fabric"]["boundary"]) == 4
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [Path(d["verilog"]).name, Path(d["manifest"]).name]
    )
    assert main([*argv, "--m", "3"]) == 2
    assert "has switch_m = 2, m = 3 disagrees" in capsys.readouterr().err
    assert main([*argv, "--packet"]) == 2 and main([*argv, "--ports", "4"]) == 2
