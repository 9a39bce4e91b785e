"""Fabric files are read strictly: wrong types, fractional counts and oversized fabrics are
rejected with one message naming the file, the field and what is allowed."""

import json
import re
import textwrap

import pytest

from fredfab.model.system import FabricError, SwitchTiming, load_fabric, shipped_fabrics
from fredfab.model.system.elements import MAX_NPUS
from fredfab.model.system.switch_timing import DEFAULT_CLOCK_SOURCE
from fredfab.model.timing_card import default_card

TREE = """\
schema = "fred-fabric/1"
name = "t"
[tree]
radix = {radix}
bandwidth_GBps = {bw}
latency_ns = {lat}
io_controllers = {io}
in_switch_collectives = {ins}
switch_m = {m}
{switch}
"""
GOOD = dict(radix="[4, 5]", bw="[3000, 1500]", lat="10", io="18", ins="true", m="3", switch="")

MESH = """\
schema = "fred-fabric/1"
name = "m"
[mesh]
width = {w}
height = {h}
link_bandwidth_GBps = {bw}
io_controllers = {io}
"""
GOOD_MESH = dict(w="5", h="4", bw="750", io="18")


#: How a bandwidth out of range is told (MAX_LINK_GBPS is 3e9).
BW = r"must be a finite number in \(0, 3000000000\]"


def _write(tmp_path, text):
    p = tmp_path / "bad.toml"
    p.write_text(textwrap.dedent(text))
    return p


def test_the_templates_are_valid(tmp_path):
    # The bad cases below differ from these in one field only.
    assert load_fabric(_write(tmp_path, TREE.format(**GOOD))).num_npus == 20
    assert load_fabric(_write(tmp_path, MESH.format(**GOOD_MESH))).num_npus == 20


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        # A boolean is not a number (accepted as 1 GB/s before).
        ("bw", "[true, 1500]", r"'bandwidth_GBps'\[0\] " + BW + r", got True"),
        # A string is not a number.
        ("bw", '["3000", 1500]', r"'bandwidth_GBps'\[0\] " + BW + r", got '3000'"),
        ("bw", "[3000, nan]", r"'bandwidth_GBps'\[1\] " + BW + r", got nan"),
        ("bw", "3000", r"'bandwidth_GBps' must be a non-empty array, got 3000"),
        ("lat", "true", r"'latency_ns' must be a finite number >= 0, got True"),
        ("lat", "[10, -1]", r"'latency_ns'\[1\] must be a finite number >= 0, got -1"),
        # Counts are integers.
        ("m", "3.5", r"'switch_m' must be an integer in \[2, 64\], got 3.5"),
        ("m", "1", r"'switch_m' must be an integer in \[2, 64\], got 1"),
        ("io", "18.7", r"'io_controllers' must be an integer in \[0, 1024\], got 18.7"),
        ("io", "true", r"'io_controllers' must be an integer in \[0, 1024\], got True"),
        ("radix", "[4.0, 5]", r"'radix'\[0\] must be an integer in \[1, 4096\], got 4.0"),
        ("radix", "[0, 5]", r"'radix'\[0\] must be an integer in \[1, 4096\], got 0"),
        ("ins", "1", r"'in_switch_collectives' must be true or false, got 1"),
        # Sizes are bounded: this one used to build 10^10 NPUs and never return.
        ("radix", "[100000, 100000]", r"'radix'\[0\] must be an integer in \[1, 4096\]"),
        ("radix", "[64, 128]", r"8192 NPUs; a fabric has at most 4096"),
        ("radix", "[" + ", ".join(["2"] * 13) + "]", r"'radix': at most 12 entries, got 13"),
        ("io", "5000", r"'io_controllers' must be an integer in \[0, 1024\], got 5000"),
        (
            "switch",
            '[switch]\nclock_GHz = "1"',
            r"'clock_GHz' must be a finite number in \(0, 1000.0\]",
        ),
        (
            "switch",
            "[switch]\nclock_GHz = 0",
            r"'clock_GHz' must be a finite number in \(0, 1000.0\], got 0",
        ),
        ("switch", "[switch]\nclock_GHz = 1e300", r"'clock_GHz' must be .* in \(0, 1000.0\]"),
        ("bw", "[1e308, 1500]", r"'bandwidth_GBps'\[0\] " + BW + r", got 1e\+308"),
        ("switch", "[switch]\nflit_bytes = 512.5", r"'flit_bytes' must be an integer in"),
        (
            "switch",
            '[switch]\nthroughput_condition = "stalled"',
            r"'throughput_condition' must be one of 'ready', 'backpressure', got 'stalled'",
        ),
        ("switch", "[switch]\ntiming_card = 3", r"'timing_card' must be a string, got 3"),
    ],
)
def test_bad_tree_field(tmp_path, field, value, message):
    p = _write(tmp_path, TREE.format(**{**GOOD, field: value}))
    with pytest.raises(FabricError, match=message) as info:
        load_fabric(p)
    # The message starts with the file (and the table), so the user knows where to look.
    assert str(info.value).startswith(str(p))
    assert "[tree]" in str(info.value) or "[switch]" in str(info.value) or "NPUs" in str(info.value)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("w", "5.0", r"'width' must be an integer in \[1, 4096\], got 5.0"),
        ("h", '"4"', r"'height' must be an integer in \[1, 4096\], got '4'"),
        ("w", "100000", r"'width' must be an integer in \[1, 4096\], got 100000"),
        ("bw", "false", r"'link_bandwidth_GBps' " + BW + r", got False"),
        ("bw", "inf", r"'link_bandwidth_GBps' " + BW + r", got inf"),
        # Finite, but infinite once made bytes per second ("got inf" before, naming no key).
        ("bw", "1e308", r"'link_bandwidth_GBps' " + BW + r", got 1e\+308"),
        ("io", "-1", r"'io_controllers' must be an integer in \[0, 1024\], got -1"),
    ],
)
def test_bad_mesh_field(tmp_path, field, value, message):
    p = _write(tmp_path, MESH.format(**{**GOOD_MESH, field: value}))
    with pytest.raises(FabricError, match=message) as info:
        load_fabric(p)
    assert str(info.value).startswith(f"{p} [mesh]: ")


