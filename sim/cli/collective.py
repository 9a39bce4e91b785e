"""`fred collective`: time one collective on one or more wafer fabrics."""

from __future__ import annotations

import argparse
import json

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.flow import FlowError
from fredfab.model.system import OPS, CollectiveRequest, load_fabric, shipped_fabrics
from fredfab.model.system.units import NS
from fredfab.sim.cli import UserError
from fredfab.sim.cli.arguments import (
    CHUNKS,
    PACKET_MAX_SIZE,
    RESOLUTION_NS,
    bounded_float,
    bounded_int,
    plain_int,
    ports_within,
    size,
    span,
    timing_card,
)
from fredfab.sim.cli.report import fmt_bytes, fmt_time
from fredfab.sim.engines.system import DEFAULT_CHUNKS, simulate

NAME = "collective"
HELP = "time a collective (All-Reduce, ...) over an NPU group on a wafer fabric"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--fabric",
        action="append",
        metavar="NAME|FILE",
        help=f"fabric: {', '.join(shipped_fabrics())}, mesh, all, or a TOML file; "
        "repeat to compare (default: all shipped)",
    )
    p.add_argument(
        "--op", default=CollectiveKind.ALL_REDUCE, help=f"one of {', '.join(OPS)} (or multicast)"
    )
    p.add_argument(
        "--group", default="all", help="NPU ids, e.g. 0-19 or 0,4,8 (p2p: SRC,DST; default all)"
    )
    p.add_argument(
        "--size",
        type=size,
        required=True,
        help="bytes per NPU, e.g. 64MiB, 1GB, 4096 (whole bytes, at most 1TiB)",
    )
    p.add_argument("--root", type=plain_int, help="root NPU of reduce / broadcast (default: first)")
    p.add_argument(
        "--chunks",
        type=bounded_int(CHUNKS),
        default=DEFAULT_CHUNKS,
        help=f"chunks ({span(CHUNKS)}; default {DEFAULT_CHUNKS})",
    )
    p.add_argument("--sharing", choices=("maxmin", "proportional"), default="maxmin")
    p.add_argument(
        "--engine",
        choices=("flow", "packet"),
        default="flow",
        help="flow-level simulator, or the brute-force packet model (--size at most 16MiB)",
    )
    p.add_argument(
        "--resolution-ns",
        type=bounded_float(RESOLUTION_NS),
        default=0.0,
        help=f"event time grid in ns ({span(RESOLUTION_NS)}; 0 = exact; speeds up big "
        "desynchronised runs)",
    )
    p.add_argument(
        "--timing-card", type=timing_card, metavar="JSON", help="switch timing card to use"
    )
    p.add_argument(
        "--on-conflict",
        choices=("fallback", "error"),
        default="fallback",
        help="unroutable in-switch configurations: fall back (reported) or fail",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")


def fabrics_from(args: argparse.Namespace):
    names = args.fabric or ["all"]
    out = []
    for n in names:
        if n == "all":
            out += [load_fabric(s, timing_card=args.timing_card) for s in shipped_fabrics()]
        else:
            out.append(load_fabric(n, timing_card=args.timing_card))
    return out


def run(args: argparse.Namespace) -> int:
    size = args.size
    if args.engine == "packet" and size > PACKET_MAX_SIZE:
        raise UserError(
            f"--engine packet handles at most {fmt_bytes(PACKET_MAX_SIZE)} per NPU; "
            "use the flow engine for larger sizes"
        )
    rows = []
    for fab in fabrics_from(args):
        if args.group == "all":
            group = list(range(fab.num_npus))
        else:
            try:
                group = ports_within(args.group, fab.num_npus, "--group")
            except FlowError as exc:
                raise ValueError(str(exc)) from None
        if len(set(group)) < 2:
            # One NPU has nobody to exchange with: no time, no bandwidth to report.
            raise UserError(f"--group {args.group}: a collective needs at least 2 NPUs")
        req = CollectiveRequest(args.op, group, size, root=args.root)
        res = simulate(
            fab,
            [req],
            chunks=args.chunks,
            sharing=args.sharing,
            on_conflict=args.on_conflict,
            engine=args.engine,
            resolution=args.resolution_ns * NS,
        )
        r = res.requests[0]
        rows.append(
            {
                "fabric": fab.name,
                **r.to_dict(),
                "fallbacks": list(res.fallbacks),
                "notes": list(res.notes),
                "switch_clock": fab.timing.describe_clock() if fab.switches else None,
            }
        )
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{rows[0]['op']} of {fmt_bytes(size)} over {rows[0]['group_size']} NPUs")
    head = f"{'fabric':<10} {'algorithm':<28} {'time':>11} {'algbw GB/s':>11} {'per-NPU GB/s':>13}"
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['fabric']:<10} {r['algorithm']:<28} {fmt_time(r['time_s']):>11} "
            f"{r['algbw_GBps']:>11.1f} {r['busbw_GBps']:>13.1f}"
        )
        for fb in r["fallbacks"]:
            print(f"  fallback: {fb}")
        for nt in r["notes"]:
            print(f"  note: {nt}")
    print(
        "per-NPU = effective bandwidth an endpoint ring algorithm would need per NPU "
        "(bus bandwidth)"
    )
    for clock in sorted({r["switch_clock"] for r in rows if r["switch_clock"]}):
        print(f"switch clock: {clock}")
    return 0
