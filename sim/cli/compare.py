"""`fred compare`: a workload on the mesh and FRED-A..D, breakdown and speedup."""

from __future__ import annotations

import argparse
from pathlib import Path

from fredfab.model.chakra.reader import is_trace
from fredfab.sim.cli.chakra_estimate import compare_trace
from fredfab.sim.cli.estimate import add_training_arguments, npu_from, overrides, workload_from
from fredfab.sim.cli.output import check_plot_path, print_with_plot
from fredfab.sim.cli.report import format_compare_table, plot_compare
from fredfab.sim.engines.training import DEFAULT_FABRICS, compare

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
    if is_trace(args.workload):
        return compare_trace(args, args.fabric or DEFAULT_FABRICS)
    check_plot_path(args, PLOT_FOLDER)
    res = compare(
        workload_from(args),
        args.timing_card,
        fabrics=args.fabric or DEFAULT_FABRICS,
        strategy=args.strategy,
        npu=npu_from(args),
        ignore_memory=args.ignore_memory,
        **overrides(args),
    )
    return print_with_plot(args, res, PLOT_FOLDER, plot_compare, format_compare_table)
