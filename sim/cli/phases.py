"""`fred phases`: effective per-NPU bandwidth of each 3D-parallel phase on each fabric."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fredfab.model.system import Strategy
from fredfab.model.system.units import GB
from fredfab.sim.cli import UserError
from fredfab.sim.cli.arguments import CHUNKS, bounded_int, size, span, timing_card
from fredfab.sim.cli.collective import (
    NETWORK_MODELS,
    add_algorithm_argument,
    add_network_model_argument,
    fabrics_from,
)
from fredfab.sim.cli.extras import require
from fredfab.sim.cli.output import atomic_path, check_file, wants_plot
from fredfab.sim.cli.report import fmt_bytes, fmt_time, timing_lines
from fredfab.sim.engines.system import DEFAULT_CHUNKS, phase_bandwidth


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--fabric",
        action="append",
        metavar="NAME|FILE",
        help="fabric name or TOML file; repeat to compare (default: all shipped fabrics)",
    )
    p.add_argument("--strategy", required=True, help="e.g. MP2-DP5-PP2 (MP x DP x PP <= NPUs)")
    p.add_argument(
        "--size", type=size, help="bytes per NPU for every phase, e.g. 64MiB (whole bytes, <= 1TiB)"
    )
    p.add_argument("--mp-size", type=size, help="override the MP All-Reduce size")
    p.add_argument("--dp-size", type=size, help="override the DP All-Reduce size")
    p.add_argument("--pp-size", type=size, help="override the PP activation size")
    p.add_argument(
        "--chunks",
        type=bounded_int(CHUNKS),
        default=DEFAULT_CHUNKS,
        help=f"chunks ({span(CHUNKS)}; default {DEFAULT_CHUNKS})",
    )
    p.add_argument(
        "--timing-card",
        type=timing_card,
        metavar="JSON",
        help="measured switch timing card (default: each fabric's own, the built-in card "
        "unless its file names one)",
    )
    p.add_argument("-o", "--output", help="plot file (.png or .svg; default build/phases/...)")
    p.add_argument("--format", choices=("png", "svg"), default="png", help="default plot format")
    p.add_argument("--no-plot", action="store_true", help="skip the plot")
    add_algorithm_argument(p)
    add_network_model_argument(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="machine-readable output (per phase: busbw, the algorithms used and the slowest "
        "group's candidates with their times alone)",
    )


def run(args: argparse.Namespace) -> int:
    st = Strategy.parse(args.strategy)
    if st.workers == 1:
        raise UserError(f"--strategy {st}: one worker has no MP, DP or PP phase to time")
    sizes = {"mp": args.mp_size, "dp": args.dp_size, "pp": args.pp_size}
    base = args.size
    for k, v in sizes.items():
        if v is None and base is None:
            raise UserError(f"give --size (or --{k}-size for every phase)")
    for k, v in [("", base), *((f"{k}-", v) for k, v in sizes.items())]:
        if v == 0:
            # A phase of zero bytes takes no time: no bandwidth to report.
            raise UserError(f"--{k}size 0: a phase needs at least 1 byte per NPU")
    out = None
    plotting = wants_plot(args)
    if plotting:
        require("matplotlib")
        out = Path(args.output) if args.output else Path("build/phases") / f"{st}.{args.format}"
        check_file(out, "plot file", (".png", ".svg"))
    table = {}
    timing = {}
    for fab in fabrics_from(args):
        timing[fab.name] = fab.timing.to_dict() if fab.has_fred_switches else None
        res = phase_bandwidth(
            fab,
            st,
            base,
            mp_bytes=sizes["mp"],
            dp_bytes=sizes["dp"],
            pp_bytes=sizes["pp"],
            chunks=args.chunks,
            algorithm=args.algorithm,
            engine=NETWORK_MODELS[args.network_model],
        )
        table[fab.name] = res
    phases = [ph for ph in ("MP", "DP", "PP") if any(ph in r for r in table.values())]
    plot = None
    if plotting and phases:
        plot = _plot(table, phases, st, out)
    if args.json:
        out = {
            "strategy": str(st),
            "fabrics": {f: {ph: r.to_dict() for ph, r in res.items()} for f, res in table.items()},
            "plot": str(plot) if plot else None,
            "switch_timing": timing,
        }
        print(json.dumps(out, indent=1, allow_nan=False))
        return 0
    print(f"{st}: bus bandwidth per NPU (GB/s) and time per phase, all groups at once")
    for ph in phases:
        r0 = next(r[ph] for r in table.values() if ph in r)
        print(
            f"  {ph}: {r0.groups} x {r0.op} over {r0.group_size} NPUs, {fmt_bytes(r0.size_bytes)}"
        )
    head = f"{'fabric':<10}" + "".join(f"{ph + ' GB/s':>12}{ph + ' time':>12}" for ph in phases)
    print(head)
    print("-" * len(head))
    for f, res in table.items():
        cells = "".join(f"{res[ph].busbw / GB:>12.1f}{fmt_time(res[ph].time):>12}" for ph in phases)
        print(f"{f:<10}{cells}")
        print(
            "  algorithms: " + "; ".join(f"{ph} {', '.join(res[ph].algorithms)}" for ph in phases)
        )
        for ph in phases:
            for fb in res[ph].fallbacks:
                print(f"  {ph} fallback: {fb}")
    for line in timing_lines(timing):
        print(line)
    if plot:
        print(f"plot: {plot}")
    return 0


def _plot(table, phases, st: Strategy, out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fredfab.sim.cli.plot_style import fabric_colours, legend_beside

    fabs = list(table)
    colour = fabric_colours(fabs)
    width = 0.8 / len(fabs)
    fig, ax = plt.subplots(figsize=(2.8 + 1.6 * len(phases), 3.6))
    for i, f in enumerate(fabs):
        xs = [p + (i - (len(fabs) - 1) / 2) * width for p in range(len(phases))]
        ys = [table[f][ph].busbw / GB if ph in table[f] else 0.0 for ph in phases]
        ax.bar(xs, ys, width, label=f, color=colour[f])
    ax.set_xticks(range(len(phases)), phases)
    ax.set_ylabel("per-NPU effective bandwidth (GB/s)")
    ax.set_title(f"{st}: 3D-parallel phases, all groups concurrent")
    legend_beside(ax, fontsize="small")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    with atomic_path(out) as tmp:
        fig.savefig(tmp, bbox_inches="tight")
    plt.close(fig)
    return out
