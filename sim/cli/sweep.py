"""`fred sweep`: every MP x DP x PP strategy of a workload on every fabric."""

from __future__ import annotations

import argparse
from pathlib import Path

from fredfab.model.chakra.reader import is_trace
from fredfab.sim.cli import UserError
from fredfab.sim.cli.arguments import JOBS, bounded_int, span
from fredfab.sim.cli.estimate import add_training_arguments, npu_from, overrides, workload_from
from fredfab.sim.cli.output import check_plot_path, print_with_plot
from fredfab.sim.cli.report import Progress, format_sweep_table, plot_sweep
from fredfab.sim.cli.scheduler import check_scheduler
from fredfab.sim.engines.training import DEFAULT_FABRICS, sweep

PLOT_FOLDER = Path("build/sweep")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_training_arguments(p, strategy=False)
    p.add_argument(
        "--fabric",
        action="append",
        metavar="NAME|FILE",
        help=f"fabrics (repeat; default {' '.join(DEFAULT_FABRICS)})",
    )
    p.add_argument(
        "-j",
        "--processes",
        type=bounded_int(JOBS),
        help=f"worker processes ({span(JOBS)}; default: one per CPU; 1 = none)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on a Dask cluster, e.g. tcp://host:8786 (needs the 'cluster' extra)",
    )
    p.add_argument("-o", "--output", help="plot file (.png/.svg; default build/sweep/...)")
    p.add_argument("--format", choices=("png", "svg"), default="png", help="default plot format")
    p.add_argument("--no-plot", action="store_true", help="skip the plot")


def run(args: argparse.Namespace) -> int:
    if is_trace(args.workload):
        raise UserError("a Chakra trace fixes its strategy: estimate or compare it, not sweep")
    from fredfab.sim.engines.training import resolve_config

    ov = {k: v for k, v in overrides(args).items() if v is not None}
    # The settings are checked once, as `fred estimate` checks them, before any strategy runs:
    # a setting no strategy accepts is bad input, not an empty table. PP1 takes one
    # microbatch under every [sweep] rule, so only the settings themselves are judged here.
    wl = workload_from(args)
    resolve_config(wl, "MP1-DP1-PP1", sweep=True, **ov)
    check_plot_path(args, PLOT_FOLDER)
    if args.scheduler:
        check_scheduler(args.scheduler)
    res = sweep(
        wl,
        fabrics=args.fabric or DEFAULT_FABRICS,
        timing_card=args.timing_card,
        npu=npu_from(args),
        processes=args.processes,
        scheduler=args.scheduler,
        progress=Progress(f"sweep {wl.name}"),
        ignore_memory=args.ignore_memory,
        **ov,
    )
    if not res.estimates:
        reason = res.invalid[0][1] if res.invalid else "no strategy"
        raise UserError(f"no strategy applies to {res.workload}: {reason}")
    return print_with_plot(args, res, PLOT_FOLDER, plot_sweep, format_sweep_table)
