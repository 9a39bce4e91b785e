"""Verilog and manifest of the packet-mode switch: the manifest describes the Verilog
written (ports, link layout, credit paths), lint is clean under the project's policy, and
bad parameters are refused with a reason."""

from __future__ import annotations

import json
import re

import pytest

from fredfab.hw.packet.manifest import PACKET_MANIFEST_SCHEMA, generate
from fredfab.hw.packet.params import PacketParams
from fredfab.hw.params import SwitchParams
from fredfab.model.packet.format import HEADER_BITS, PacketFormat
from fredfab.sim.verify.toolchain import verilator_lint
from tests.hw.verilog_ports import assert_manifest_ports

VARIANTS = [
    PacketParams(SwitchParams(ports=4, m=3, lanes=4, dtype="bf16")),
    PacketParams(SwitchParams(ports=5, m=2, lanes=2, dtype="int32", regs_per_stage=0)),
    PacketParams(SwitchParams(ports=6, lanes=4, dtype="fp16", arch="xbar", regs_per_stage=2)),
    PacketParams(SwitchParams(ports=3, lanes=3, dtype="int16"), PacketFormat(2, 1, 1)),
]


@pytest.mark.parametrize("params", VARIANTS, ids=lambda p: p.name)
def test_manifest_matches_verilog_and_lint_is_clean(params, tmp_path):
    v_path, j_path = generate(params, tmp_path)
    text = v_path.read_text()
    info = json.loads(j_path.read_text())
    assert info["schema"] == PACKET_MANIFEST_SCHEMA and info["top"] == params.name
    declared = assert_manifest_ports(text, params.name, info["ports"])
    # Links have no ready (credit-based); every name the manifest gives exists.
    P = params.ports
    assert not [n for n in declared if re.match(r"(rx|tx)__\d+__ready", n)]
    for p in range(P):
        for names in (info["links"]["rx"][p], info["links"]["tx"][p]):
            assert set(names.values()) <= set(declared)
        assert declared[info["credits"]["rx_credit"][p]] == 4  # one bit per VC
        assert declared[info["credits"]["tx_credit"][p]] == 4
    fields = info["links"]["fields"]
    assert [(k, f["width"]) for k, f in fields.items()] == list(params.link.fields)
    assert info["links"]["width"] == declared[info["links"]["rx"][0]["payload"]]
    assert info["packet"]["header_bits"] == HEADER_BITS
    assert info["packet"]["priority"] == ["mp", "pp", "dp"]
    assert verilator_lint(v_path, params.name) == []


@pytest.mark.parametrize(
    "switch, message",
    [
        (SwitchParams(ports=4, lanes=2, dtype="bf16"), "at least 48 bits"),
        (SwitchParams(ports=17, lanes=4, dtype="bf16"), "up to 16 ports"),
        (SwitchParams(ports=4, lanes=4, dtype="bf16", slots=17), "up to 16 slots"),
    ],
)
def test_parameters_packet_mode_cannot_build_are_refused(switch, message):
    with pytest.raises(ValueError, match=message):
        PacketParams(switch)


@pytest.mark.parametrize(
    "fmt, message",
    [({"packet_flits": 0}, "packet_flits"), ({"data_depth": 16}, "data_depth")],
)
def test_packet_format_bounds(fmt, message):
    with pytest.raises(ValueError, match=message):
        PacketFormat(**fmt)


def test_generate_cli_packet_mode(tmp_path, capsys):
    from fredfab.sim.cli import main

    assert (
        main(["generate", "-P", "4", "--packet", "--packet-flits", "4", "-o", str(tmp_path)]) == 0
    )
    out = capsys.readouterr().out
    assert "packet mode: 4 payload flits per packet" in out
    name = PacketParams(SwitchParams(4), PacketFormat(packet_flits=4)).name
    info = json.loads((tmp_path / f"{name}.json").read_text())
    assert info["schema"] == PACKET_MANIFEST_SCHEMA and info["packet"]["packet_flits"] == 4


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--lanes", "2"], "at least 48 bits"),
        (["--data-depth", "16"], "--data-depth: 16 is out of range 1..15"),
        (["-P", "20"], "up to 16 ports"),
    ],
)
def test_generate_cli_packet_mode_refuses_bad_parameters(argv, message, tmp_path, capsys):
    from fredfab.sim.cli import main

    args = ["generate", "-P", "4", "--packet", "-o", str(tmp_path), *argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_generate_cli_packet_options_need_packet(tmp_path, capsys):
    from fredfab.sim.cli import main

    assert main(["generate", "-P", "4", "--packet-flits", "4", "-o", str(tmp_path)]) == 2
    assert "--packet-flits needs --packet" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
