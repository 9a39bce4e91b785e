"""`fred cosim --fabric SPEC`: co-simulate a whole fabric of FRED switches (hw/fabric.py).

Every ``--op`` (all-reduce, reduce, multicast over all NPUs) and the MP, DP and PP phases of
every ``--strategy`` run one after the other, each a fabric phase, under the ``--idle`` and
``--stall`` patterns at the NPU ports; every receiving NPU is checked bit for bit against the
golden collective. With ``--check`` the same phases run again on an empty, never stalled
fabric and their cycles are compared with the system model's prediction (within 5%).
Exit status 1 on a mismatch or a prediction off by more than 5%; 2 on bad input (including a
phase the fabric's switches cannot route).
"""

from __future__ import annotations

import argparse
import json

from fredfab.sim.cli import UserError
from fredfab.sim.cli.arguments import bounded_int, span
from fredfab.sim.cli.fabric_spec import add_fabric_spec_arguments, fabric_params_from

#: Flits per sender and phase.
FLITS = (1, 4096)
#: Largest relative difference of the prediction that --check accepts.
TOLERANCE = 0.05


def add_fabric_arguments(p: argparse.ArgumentParser) -> None:
    from fredfab.sim.verify.fabric_scenarios import FABRIC_OPS

    g = add_fabric_spec_arguments(p, "co-simulate a whole fabric")
    g.add_argument("--op", nargs="+", choices=FABRIC_OPS, default=[], help="collectives to run")
    g.add_argument(
        "--strategy",
        nargs="+",
        default=[],
        metavar="S",
        help="3D-parallel strategies whose MP/DP/PP phases to run, e.g. MP2-DP5-PP2",
    )
    g.add_argument(
        "--flits",
        type=bounded_int(FLITS),
        help=f"flits per sender and phase ({span(FLITS)}; default {DEFAULT_FLITS})",
    )
    g.add_argument(
        "--check", action="store_true", help="compare each phase's cycles with the system model"
    )


#: Flits each sender sends per phase unless --flits says otherwise.
DEFAULT_FLITS = 8


def _ops(args: argparse.Namespace, npus: tuple[int, ...]) -> list:
    from fredfab.model.system.placement import Strategy
    from fredfab.sim.verify.fabric_scenarios import collective_op, strategy_ops

    ops = [collective_op(name, npus, root=npus[0]) for name in args.op]
    for text in args.strategy:
        s = Strategy.parse(text)
        if s.workers > len(npus):
            raise UserError(f"strategy {s} needs {s.workers} NPUs; the fabric has {len(npus)}")
        ops += strategy_ops(s)
    if not ops:
        raise UserError("--fabric needs at least one --op or --strategy")
    return ops


def run_fabric(args: argparse.Namespace) -> int:
    from fredfab.model.switch.fabric_router import FabricRouteError
    from fredfab.sim.cli.cosim import idle_and_stall
    from fredfab.sim.verify import cosim
    from fredfab.sim.verify.fabric_check import cross_check
    from fredfab.sim.verify.fabric_scenarios import FabricScenarioBuilder

    params = fabric_params_from(args)
    ops = _ops(args, params.fabric.npus)
    flits = DEFAULT_FLITS if args.flits is None else args.flits
    try:
        cosim.check_simulator(args.sim)
    except cosim.CosimError as exc:
        raise UserError(str(exc)) from None
    b = FabricScenarioBuilder(params, args.seed)
    try:
        sc = b.scenario("fabric", ops, flits, *idle_and_stall(args), args.seed)
    except FabricRouteError as exc:
        raise UserError(str(exc)) from None
    if args.inject_error:
        sc.corrupt_one_expected_flit()
    if not args.json:
        print(f"{args.sim}: {params.name}, {len(ops)} phase(s) ...", flush=True)
    result = cosim.run(params, args.sim, [sc], label="cli", waves=args.waves, root=args.root)
    rows = []
    if args.check and result.passed:
        rows = cross_check(params, ops, args.sim, flits=flits, seed=args.seed, root=args.root)
    ok = result.passed and all(abs(r.error) <= TOLERANCE for r in rows)
    rep = result.scenarios[0]
    if args.json:
        out = {
            "sim": args.sim,
            "variant": params.name,
            "passed": ok,
            "build_seconds": result.build_seconds,
            "wall_seconds": result.wall_seconds,
            "cycles": rep.cycles,
            "in_flits": rep.in_flits,
            "out_flits": rep.out_flits,
            "error": rep.error,
            "first_mismatch": rep.first_mismatch and rep.first_mismatch.to_json(),
            "phases": [op.label for op in ops],
            "check": [
                {
                    "phase": r.label,
                    "flits": r.flits,
                    "measured_cycles": r.measured,
                    "predicted_cycles": r.predicted,
                    "predicted_cycles_one_card": r.predicted_single_latency,
                    "error": r.error,
                }
                for r in rows
            ],
        }
        print(json.dumps(out, indent=1))
        return 0 if ok else 1
    status = "ok  " if rep.passed else "FAIL"
    print(
        f"  {status} {len(ops)} phases: {rep.cycles} cycles, {rep.in_flits} in, {rep.out_flits} out"
    )
    if not rep.passed:
        print(f"       {rep.error}\nlog: {result.log}")
    if rows:
        # "one card": the system model's single switch latency (docs/fabric-rtl.md).
        head = ("phase", "measured", "model", "error", "one card", "error")
        print("  {:<24} {:>9} {:>7} {:>7} {:>9} {:>7}".format(*head))
        for r in rows:
            one = (r.predicted_single_latency - r.measured) / r.measured
            print(
                f"  {r.label:<24} {r.measured:>9} {r.predicted:>7.1f} {r.error:>+7.1%}"
                f" {r.predicted_single_latency:>9.1f} {one:>+7.1%}"
            )
    if result.waves:
        print(f"waves: {result.waves}")
    return 0 if ok else 1
