"""`fred cosim`: co-simulate a generated switch on Icarus or Verilator with the cocotb bench.

Without ``--flows`` it runs the standard scenarios (fredfab.sim.verify.scenarios: every collective
kind, unicast permutations, concurrent flows, reconfiguration under traffic, reset default,
reset in the middle of traffic); with ``--flows`` it runs the given concurrent flows as
phases under the chosen idle and backpressure patterns. ``--fabric`` co-simulates a whole
fabric of switches instead (fredfab.sim.cli.cosim_fabric), ``--packet`` the packet-mode
switch with its own scenarios (fredfab.sim.cli.cosim_packet). Exit status 1 on any mismatch, with
the first mismatching flit of every failing scenario; 2 on bad input; 3 when the
``--flows`` cannot be routed together.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from fredfab.sim.cli import UserError
from fredfab.sim.cli.arguments import (
    COSIM_PACKETS,
    COSIM_PHASES,
    SEED,
    bounded_int,
    flows_within,
    span,
)
from fredfab.sim.cli.extras import require
from fredfab.sim.cli.generate import add_params_arguments, params_from
from fredfab.sim.cli.output import check_folder
from fredfab.sim.verify import cosim

if TYPE_CHECKING:
    pass


#: The idle and backpressure pattern of a --flows or --fabric run unless given.
DEFAULT_PATTERN = "random"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from fredfab.sim.cli.cosim_fabric import add_fabric_arguments
    from fredfab.sim.cli.cosim_packet import add_packet_arguments
    from fredfab.sim.verify.scenarios import PATTERN_NAMES, SCENARIO_NAMES

    p.add_argument("--sim", choices=cosim.SIMULATORS, default="verilator")
    add_params_arguments(p, ports_required=False)
    add_fabric_arguments(p)
    add_packet_arguments(p)
    p.add_argument(
        "--flows",
        nargs="+",
        metavar="IPS:OPS",
        help="run these concurrent flows (e.g. 0-3:0-3 4:5,6) instead of the standard scenarios",
    )
    p.add_argument(
        "--phases",
        type=bounded_int(COSIM_PHASES),
        default=3,
        help=f"phases of --flows traffic ({span(COSIM_PHASES)}; default 3)",
    )
    p.add_argument(
        "--packets",
        type=bounded_int(COSIM_PACKETS),
        default=4,
        help=f"packets per flow and phase, of --flows or --packet (the packet All-to-All "
        f"sends a quarter, at least 2; {span(COSIM_PACKETS)}; default 4)",
    )
    p.add_argument(
        "--scenario",
        nargs="+",
        choices=SCENARIO_NAMES,
        metavar="NAME",
        help=f"run only these standard scenarios: {', '.join(SCENARIO_NAMES)}",
    )
    p.add_argument(
        "--idle",
        choices=PATTERN_NAMES,
        help=f"input idles (--flows, --fabric; default {DEFAULT_PATTERN})",
    )
    p.add_argument(
        "--stall",
        choices=PATTERN_NAMES,
        help=f"output backpressure (--flows, --fabric; default {DEFAULT_PATTERN})",
    )
    p.add_argument(
        "--seed", type=bounded_int(SEED), default=1, help=f"scenario seed ({span(SEED)}; default 1)"
    )
    p.add_argument("--waves", action="store_true", help="write FST waveforms into the run folder")
    p.add_argument(
        "--timing-card",
        action="store_true",
        help="also measure the timing card and write build/timing/<variant>.json; its packet "
        "costs (preemption, credit round trip, header, per-VC share) come from co-simulating "
        "the packet-mode switch of the same parameters when packet mode supports them",
    )
    p.add_argument(
        "--inject-error",
        action="store_true",
        help="flip one bit of one expected flit, to see the bench catch it (then exits 1)",
    )
    p.add_argument("--root", type=Path, default=cosim.DEFAULT_ROOT, help="build folder")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def idle_and_stall(args: argparse.Namespace) -> tuple[str, str]:
    """The --idle and --stall patterns of a --flows or --fabric run (None: not given)."""
    return args.idle or DEFAULT_PATTERN, args.stall or DEFAULT_PATTERN


def run(args: argparse.Namespace) -> int:
    from fredfab.sim.cli.cosim_packet import check_packet_options, run_packet_cli
    from fredfab.sim.verify.scenarios import ScenarioBuilder, standard_scenarios

    require("amaranth", "cocotb")
    if not args.fabric:
        from fredfab.sim.cli.fabric_spec import refuse_without_fabric

        refuse_without_fabric(args)
    check_packet_options(args)
    if not (args.flows or args.fabric or args.packet):
        for name in ("idle", "stall"):
            if getattr(args, name) is not None:  # the standard scenarios set their own
                raise UserError(f"--{name} applies to --flows or --fabric")
    if args.packet:
        check_folder(args.root, "build folder")
        return run_packet_cli(args)
    if args.fabric:
        from fredfab.sim.cli.cosim_fabric import run_fabric

        return run_fabric(args)
    if args.ports is None:
        raise UserError("--ports is required (or --fabric for a whole fabric)")
    params = params_from(args)
    check_folder(args.root, "build folder")
    if args.timing_card:
        from fredfab.model.timing_card import TIMING_DIR

        check_folder(TIMING_DIR, "timing card folder")
    flows = flows_within(args.flows, params.ports) if args.flows else None
    try:
        cosim.check_simulator(args.sim)
    except cosim.CosimError as exc:  # a missing tool: the user's to install
        raise UserError(str(exc)) from None
    if flows:
        b = ScenarioBuilder(params, args.seed)
        routing = b.route(flows)
        phases = [
            b.flows_phase(routing, f"flows, phase {k}", packets=args.packets, max_packet=4)
            for k in range(args.phases)
        ]
        scenarios = [b.scenario("flows", phases, *idle_and_stall(args), args.seed)]
    else:
        scenarios = standard_scenarios(params, args.seed, kinds=args.scenario)
    if args.inject_error:
        scenarios[0].corrupt_one_expected_flit()
    if not args.json:
        print(f"{args.sim}: {params.name}, {len(scenarios)} scenario(s) ...", flush=True)
    result = cosim.run(params, args.sim, scenarios, label="cli", waves=args.waves, root=args.root)
    card = None
    if args.timing_card and result.passed:
        from fredfab.sim.verify.timing import measure_timing_card

        card = measure_timing_card(
            params, args.sim, root=args.root, seed=args.seed, packet_costs=_packet_able(params)
        )
    if args.json:
        out = {
            "sim": args.sim,
            "variant": params.name,
            "passed": result.passed,
            "build_seconds": result.build_seconds,
            "wall_seconds": result.wall_seconds,
            "run_dir": str(result.run_dir),
            "waves": str(result.waves) if result.waves else None,
            "timing_card": str(card) if card else None,
            "scenarios": [
                {
                    "name": s.name,
                    "passed": s.passed,
                    "cycles": s.cycles,
                    "in_flits": s.in_flits,
                    "out_flits": s.out_flits,
                    "error": s.error,
                    "first_mismatch": s.first_mismatch and s.first_mismatch.to_json(),
                }
                for s in result.scenarios
            ],
        }
        print(json.dumps(out, indent=1))
    else:
        for s in result.scenarios:
            status = "ok  " if s.passed else "FAIL"
            print(f"  {status} {s.name}: {s.cycles} cycles, {s.in_flits} in, {s.out_flits} out")
            if not s.passed:
                print(f"       {s.error}")
        print(result.summary().splitlines()[0])
        if not result.passed:
            print(f"log: {result.log}")
        if result.waves:
            print(f"waves: {result.waves}")
        if card:
            # A card applies only where it is named: say how.
            print(f"timing card: {card} (estimates use it with --timing-card {card})")
    return 0 if result.passed else 1


def _packet_able(params) -> bool:
    """Whether the packet-mode switch of these parameters exists (hw/packet/params.py), so the
    card can carry its measured costs; otherwise they stay derived."""
    from fredfab.hw.packet.params import PacketParams

    try:
        PacketParams(params)
    except ValueError:
        return False
    return True
