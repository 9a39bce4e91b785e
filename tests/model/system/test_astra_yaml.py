from pathlib import Path

import pytest

from fredfab.model.system import FabricError, load_fabric
from fredfab.model.system.astra_yaml import fabric_from_astra
from fredfab.model.system.units import GIB, NS

EXAMPLES = Path(__file__).parents[3] / "examples" / "astra-sim"

GOOD = """\
topology: [ Ring, FullyConnected, Switch ]
npus_count: [ 2, 8, 4 ]
bandwidth: [ 200.0, 100.0, 50 ]
latency: [ 50.0, 500.0, 2000.0 ]
"""


def test_the_example_network_file_maps_onto_a_dims_fabric():
    f = load_fabric(EXAMPLES / "ring_fc_switch.yml")
    assert f.name == "ring_fc_switch" and f.routing == "dims"
    assert [(d.kind, d.size) for d in f.dims.dims] == [
        ("Ring", 2),
        ("FullyConnected", 8),
        ("Switch", 4),
    ]
    assert f.num_npus == 64 and len(f.switches) == 16
    # ASTRA-sim's GB/s is 2^30 bytes/s (bw_GBps_to_Bpns: "1 GB is 2^30 B").
    assert [d.bandwidth for d in f.dims.dims] == [200 * GIB, 100 * GIB, 50 * GIB]
    assert [d.latency for d in f.dims.dims] == pytest.approx([50 * NS, 500 * NS, 2000 * NS])
    # Dimension 0 is a 2-NPU ring (1 link each way), dimension 1 a full graph of 8 (56
    # directed links) per group, dimension 2 one switch per group of 4 (8 directed links).
    assert len(f.links) == 32 * 2 + 8 * 56 + 16 * 8


@pytest.mark.parametrize("suffix", [".yml", ".yaml", ".YML"])
def test_the_loader_reads_yaml_by_suffix(tmp_path, suffix):
    p = tmp_path / f"net{suffix}"
    p.write_text(GOOD)
    assert load_fabric(p).num_npus == 64


def test_the_torus_example_in_toml_form_loads():
    f = load_fabric(EXAMPLES / "torus-4x8.toml")
    assert f.name == "torus-4x8" and f.num_npus == 32 and {lk.bandwidth for lk in f.links} == {80e9}


@pytest.mark.parametrize(
    "text, match",
    [
        ("topology: [Ring]\n", "missing 'npus_count'"),
        (GOOD + "routing: dims\n", r"unknown key\(s\) \['routing'\]"),
        (GOOD.replace("Switch ]", "Torus ]"), r"'topology'\[2\] must be one of"),
        (
            GOOD.replace("[ 2, 8, 4 ]", "[ 1, 8, 4 ]"),
            r"'npus_count'\[0\] must be an integer in \[2",
        ),
        (GOOD.replace("[ 2, 8, 4 ]", "[ 2, 8 ]"), "'npus_count' has 2 entries, 'topology' 3"),
        (GOOD.replace("50 ]", '"50" ]'), r"'bandwidth'\[2\] must be a finite number in \(0, "),
        # Too large to be a rate once converted (it overflowed to "got inf", naming no key).
        (GOOD.replace("50 ]", "1e308 ]"), r"'bandwidth'\[2\] must be a finite number in \(0, "),
        (GOOD.replace("2000.0 ]", "-1 ]"), r"'latency'\[2\] must be a finite number >= 0"),
        (GOOD.replace("[ 2, 8, 4 ]", "[ 2, 64, 64 ]"), "8192 NPUs; a fabric has at most 4096"),
        (GOOD.replace("[ Ring, FullyConnected, Switch ]", "Ring"), "must be a non-empty list"),
        ("- Ring\n- Switch\n", "is a mapping of topology, npus_count, bandwidth, latency"),
        ("topology: [Ring\n", "not valid YAML"),
    ],
)
def test_a_bad_network_file_is_one_clear_line(tmp_path, text, match):
    p = tmp_path / "bad.yml"
    p.write_text(text)
    with pytest.raises(FabricError, match=match) as exc:
        load_fabric(p)
    msg = str(exc.value)
    assert msg.startswith(str(p)) and "\n" not in msg


def test_a_parsed_document_builds_without_a_file():
    f = fabric_from_astra(
        {"topology": ["Ring"], "npus_count": [4], "bandwidth": [1], "latency": [0]}, name="r4"
    )
    assert f.name == "r4" and f.bandwidth.tolist() == [GIB] * 8


@pytest.mark.parametrize(
    "written, value",
    [("1e3", 1e3), ("1E3", 1e3), ("5.", 5.0), (".5", 0.5), ("1.0e3", 1e3), ("2.5e-1", 0.25)],
)
def test_numbers_read_as_yaml_cpp_reads_them(tmp_path, written, value):
    """ASTRA-sim parses with yaml-cpp, whose doubles are what a C++ stream reads: ``1e3`` is
    a number there, though YAML 1.1 (PyYAML) takes it for a string (issue 25)."""
    p = tmp_path / "net.yml"
    p.write_text(GOOD.replace("50 ]", f"{written} ]").replace("2000.0 ]", f"{written} ]"))
    f = load_fabric(p)
    assert f.dims.dims[2].bandwidth == pytest.approx(value * GIB)
    assert f.dims.dims[2].latency == pytest.approx(value * NS)


@pytest.mark.parametrize("written", ["fast", '"1e3"', "1e3x", "e3", "1e", "0x10p0", "--1"])
def test_strings_are_still_not_numbers(tmp_path, written):
    p = tmp_path / "net.yml"
    p.write_text(GOOD.replace("50 ]", f"{written} ]"))
    with pytest.raises(FabricError, match=r"'bandwidth'\[2\] must be a finite number in \(0, "):
        load_fabric(p)


def test_a_count_written_as_a_float_is_not_a_count(tmp_path):
    """yaml-cpp's ``as<int>`` refuses ``8e0`` too."""
    p = tmp_path / "net.yml"
    p.write_text(GOOD.replace("[ 2, 8, 4 ]", "[ 2, 8e0, 4 ]"))
    with pytest.raises(FabricError, match=r"'npus_count'\[1\] must be an integer"):
        load_fabric(p)