def test_mesh_over_the_npu_limit(tmp_path):
    p = _write(tmp_path, MESH.format(**{**GOOD_MESH, "w": "2048", "h": "4"}))
    with pytest.raises(FabricError, match=f"8192 NPUs; a fabric has at most {MAX_NPUS}"):
        load_fabric(p)


@pytest.mark.parametrize(
    ("node", "message"),
    [
        ('name = "n2"\nkind = "gpu"', r"'kind' must be one of 'npu', 'switch', 'io', got 'gpu'"),
        ('name = "n2"\nkind = "npu"\nlevel = 1.5', r"'level' must be an integer >= 0, got 1.5"),
        ('name = "s2"\nkind = "switch"', r"a switch needs 'level'"),
        ('name = 7\nkind = "npu"', r"'name' must be a non-empty string, got 7"),
    ],
)
def test_bad_explicit_node(tmp_path, node, message):
    text = (
        'schema = "fred-fabric/1"\nname = "g"\nrouting = "tree"\n'
        '[[nodes]]\nname = "s"\nkind = "switch"\nlevel = 1\n'
        '[[nodes]]\nname = "n0"\nkind = "npu"\n'
        '[[nodes]]\nname = "n1"\nkind = "npu"\n'
        f"[[nodes]]\n{node}\n"
        '[[links]]\na = "n0"\nb = "s"\nbandwidth_GBps = 100\n'
        '[[links]]\na = "n1"\nb = "s"\nbandwidth_GBps = 100\n'
    )
    p = _write(tmp_path, text)
    with pytest.raises(FabricError, match=message) as info:
        load_fabric(p)
    assert re.match(re.escape(f"{p} nodes[3]: "), str(info.value))


