"""`fred cosim --packet`: co-simulate the packet-mode switch (hw/packet/) with Go-Back-N NPUs
on credit-based links, on Icarus or Verilator.

Runs the standard packet scenarios (fredfab.sim.verify.packet.scenarios: MP and DP
All-Reduce, all-to-all unicast, the three phases at random times, the same on faulty
links), or with ``--soak CYCLES`` random three-phase traffic on faulty links until that many
cycles have run (fredfab.sim.verify.packet.soak). Every delivery is checked bit for bit,
once and in order. Prints one row per scenario: cycles, packets delivered,
retransmissions, packets received damaged, and goodput (payload flits delivered per cycle
per port). Exit status 1 when a scenario fails, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json

from fredfab.sim.cli import UserError
from fredfab.sim.cli.arguments import bounded_float, bounded_int, span
from fredfab.sim.cli.generate import add_packet_arguments as add_format_arguments
from fredfab.sim.cli.generate import check_packet_options as check_format_options
from fredfab.sim.cli.generate import packet_params_from

#: Per-flit fault rates of --drop / --corrupt (a link losing more than half is no link).
FAULT_RATE = (0.0, 0.5)
#: Cycles of --soak: at least one scenario's worth, at most about a day on Verilator.
SOAK_CYCLES = (1_000, 1_000_000_000)
#: Options of `fred cosim` that mean nothing in packet mode.
CIRCUIT_ONLY = ("fabric", "flows", "scenario", "inject_error", "timing_card")
#: Options of `fred cosim --packet` beyond the packet format's.
RUN_OPTIONS = ("drop", "corrupt", "soak")


def add_packet_arguments(p: argparse.ArgumentParser) -> None:
    """The packet format's options (shared with `fred generate --packet`), and the run's."""
    from fredfab.sim.verify.packet.soak import FAULT_RATE as SOAK_RATE

    g = add_format_arguments(
        p, "co-simulate the packet-mode switch: standard packet scenarios (or --soak)"
    )
    g.add_argument(
        "--drop",
        type=bounded_float(FAULT_RATE),
        help=f"per-flit drop rate on every link of the fault scenario ({span(FAULT_RATE)}; "
        f"default 0.01; with --soak {SOAK_RATE:g})",
    )
    g.add_argument(
        "--corrupt",
        type=bounded_float(FAULT_RATE),
        help=f"per-flit rate of flipped data bits, likewise ({span(FAULT_RATE)}; "
        f"default 0.01; with --soak {SOAK_RATE:g})",
    )
    g.add_argument(
        "--soak",
        type=bounded_int(SOAK_CYCLES),
        metavar="CYCLES",
        help=f"instead of the standard scenarios, random traffic on faulty links until "
        f"CYCLES cycles have run ({span(SOAK_CYCLES)}; 10**6 take minutes on Verilator)",
    )


def check_packet_options(args: argparse.Namespace) -> None:
    """Packet options only with --packet, circuit-only options never with it."""
    if args.packet:
        for name in CIRCUIT_ONLY:
            if getattr(args, name):
                raise UserError(f"--{name.replace('_', '-')} does not apply to --packet")
        if args.waves and args.soak:
            # Rounds of a million cycles would trace gigabytes: waves are for a scenario run.
            raise UserError("--waves traces the standard scenarios, not a --soak")
        return
    check_format_options(args)
    for name in RUN_OPTIONS:
        if getattr(args, name) is not None:
            raise UserError(f"--{name.replace('_', '-')} needs --packet")


def _table(rows: list[dict]) -> str:
    cols = list(rows[0])
    cells = [[f"{v:.4f}" if isinstance(v, float) else str(v) for v in r.values()] for r in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines)


def run_packet_cli(args: argparse.Namespace) -> int:
    from fredfab.sim.verify import cosim
    from fredfab.sim.verify.packet.metrics import scenario_row

    if args.ports is None:
        raise UserError("--ports is required")
    params = packet_params_from(args)
    try:
        cosim.check_simulator(args.sim)
    except cosim.CosimError as exc:  # a missing tool: the user's to install
        raise UserError(str(exc)) from None
    if not args.json:
        what = f"soak of {args.soak} cycles" if args.soak else "standard packet scenarios"
        print(f"{args.sim}: {params.name}, {what} ...", flush=True)
    if args.soak:
        from fredfab.sim.verify.packet.soak import FAULT_RATE as SOAK_RATE
        from fredfab.sim.verify.packet.soak import packet_soak

        drop = SOAK_RATE if args.drop is None else args.drop
        corrupt = SOAK_RATE if args.corrupt is None else args.corrupt
        soak = packet_soak(
            params,
            args.soak,
            args.sim,
            drop=drop,
            corrupt=corrupt,
            seed=args.seed,
            root=args.root,
            label="cli-soak",
        )
        reports, passed, errors = soak.scenarios, soak.passed, soak.errors
        extra = {"soak_cycles": soak.cycles, "drop": drop, "corrupt": corrupt}
    else:
        from fredfab.sim.verify.packet.cosim import run_packet
        from fredfab.sim.verify.packet.scenarios import standard, with_fault_rates

        scenarios = with_fault_rates(
            standard(params.ports, seed=args.seed, packets=args.packets), args.drop, args.corrupt
        )
        result = run_packet(
            params, args.sim, scenarios, label="cli", root=args.root, waves=args.waves
        )
        reports, passed = result.scenarios, result.passed
        errors = [
            f"{n}: {'; '.join(r['errors'][:2])}" for n, r in reports.items() if not r["passed"]
        ]
        extra = {"run_dir": str(result.run_dir), "waves": result.waves and str(result.waves)}
    rows = [scenario_row(n, r, params) for n, r in reports.items()]
    if args.json:
        out = {
            "sim": args.sim,
            "variant": params.name,
            "passed": passed,
            **extra,
            "errors": errors,
            "scenarios": rows,
        }
        print(json.dumps(out, indent=1))
    else:
        if rows:
            print(_table(rows))
        for e in errors:
            print(f"FAIL {e}")
        status = "passed" if passed else "FAILED"
        cycles = f", {extra['soak_cycles']} cycles" if args.soak else ""
        print(f"{args.sim} {params.name}: {len(rows)} scenario(s){cycles} {status}")
        if extra.get("waves"):
            print(f"waves: {extra['waves']}")
    return 0 if passed else 1
