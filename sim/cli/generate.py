"""`fred generate`: write a switch's Verilog and its JSON manifest."""

from __future__ import annotations

import argparse
import json
from dataclasses import MISSING, fields
from pathlib import Path

from fredfab.hw.params import PARAM_LIMITS, SwitchParams
from fredfab.model.dtypes import ELEMENT_TYPES
from fredfab.model.switch.arches import ARCHES
from fredfab.sim import progress
from fredfab.sim.cli import UserError
from fredfab.sim.cli.arguments import bounded_int, plain_int, span
from fredfab.sim.cli.extras import require
from fredfab.sim.cli.output import check_folder, write_generated_pair

#: The generator's own defaults, so the CLI never restates them.
DEFAULTS = {f.name: f.default for f in fields(SwitchParams) if f.default is not MISSING}


#: Integer generator parameters and what they mean, in the order --help lists them.
INT_PARAMS = {
    "m": "Clos middle subnetworks m",
    "lanes": "elements per flit",
    "regs_per_stage": "register slices per stage",
    "adder_stages": "register stages inside every adder (0: combinational)",
    "slots": "configuration slots K",
    "word_width": "configuration word bits",
}


def _int_help(name: str, text: str, default: object = None) -> str:
    """``text (2..64; default 3)``: the bounds SwitchParams enforces, and the default."""
    more = "" if default is None else f"; default {default}"
    return f"{text} ({span(PARAM_LIMITS[name])}{more})"


def add_params_arguments(
    p: argparse.ArgumentParser, ports_required: bool = True, **defaults: object
) -> None:
    """Generator parameters, shared by every command that builds a switch. ``defaults``
    replace SwitchParams' own for a command that needs others; ``ports_required`` False for
    a command that can take the port counts from elsewhere (a fabric), whose --m then stays
    None unless given (``params_from`` takes the default; a fabric its own switch_m)."""
    d = {**DEFAULTS, **defaults}
    p.add_argument(
        "--ports",
        "-P",
        type=plain_int,
        required=ports_required,
        help=_int_help("ports", "switch ports P"),
    )
    p.add_argument(
        "--arch",
        choices=ARCHES,
        default=d["arch"],
        help=f"clos: the paper's Fred_m(P); xbar: crossbar + reduction tree (default {d['arch']})",
    )
    for name, text in INT_PARAMS.items():
        fabric_m = name == "m" and not ports_required
        p.add_argument(
            f"--{name.replace('_', '-')}",
            type=plain_int,
            default=None if fabric_m else d[name],
            help=_int_help(
                name,
                text,
                f"{d[name]}; with --fabric the fabric's switch_m" if fabric_m else d[name],
            ),
        )
    p.add_argument(
        "--dtype",
        default=d["dtype"],
        help=f"element type: {' '.join(ELEMENT_TYPES)} (default {d['dtype']})",
    )


def refuse_m_for_xbar(args: argparse.Namespace) -> None:
    """--m with --arch xbar is refused, not ignored: a crossbar has no middle stage."""
    if args.arch == "xbar" and args.m is not None:
        raise UserError("--m applies to --arch clos (its middle subnetworks); xbar has none")


def params_from(args: argparse.Namespace) -> SwitchParams:
    refuse_m_for_xbar(args)
    ints = {name: getattr(args, name) for name in INT_PARAMS}
    if ints["m"] is None:  # a command that can build a fabric, run on one switch
        ints["m"] = DEFAULTS["m"]
    return SwitchParams(ports=args.ports, arch=args.arch, dtype=args.dtype, **ints)


#: The packet format's own defaults and bounds (model/packet/format.py).
PACKET_FORMAT = {
    "packet_flits": "payload flits per data packet",
    "data_depth": "packets each data VC of an input port buffers (its credits)",
    "ctrl_depth": "control packets the control VC buffers",
}