def test_bad_explicit_link_values(tmp_path):
    base = (
        'schema = "fred-fabric/1"\nname = "g"\nrouting = "tree"\n'
        '[[nodes]]\nname = "s"\nkind = "switch"\nlevel = 1\n'
        '[[nodes]]\nname = "n0"\nkind = "npu"\n'
        '[[links]]\na = "n0"\nb = "s"\n{extra}\n'
    )
    for extra, message in (
        ("bandwidth_GBps = true", r"links\[0\]: 'bandwidth_GBps' must be a finite number in \(0, "),
        ("bandwidth_GBps = 1\nbidirectional = 0", r"'bidirectional' must be true or false"),
        ("bandwidth_GBps = 1\nlatency_ns = -2", r"'latency_ns' must be a finite number >= 0"),
    ):
        with pytest.raises(FabricError, match=message):
            load_fabric(_write(tmp_path, base.format(extra=extra)))


@pytest.mark.parametrize("name", [n for n in shipped_fabrics() if n.startswith("fred")])
def test_shipped_switches_use_the_one_default_clock_and_flit(name):
    t = load_fabric(name).timing
    d = SwitchTiming()
    assert (t.clock_hz, t.flit_bytes, t.condition) == (d.clock_hz, d.flit_bytes, d.condition)
    assert t.hop_latency == d.card.latency_cycles / 1e9  # 1 GHz: 7 cycles = 7 ns


def test_a_file_can_override_clock_and_flit(tmp_path):
    sw = "[switch]\nclock_GHz = 2.0\nflit_bytes = 256"
    f = load_fabric(_write(tmp_path, TREE.format(**{**GOOD, "switch": sw})))
    base = load_fabric("fred-b")
    assert f.timing.clock_hz == 2e9 and f.timing.flit_bytes == 256
    assert f.timing.hop_latency == pytest.approx(base.timing.hop_latency / 2)
    assert f.timing.datapath_flits_per_cycle(3e12) == pytest.approx(
        base.timing.datapath_flits_per_cycle(3e12)
    )


def _measured_card(latency: int) -> dict:
    d = default_card().to_dict()
    d["simulator"] = "verilator 5.048"
    d["latency_cycles"] = latency
    return d


def test_a_file_names_its_card_relative_to_itself(tmp_path, monkeypatch):
    (tmp_path / "cards").mkdir()
    (tmp_path / "cards/fred8.json").write_text(json.dumps(_measured_card(11)))
    sw = '[switch]\ntiming_card = "cards/fred8.json"'
    path = _write(tmp_path, TREE.format(**{**GOOD, "switch": sw}))
    monkeypatch.chdir(tmp_path / "cards")  # the card is found from the file, not from here
    t = load_fabric(path).timing
    assert t.card.latency_cycles == 11 and t.card.name == str(tmp_path / "cards/fred8.json")
    assert t.to_dict()["hop_latency_ns"] == pytest.approx(11.0)


def test_the_default_card_ignores_cards_in_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "build/timing").mkdir(parents=True)
    (tmp_path / "build/timing/fred8.json").write_text(json.dumps(_measured_card(11)))
    monkeypatch.chdir(tmp_path)
    t = load_fabric("fred-d").timing
    n = default_card().latency_cycles
    assert t.card == default_card()
    assert t.describe().startswith(
        f"built-in ({n:g} cycles per hop at 1 GHz = {n:g} ns; clock {DEFAULT_CLOCK_SOURCE})"
    )
    assert t.describe().endswith("(derived)")  # the built-in card measures no packet cost


def test_a_card_is_a_path_not_a_name_to_look_up(tmp_path):
    sw = '[switch]\ntiming_card = "fred8"'
    with pytest.raises(FabricError, match=r"timing_card 'fred8': give \"default\""):
        load_fabric(_write(tmp_path, TREE.format(**{**GOOD, "switch": sw})))
