"""`fred route`: route concurrent flows on Fred_m(P) and print the configuration."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fredfab.model.switch.arches import ARCHES
from fredfab.model.switch.router import Routing, route
from fredfab.model.switch.topology import NONE, Node
from fredfab.sim.cli.arguments import (
    ROUTE_M,
    ROUTE_PORTS,
    WORD_WIDTH,
    bounded_int,
    flows_within,
    span,
)
from fredfab.sim.cli.generate import DEFAULTS, refuse_m_for_xbar
from fredfab.sim.cli.output import check_file, write_text


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ports",
        "-P",
        type=bounded_int(ROUTE_PORTS),
        required=True,
        help=f"switch ports P ({span(ROUTE_PORTS)})",
    )
    p.add_argument(
        "--m",
        type=bounded_int(ROUTE_M),
        help=f"middle subnetworks m of --arch clos ({span(ROUTE_M)}; default {DEFAULTS['m']})",
    )
    p.add_argument(
        "--arch",
        choices=ARCHES,
        default=DEFAULTS["arch"],
        help=f"clos: the paper's Fred_m(P); xbar: crossbar + reduction tree "
        f"(default {DEFAULTS['arch']})",
    )
    p.add_argument(
        "--flow",
        action="append",
        required=True,
        metavar="IPS:OPS",
        help="a flow, e.g. 0-3:0-3 (All-Reduce) or 2:0,5 (multicast); repeat for concurrent flows",
    )
    p.add_argument(
        "--no-backtrack",
        action="store_true",
        help="the paper's rule: one colouring per level, no backtracking",
    )
    p.add_argument("--all", action="store_true", help="also list idle uSwitches")
    p.add_argument(
        "--emit-config",
        type=Path,
        metavar="FILE",
        help="write the configuration words ready to load: FILE.hex = one hex word per line "
        "($readmemh), otherwise JSON with the words and the configuration",
    )
    p.add_argument(
        "--word-width",
        type=bounded_int(WORD_WIDTH),
        default=DEFAULTS["word_width"],
        help=f"configuration word bits ({span(WORD_WIDTH)}; default {DEFAULTS['word_width']})",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    if args.emit_config is not None:
        check_file(args.emit_config, "configuration file")
    refuse_m_for_xbar(args)
    m = DEFAULTS["m"] if args.m is None else args.m
    flows = flows_within(args.flow, args.ports)
    routing = route(flows, args.ports, m, backtrack=not args.no_backtrack, arch=args.arch)
    if args.emit_config is not None:
        write_config_words(routing, args.emit_config, args.word_width)
    if args.json:
        data = json.loads(routing.config.to_json())
        data["trees"] = {str(f): t for f, t in zip(routing.flows, routing.trees, strict=True)}
        print(json.dumps(data, indent=1))
    else:
        print(format_routing(routing, show_idle=args.all))
    return 0


def write_config_words(routing: Routing, path: Path, word_width: int) -> None:
    """Configuration words for the switch's ``cfg`` port (word w goes to address w)."""
    words = routing.config.to_words(word_width)
    digits = -(-word_width // 4)
    if path.suffix == ".hex":
        write_text(path, "".join(f"{w:0{digits}x}\n" for w in words))
    else:
        data = {
            "schema": "fred-config-words/1",
            "word_width": word_width,
            "words": [f"{w:0{digits}x}" for w in words],
            "config": json.loads(routing.config.to_json()),
        }
        write_text(path, json.dumps(data, indent=1) + "\n")


def format_routing(routing: Routing, show_idle: bool = False) -> str:
    topo = routing.topology
    title = f"Fred_{topo.m}({topo.ports})" if topo.arch == "clos" else f"xbar({topo.ports})"
    lines = [
        f"{title}: {topo.stages} stages, {len(topo.nodes)} uSwitches, "
        f"{topo.config_bits} configuration bits",
        "",
        "flow        kind        reduction tree",
    ]
    for f, tree in zip(routing.flows, routing.trees, strict=True):
        lines.append(f"{str(f):<11} {f.kind:<11} {tree}")
    lines += ["", "stage  uSwitch          kind   outputs (output <- source)"]
    active = 0
    for node, codes in zip(topo.nodes, routing.config.codes, strict=True):
        if all(c == NONE for c in codes) and not show_idle:
            continue
        active += any(c != NONE for c in codes)
        outs = "  ".join(f"{q}<-{_source(node, c)}" for q, c in enumerate(codes) if c != NONE)
        lines.append(f"{node.stage:<6} {node.name:<16} {node.kind.value:<6} {outs or '(idle)'}")
    lines += [
        "",
        f"{active} of {len(topo.nodes)} uSwitches active; bits = {routing.config.to_bits():#x}",
    ]
    return "\n".join(lines)


def _source(node: Node, code: int) -> str:
    return str(node.decode(code))  # "in<i>" or "sum"
