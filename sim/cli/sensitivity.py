"""`fred sensitivity`: FRED's speedup over the mesh and its reduction of exposed communication
as one setting varies (NPU compute, efficiency, sequence length, samples, link bandwidth)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from fredfab.model.chakra.reader import is_trace
from fredfab.sim.cli import UserError
from fredfab.sim.cli.arguments import MAX_SENSITIVITY_VALUES, span
from fredfab.sim.cli.estimate import add_training_arguments, npu_from, overrides, workload_from
from fredfab.sim.cli.output import check_plot_path, print_with_plot
from fredfab.sim.cli.report import Progress
from fredfab.sim.cli.sensitivity_report import format_sensitivity_table, plot_sensitivity
from fredfab.sim.engines.sensitivity import VARIABLES, check_values, sensitivity
from fredfab.sim.engines.training import DEFAULT_FABRICS

PLOT_FOLDER = Path("build/sensitivity")


def value_list(text: str) -> list[float]:
    """An argparse type: comma-separated finite numbers (their range depends on --vary and
    is checked by the command)."""
    parts = [t.strip() for t in text.split(",")]
    if not text.strip() or len(parts) > MAX_SENSITIVITY_VALUES:
        raise argparse.ArgumentTypeError(
            f"give 1..{MAX_SENSITIVITY_VALUES} comma-separated numbers, got {text!r}"
        )
    out = []
    for t in parts:
        try:
            v = float(t)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{t!r} is not a number") from None
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"{t!r} is not a finite number")
        out.append(v)
    return out


def _vary_help() -> str:
    lines = [
        f"{v.name}: {v.help} (default values {', '.join(f'{x:g}' for x in v.defaults)}; "
        f"range {span(tuple(int(b) for b in v.bounds) if v.integer else v.bounds)})"
        for v in VARIABLES.values()
    ]
    return "setting to vary (default tflops). " + "; ".join(lines).replace("%", "%%")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_training_arguments(p)
    p.add_argument("--vary", choices=tuple(VARIABLES), default="tflops", help=_vary_help())
    p.add_argument(
        "--values",
        type=value_list,
        metavar="V1,V2,...",
        help="values of the varied setting (default: its default values, see --vary)",
    )
    p.add_argument(
        "--fabric",
        action="append",
        metavar="NAME|FILE",
        help=f"fabrics (repeat; default {' '.join(DEFAULT_FABRICS)}); the first is the baseline",
    )
    p.add_argument("-o", "--output", help="plot file (.png/.svg; default build/sensitivity/...)")
    p.add_argument("--format", choices=("png", "svg"), default="png", help="default plot format")
    p.add_argument("--no-plot", action="store_true", help="skip the plot")


#: The option each varied setting would override (the varied values win, so giving both
#: is refused rather than one dropped in silence).
VARIED_OPTION = {"efficiency": "efficiency", "samples": "samples_per_replica"}


def run(args: argparse.Namespace) -> int:
    if is_trace(args.workload):
        raise UserError(
            "a Chakra trace fixes its compute times and strategy: estimate or compare it, "
            "not vary them"
        )
    fixed = VARIED_OPTION.get(args.vary)
    if fixed and getattr(args, fixed) is not None:
        raise UserError(
            f"--vary {args.vary} sets --{fixed.replace('_', '-')} itself: give its values "
            "with --values"
        )
    values = check_values(args.vary, args.values or VARIABLES[args.vary].defaults)
    check_plot_path(args, PLOT_FOLDER)
    res = sensitivity(
        workload_from(args),  # with --astra-clock-GHz, which only a text workload takes
        args.vary,
        values,
        fabrics=args.fabric or DEFAULT_FABRICS,
        strategy=args.strategy,
        npu=npu_from(args),
        timing_card=args.timing_card,
        ignore_memory=args.ignore_memory,
        progress=Progress(f"sensitivity {args.workload} {args.vary}"),
        **overrides(args),
    )
    return print_with_plot(
        args,
        res,
        PLOT_FOLDER,
        plot_sensitivity,
        format_sensitivity_table,
        stem=f"{res.workload}-{res.variable}",
    )
