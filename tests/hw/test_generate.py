"""Verilog and manifest generation: the manifest describes the Verilog written, lint is
clean, and the CLI reports bad parameters in one line."""

import json
import re

import pytest
from amaranth.hdl import Fragment

from fredfab.hw.manifest import generate, load_manifest, manifest
from fredfab.hw.params import SwitchParams
from fredfab.hw.switch import FredSwitch
from fredfab.model.switch.config import Configuration
from fredfab.model.switch.latency import latency_cycles, node_cycles
from fredfab.model.switch.topology import Topology
from fredfab.sim.cli import main
from fredfab.sim.verify.toolchain import verilator_lint
from tests.hw.verilog_ports import assert_manifest_ports

VARIANTS = [
    SwitchParams(ports=2, m=2, lanes=1, dtype="int8"),
    SwitchParams(ports=3, m=3, lanes=2, dtype="fp16"),
    SwitchParams(ports=5, m=2, lanes=2, dtype="bf16", regs_per_stage=0),
    SwitchParams(ports=8, m=3, lanes=2, dtype="fp32", regs_per_stage=2),
    SwitchParams(ports=6, m=3, lanes=1, dtype="bf16", adder_stages=3),
    SwitchParams(ports=4, m=3, lanes=2, dtype="int16", adder_stages=1, arch="xbar"),
]


@pytest.mark.parametrize("params", VARIANTS, ids=lambda p: p.name)
def test_manifest_matches_verilog_and_lint_is_clean(params, tmp_path):
    v_path, j_path = generate(params, tmp_path)
    text = v_path.read_text()
    info = load_manifest(j_path)
    assert info["top"] == params.name and f"module {params.name}(" in text
    assert_manifest_ports(text, params.name, info["ports"])
    assert info["flit"]["width"] == params.lanes * params.element.bits + 1
    assert info["flit"]["fields"]["last"] == {"lsb": params.lanes * params.element.bits, "width": 1}
    cfg = info["config"]
    topo = params.topology
    assert cfg["config_bits"] == topo.config_bits
    assert cfg["words_per_slot"] == -(-topo.config_bits // params.word_width)
    # The reset slot decodes to a configuration the model accepts: the identity unicast.
    reset = Configuration.from_words(topo, cfg["reset_words"], params.word_width)
    assert reset.to_bits() != 0
    cycles = node_cycles(topo, params.regs_per_stage, params.adder_stages)
    assert (
        info["node_cycles"] == list(cycles)
        and info["params"]["adder_stages"] == params.adder_stages
    )
    assert info["latency_cycles"] == latency_cycles(
        topo, params.regs_per_stage, params.adder_stages
    )
    if params.arch == "clos":
        # Every Clos path crosses every column, and every column that adds delays alike.
        columns = (topo.stages + 1) // 2
        assert (
            info["latency_cycles"]
            == topo.stages * params.regs_per_stage + columns * params.adder_stages
        )
    # A phase change copies the slot one word per cycle after a registered read; the old
    # name stays beside the new one for one release.
    assert info["slot_copy_cycles"] == info["load_cycles"] == cfg["words_per_slot"] + 1
    assert verilator_lint(v_path, params.name) == []
    # Source locations name the generator's files, relative: the same text from any checkout.
    sources = set(re.findall(r'src = "([^":|]+)', text))
    assert "hw/switch.py" in sources and any(s.startswith("amaranth/") for s in sources)
    assert not any(s.startswith(("/", ".")) for s in sources), sorted(sources)[:5]


def test_generate_cli(tmp_path, capsys):
    assert (
        main(
            [
                "generate",
                "-P",
                "4",
                "--m",
                "2",
                "--lanes",
                "2",
                "--dtype",
                "int16",
                "-o",
                str(tmp_path),
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["verilog"].endswith("fred_clos_p4_m2_l2_int16_r1.v")
    assert (tmp_path / "fred_clos_p4_m2_l2_int16_r1.json").exists()


@pytest.mark.parametrize(
    "argv,message",
    [
        (["-P", "1"], "ports must be an integer >= 2"),
        (["-P", "4", "--m", "1"], "m must be an integer >= 2"),
        (["-P", "4", "--lanes", "0"], "lanes must be an integer >= 1"),
        (["-P", "4", "--dtype", "fp64"], "dtype 'fp64' is not supported"),
        (["-P", "4", "--slots", "3"], "slots must be an integer >= 4"),
        (["-P", "4", "--regs-per-stage", "-1"], "regs_per_stage must be an integer >= 0"),
    ],
)
def test_generate_rejects_bad_parameters(argv, message, tmp_path, capsys):
    assert main(["generate", *argv, "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_emit_config_words_load_back(tmp_path):
    hex_path, json_path = tmp_path / "c.hex", tmp_path / "c.json"
    for path in (hex_path, json_path):
        argv = ["route", "-P", "6", "--flow", "0-2,4:0-2", "--flow", "3:4,5"]
        assert main([*argv, "--emit-config", str(path)]) == 0
    topo = Topology.build(6, 3)
    words = [int(w, 16) for w in hex_path.read_text().split()]
    data = json.loads(json_path.read_text())
    assert [int(w, 16) for w in data["words"]] == words
    config = Configuration.from_words(topo, words, 32)
    assert config.codes == Configuration.from_json(json.dumps(data["config"])).codes


@pytest.mark.parametrize(
    "params",
    VARIANTS + [SwitchParams(ports=5, lanes=2, dtype="bf16", arch="xbar")],
    ids=lambda p: p.name,
)
def test_manifest_config_fields_are_the_rtl_configuration_layout(params):
    """Every field the manifest publishes is where the uSwitch's code field sits in the
    interconnect's configuration input (and in the control unit's active register)."""
    switch = FredSwitch(params)
    info = manifest(switch)
    fields = info["config_fields"]
    assert fields == switch.topology.config_layout.to_list()
    assert sum(f["width"] for f in fields) == info["config"]["config_bits"]
    for layout in (switch.interconnect.config.shape(), switch.control.active.shape()):
        assert layout.size == info["config"]["config_bits"]
        seen = set()
        for f in fields:
            node = layout[f["name"]]
            code = node.shape[f["output"]]
            assert (node.offset + code.offset, code.width) == (f["lsb"], f["width"]), f
            seen.add((f["name"], f["output"]))
        assert seen == {(name, q) for name, node in layout for q, _ in node.shape}
    Fragment.get(switch, None)  # elaborated, as generate() would (an unused one warns)
