"""`fred cosim --packet`: co-simulate the packet-mode switch (hw/packet/) with Go-Back-N NPUs
on credit-based links, on Icarus or Verilator.

Runs the standard packet scenarios (fredfab.sim.verify.packet.scenarios: MP and DP
All-Reduce, all-to-all unicast, the three phases at random times, the same on faulty
links), or with ``--soak CYCLES`` random three-phase traffic on faulty links until that many
cycles have run (fredfab.sim.verify.packet.soak), or with ``--hw-soak CYCLES`` the same kind
of traffic with hardware NPU endpoints and fault injectors around the switch, on Verilator
(fredfab.sim.verify.packet.hw_soak: integer element types; about 75 times faster per CPU
second than --soak; ``--hw-soak-threads 2`` splits it over two threads, links a cycle
longer, about 120 times faster by the wall clock: hw_soak_split.py).
Every delivery is checked bit for bit, once and in order. Prints one row per scenario:
cycles, packets delivered, retransmissions, link-level replays, packets received damaged,
and goodput (payload flits delivered per cycle per port); the hardware soak prints its
counters.
Exit status 1 when a scenario fails, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json

from fredfab.model.errors import InputError
from fredfab.model.packet.faults import SILENCE_BITS, FaultRates
from fredfab.sim.cli import UserError
from fredfab.sim.cli.arguments import bounded_float, bounded_int, span
from fredfab.sim.cli.generate import add_packet_arguments as add_format_arguments
from fredfab.sim.cli.generate import check_packet_options as check_format_options
from fredfab.sim.cli.generate import packet_params_from

#: Per-flit fault rates of --drop / --corrupt (a link losing more than half is no link).
FAULT_RATE = (0.0, 0.5)
#: Cycles of --soak: at least one scenario's worth, at most about a day on Verilator; of
#: --hw-soak: at most a few hours on Verilator.
SOAK_CYCLES = (1_000, 1_000_000_000)
HW_SOAK_CYCLES = (1_000, 10_000_000_000)
#: --burst (share of faults that are bursts) and --silence (per cycle and link).
BURST_RATE = (0.0, 1.0)
SILENCE_RATE = (0.0, 0.01)
#: Options of `fred cosim` that mean nothing in packet mode.
CIRCUIT_ONLY = ("fabric", "flows", "scenario", "inject_error", "timing_card", "idle", "stall")
#: Options of `fred cosim --packet` beyond the packet format's.
RUN_OPTIONS = ("drop", "corrupt", "burst", "silence", "soak", "hw_soak", "hw_soak_threads")


def add_packet_arguments(p: argparse.ArgumentParser) -> None:
    """The packet format's options (shared with `fred generate --packet`), and the run's."""
    from fredfab.sim.verify.packet.soak import BURST as SOAK_BURST
    from fredfab.sim.verify.packet.soak import FAULT_RATE as SOAK_RATE
    from fredfab.sim.verify.packet.soak import SILENCE as SOAK_SILENCE

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
        "--burst",
        type=bounded_float(BURST_RATE),
        help=f"share of faults that hit several consecutive flits ({span(BURST_RATE)}; "
        f"default 0.2 on the fault scenario, {SOAK_BURST:g} with a soak)",
    )
    g.add_argument(
        "--silence",
        type=bounded_float(SILENCE_RATE),
        help=f"per cycle and link, the rate at which a link goes silent for 64 to 1080 "
        f"cycles ({span(SILENCE_RATE)}, 0 or at least 2**-{SILENCE_BITS}; default 1e-4 on the "
        "fault scenario, "
        f"{SOAK_SILENCE:g} with a soak)",
    )
    soak = g.add_mutually_exclusive_group()
    soak.add_argument(
        "--soak",
        type=bounded_int(SOAK_CYCLES),
        metavar="CYCLES",
        help=f"instead of the standard scenarios, random traffic on faulty links until "
        f"CYCLES cycles have run ({span(SOAK_CYCLES)}; 10**6 take minutes on Verilator)",
    )
    soak.add_argument(
        "--hw-soak",
        type=bounded_int(HW_SOAK_CYCLES),
        metavar="CYCLES",
        help=f"the soak with hardware endpoints on Verilator for CYCLES cycles "
        f"({span(HW_SOAK_CYCLES)}; integer --dtype; 10**8 take minutes)",
    )
    g.add_argument(
        "--hw-soak-threads",
        type=int,
        choices=(1, 2),
        metavar="N",
        help="2: the --hw-soak's switch and endpoints on two threads, each link registered "
        "once more at its receiving end (a cycle longer each way; default 1)",
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
        _check_fault_rates(args)
        return
    check_format_options(args)
    for name in RUN_OPTIONS:
        if getattr(args, name) is not None:
            raise UserError(f"--{name.replace('_', '-')} needs --packet")


def _check_fault_rates(args: argparse.Namespace) -> None:
    """The rates the fault model takes (model/packet/faults.py FaultRates: e.g. a silence
    rate its 20-bit draw cannot hold), refused before any build rather than inside the
    bench, where the refusal would fail a scenario and exit 1."""
    rates = {k: getattr(args, k) for k in ("drop", "corrupt", "burst", "silence")}
    try:
        FaultRates(**{k: v for k, v in rates.items() if v is not None})
    except InputError as exc:
        raise UserError(f"fault rates: {exc}") from None


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
    if args.hw_soak_threads and not args.hw_soak:
        raise UserError("--hw-soak-threads needs --hw-soak")
    params = packet_params_from(args)
    try:
        cosim.check_simulator(args.sim)
    except cosim.CosimError as exc:  # a missing tool: the user's to install
        raise UserError(str(exc)) from None
    if args.hw_soak:
        return _hw_soak(args, params)
    if not args.json:
        what = f"soak of {args.soak} cycles" if args.soak else "standard packet scenarios"
        print(f"{args.sim}: {params.name}, {what} ...", flush=True)
    if args.soak:
        from fredfab.sim.verify.packet.soak import BURST as SOAK_BURST
        from fredfab.sim.verify.packet.soak import FAULT_RATE as SOAK_RATE
        from fredfab.sim.verify.packet.soak import SILENCE as SOAK_SILENCE
        from fredfab.sim.verify.packet.soak import packet_soak

        drop = SOAK_RATE if args.drop is None else args.drop
        corrupt = SOAK_RATE if args.corrupt is None else args.corrupt
        soak = packet_soak(
            params,
            args.soak,
            args.sim,
            drop=drop,
            corrupt=corrupt,
            burst=SOAK_BURST if args.burst is None else args.burst,
            silence=SOAK_SILENCE if args.silence is None else args.silence,
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
            standard(params.ports, seed=args.seed, packets=args.packets),
            args.drop,
            args.corrupt,
            args.burst,
            args.silence,
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


def _hw_soak(args: argparse.Namespace, params) -> int:
    """``--hw-soak``: the hardware soak (its counters, one table row per port)."""
    from fredfab.sim.verify.packet.hw_soak import hw_soak, hw_soak_row, hw_soak_summary
    from fredfab.sim.verify.packet.scenario import LinkHostility
    from fredfab.sim.verify.packet.soak import BURST, FAULT_RATE, SILENCE
    from fredfab.sim.verify.packet.soak_plan import SoakPlan

    if args.sim != "verilator":
        raise UserError("--hw-soak runs on Verilator (--sim verilator)")
    threads = args.hw_soak_threads or 1
    if params.switch.element.is_float:
        raise UserError(
            "--hw-soak checks sums of integer element types: use an integer --dtype "
            "(int8, int16, int32)"
        )
    links = LinkHostility(
        drop=FAULT_RATE if args.drop is None else args.drop,
        corrupt=FAULT_RATE if args.corrupt is None else args.corrupt,
        stall=0.3,
        idle=0.2,
        burst=BURST if args.burst is None else args.burst,
        silence=SILENCE if args.silence is None else args.silence,
    )
    plan = SoakPlan(params.ports, args.seed, links)
    if not args.json:
        on = " on two threads" if threads == 2 else ""
        print(
            f"verilator: {params.name}, hardware soak of {args.hw_soak} cycles{on} ...",
            flush=True,
        )
    r = hw_soak(params, plan, args.hw_soak, root=args.root, threads=threads)
    passed = r.errors == 0 and r.delivered > 0
    summary = hw_soak_summary(r)
    if args.json:
        print(
            json.dumps(
                {"sim": "verilator", "variant": params.name, "threads": threads, "passed": passed}
                | summary,
                indent=1,
            )
        )
    else:
        print(_table([hw_soak_row(r, p) for p in range(params.ports)]))
        print(
            f"verilator {params.name}: {summary['cycles']} cycles at "
            f"{summary['cycles_per_s']:.0f} cycles/s, {summary['delivered']} packets delivered "
            f"and checked, {summary['errors']} errors {'passed' if passed else 'FAILED'}"
        )
    return 0 if passed else 1
