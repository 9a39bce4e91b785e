"""`fred compare`: a workload on the mesh and FRED-A..D, breakdown and speedup."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fredfab.sim.cli.estimate import add_training_arguments, npu_from, overrides
from fredfab.sim.cli.output import atomic_path, check_plot_path
from fredfab.sim.cli.report import format_compare_table, plot_compare
from fredfab.sim.engines.training import DEFAULT_FABRICS, compare

NAME = "compare"
HELP = "compare a training workload on the mesh and FRED-A..D (time, breakdown, speedup)"
PLOT_FOLDER = Path("build/compare")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_training_arguments(p)
    p.add_argument(
        "--fabric",
        action="append",
        metavar="NAME|FILE",
        help=f"fabrics (repeat; default {' '.join(DEFAULT_FABRICS)}); the first is the baseline",
    )
    p.add_argument("-o", "--output", help="plot file (.png/.svg; default build/compare/...)")
    p.add_argument("--format", choices=("png", "svg"), default="png", help="default plot format")
    p.add_argument("--no-plot", action="store_true", help="skip the plot")


def run(args: argparse.Namespace) -> int:
    check_plot_path(args, PLOT_FOLDER)
    res = compare(
        args.workload,
        args.timing_card,
        fabrics=args.fabric or DEFAULT_FABRICS,
        strategy=args.strategy,
        npu=npu_from(args),
        **overrides(args),
    )
    plot = None
    if not args.no_plot:
        out = Path(args.output or PLOT_FOLDER / f"{res.workload}.{args.format}")
        with atomic_path(out) as tmp:
            plot_compare(res, tmp)
        plot = out
    if args.json:
        d = res.to_dict()
        d["plot"] = str(plot) if plot else None
        print(json.dumps(d, indent=1))
        return 0
    print(format_compare_table(res))
    if plot:
        print(f"plot: {plot}")
    return 0