def add_packet_arguments(
    p: argparse.ArgumentParser,
    packet_help: str = "the packet-mode switch: VC input ports, credits, header-selected phases",
) -> argparse._ArgumentGroup:
    """``--packet`` and the packet format: the packet-mode switch (docs/switch-rtl.md,
    "Packet mode") of the same generator parameters. Returns the option group, for a command
    to add its own packet options to."""
    from fredfab.model.packet.format import CRC_CHOICES, FORMAT_LIMITS, PacketFormat

    default = PacketFormat()
    g = p.add_argument_group("packet mode (--packet)")
    g.add_argument("--packet", action="store_true", help=packet_help)
    for name, text in PACKET_FORMAT.items():
        g.add_argument(
            f"--{name.replace('_', '-')}",
            type=bounded_int(FORMAT_LIMITS[name]),
            default=None,
            help=f"{text} (with --packet; {span(FORMAT_LIMITS[name])}; "
            f"default {getattr(default, name)})",
        )
    g.add_argument(
        "--crc",
        choices=[str(b) for b in CRC_CHOICES if b],
        default=None,
        help="the flit check: CRC-8, CRC-16/CCITT or CRC-32C (with --packet; default sized "
        "to the flit: 8 up to 64 data bits, 16 up to 512, 32 beyond)",
    )
    g.add_argument(
        "--no-link-retry",
        dest="link_retry",
        action="store_false",
        default=None,
        help="links do not replay what they lose (with --packet): losses reach the packets, "
        "which the switch repairs and Go-Back-N resends",
    )
    return g


def packet_params_from(args: argparse.Namespace):
    """The PacketParams of ``args`` (InputError names what packet mode cannot build)."""
    from fredfab.hw.packet.params import PacketParams
    from fredfab.model.packet.format import PacketFormat

    given = {name: getattr(args, name) for name in PACKET_FORMAT}
    if args.crc is not None:
        given["crc_bits"] = int(args.crc)
    if args.link_retry is not None:
        given["link_retry"] = args.link_retry
    fmt = PacketFormat(**{k: v for k, v in given.items() if v is not None})
    return PacketParams(params_from(args), fmt)


#: Option names of the packet format beyond PACKET_FORMAT's (argparse dest: the flag).
FORMAT_FLAGS = {"crc": "--crc", "link_retry": "--no-link-retry"}


def check_packet_options(args: argparse.Namespace) -> None:
    """The packet format's options mean nothing without --packet: refuse them."""
    flags = {name: f"--{name.replace('_', '-')}" for name in PACKET_FORMAT} | FORMAT_FLAGS
    given = [flag for name, flag in flags.items() if getattr(args, name) is not None]
    if given and not args.packet:
        raise UserError(f"{given[0]} needs --packet")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from fredfab.sim.cli.fabric_spec import add_fabric_spec_arguments

    add_params_arguments(p, ports_required=False)
    add_fabric_spec_arguments(p, "write a whole fabric's Verilog and manifest instead")
    add_packet_arguments(p)
    p.add_argument("-o", "--out", type=Path, default=Path("build/verilog"), help="output folder")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    require("amaranth")
    from fredfab.hw.manifest import generate
    from fredfab.sim.cli.fabric_spec import refuse_without_fabric

    check_packet_options(args)
    if args.fabric is not None:
        from fredfab.sim.cli.generate_fabric import run_generate_fabric

        return run_generate_fabric(args)
    refuse_without_fabric(args)
    if args.ports is None:
        raise UserError("--ports is required (or --fabric for a whole fabric)")
    params = params_from(args)
    if args.packet:
        from fredfab.hw.packet.manifest import generate

        params = packet_params_from(args)
    check_folder(args.out)
    progress.step(f"generating the Verilog of {params.name} (Amaranth, then Yosys)")
    v_path, j_path, info, seconds = write_generated_pair(args.out, lambda d: generate(params, d))
    if args.json:
        print(json.dumps({"verilog": str(v_path), "manifest": str(j_path), "seconds": seconds}))
    else:
        print(f"wrote {v_path} and {j_path} in {seconds:.2f} s")
        c = info["config"]["topology"]["counts"]
        sw = params.switch if args.packet else params
        title = f"Fred_{sw.m}({sw.ports})" if sw.arch == "clos" else f"xbar({sw.ports})"
        adders = f"{c['adders']} x {sw.lanes} {sw.dtype} adders"
        if sw.adder_stages:
            adders += f" of {sw.adder_stages} register stages"
        print(
            f"{title}: {info['stages']} stages, {c['uswitches']} uSwitches ({adders}), latency "
            f"{info['latency_cycles']} cycles, {info['config']['config_bits']} configuration bits "
            f"= {info['config']['words_per_slot']} words per slot"
        )
        if args.packet:
            pk = info["packet"]
            crc = info["protocol"]["crc"]["name"]
            retry = "link-level retry" if info["link_retry"]["enabled"] else "no link retry"
            print(
                f"packet mode: {pk['packet_flits']} payload flits per packet after a "
                f"{pk['header_bits']}-bit header, {pk['data_depth']} packets per data VC, "
                f"VCs {', '.join(pk['vcs'])} (priority {' > '.join(pk['priority'])}), "
                f"{crc}, {retry}"
            )
    return 0
