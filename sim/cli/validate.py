"""`fred validate`: the estimates against measured systems (the validation suite)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fredfab.model.validation.calibration import frozen
from fredfab.model.validation.suite import load_suite, shipped_datasets
from fredfab.sim.cli import EXIT_FAILED, UserError
from fredfab.sim.cli.output import check_plot_path, print_with_plot
from fredfab.sim.cli.validation_report import (
    format_ablations,
    format_calibration,
    format_validation,
    plot_validation,
)
from fredfab.sim.engines.ablation import ablate
from fredfab.sim.engines.calibration import fit
from fredfab.sim.engines.validation import validate

NAME = "validate"
HELP = "check the estimates against measured systems (Megatron-LM runs, an NCCL curve)"
PLOT_FOLDER = Path("build/validate")


def add_arguments(p: argparse.ArgumentParser) -> None:
    names = ", ".join(f.stem for f in shipped_datasets())
    p.add_argument(
        "--data",
        action="append",
        metavar="FILE",
        help="a validation data file (fred-validation/1; repeat; default the shipped ones)",
    )
    p.add_argument(
        "--dataset",
        action="append",
        metavar="NAME",
        help=f"only this dataset (repeat; the shipped ones are {names})",
    )
    only = p.add_mutually_exclusive_group()
    only.add_argument(
        "--fit",
        action="store_true",
        help="fit the calibrated parameters on the calibration subset again, show them beside "
        "the frozen ones and exit 1 if they differ beyond the files' 4 digits (slow: tens of "
        "seconds)",
    )
    only.add_argument(
        "--ablations",
        action="store_true",
        help="each fix of the compute model undone alone (no GEMM shapes, HBM at its datasheet "
        "rate, no 2022 software factor, no L2 bound, none of them): the compute parameters "
        "refitted on their calibration rows and the checked iteration times' errors (slow: "
        "about two minutes)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("-o", "--output", help="plot file (.png/.svg; default build/validate/...)")
    p.add_argument("--format", choices=("png", "svg"), default="png", help="default plot format")
    p.add_argument("--no-plot", action="store_true", help="skip the plot")


def run(args: argparse.Namespace) -> int:
    check_plot_path(args, PLOT_FOLDER)
    suite = load_suite(args.data)
    if args.dataset:
        known = {d.name for d in suite}
        bad = sorted(set(args.dataset) - known)
        if bad:
            raise UserError(f"dataset(s) {', '.join(bad)} unknown; have {', '.join(sorted(known))}")
        if args.fit or args.ablations:
            # Both refit on the calibration rows of every dataset: a subset would fit others.
            flag = "--fit" if args.fit else "--ablations"
            raise UserError(f"--dataset does not apply to {flag}, which uses every dataset")
        suite = [d for d in suite if d.name in args.dataset]
    if args.fit:
        fitted = fit(suite).rounded()
        held = frozen()
        same = fitted == held
        if args.json:
            print(json.dumps({"frozen": held.to_dict(), "fitted": fitted.to_dict(), "same": same}))
        else:
            print(format_calibration(held, fitted))
            print("the frozen values are the fit" if same else "FROZEN VALUES ARE NOT THE FIT")
        return 0 if same else EXIT_FAILED
    if args.ablations:
        rows = ablate(suite)
        if args.json:
            print(json.dumps({"ablations": [r.to_dict() for r in rows]}))
        else:
            print(format_ablations(rows))
        return 0
    res = validate(datasets=suite)
    return print_with_plot(
        args, res, PLOT_FOLDER, plot_validation, format_validation, stem="validation"
    )
