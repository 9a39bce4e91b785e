"""`fred sweep`: every MP x DP x PP strategy of a workload on every fabric."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fredfab.sim.cli.estimate import add_training_arguments, npu_from, overrides
from fredfab.sim.cli.report import Progress, format_sweep_table, plot_sweep
from fredfab.sim.engines.training import DEFAULT_FABRICS, sweep

NAME = "sweep"
HELP = "evaluate every MP x DP x PP strategy on every fabric; best per fabric and spread"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_training_arguments(p, strategy=False)
    p.add_argument(
        "--fabric",
        action="append",
        metavar="NAME|FILE",
        help=f"fabrics (repeat; default {' '.join(DEFAULT_FABRICS)})",
    )
    p.add_argument(
        "-j", "--processes", type=int, help="worker processes (default: one per CPU; 1 = none)"
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
    if args.processes is not None and args.processes < 1:
        raise ValueError(f"--processes must be >= 1, got {args.processes}")
    ov = {k: v for k, v in overrides(args).items() if v is not None}
    res = sweep(
        args.workload,
        fabrics=args.fabric or DEFAULT_FABRICS,
        timing_card=args.timing_card,
        npu=npu_from(args),
        processes=args.processes,
        scheduler=args.scheduler,
        progress=Progress(f"sweep {args.workload}"),
        **ov,
    )
    plot = None
    if not args.no_plot and res.estimates:
        out = args.output or Path("build/sweep") / f"{res.workload}.{args.format}"
        plot = plot_sweep(res, out)
    if args.json:
        d = res.to_dict()
        d["plot"] = str(plot) if plot else None
        print(json.dumps(d, indent=1))
        return 0
    print(format_sweep_table(res))
    if plot:
        print(f"plot: {plot}")
    return 0
