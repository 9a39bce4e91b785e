"""`fred cost --fpga`: place and route the switch variants on an ECP5 FPGA
(fredfab.sim.verify.fpga) and report LUTs, flip-flops, block RAM and Fmax; optionally write
the measured Fmax into a timing card as its clock."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from fredfab.hw.params import SwitchParams
from fredfab.model.errors import InputError
from fredfab.sim import progress
from fredfab.sim.cli import UserError
from fredfab.sim.cli.output import atomic_path, check_file, check_folder, write_text
from fredfab.sim.cli.plot_style import legend_beside
from fredfab.sim.worker_pool import worker_pool


def run_fpga(args: argparse.Namespace, variants: list[SwitchParams]) -> int:
    from fredfab.sim.verify.fpga import DEFAULT_SEED, nextpnr_command
    from fredfab.sim.verify.synth import yosys_command

    card = card_out = None
    if args.timing_card:
        card, wanted = _card_and_variant(args.timing_card, variants)
        card_out = check_file(args.out / f"{wanted.name}.timing.json", "timing card")
    # Everything that can fail fast fails before minutes of place and route.
    check_folder(args.out)
    yosys_command()
    nextpnr_command()
    seed = DEFAULT_SEED if args.seed is None else args.seed
    jobs = [(v, args.out / "fpga", seed) for v in variants]
    with worker_pool(args.jobs) as pool:
        names = [v.name for v in variants]
        doing = "synthesis (Yosys) and ECP5 place and route (nextpnr), minutes each"
        rows = progress.pool_map(pool, args.jobs, _one, jobs, names, doing)
    write_text(args.out / "fpga.json", json.dumps(rows, indent=1) + "\n")
    plot = None
    if not args.no_plot and any(r["status"] == "ok" for r in rows):
        plot = args.out / "fpga.png"
        with atomic_path(plot) as tmp:
            plot_fpga(rows, tmp)
    if card is not None and card_out is not None:
        row = next(r for r in rows if r["variant"] == wanted.name)
        if row["status"] != "ok":
            raise UserError(f"{wanted.name} does not fit the FPGA: no clock to write into a card")
        clocked = dataclasses.replace(
            card, clock_hz=row["fmax_mhz"] * 1e6, clock_source=clock_source(row)
        )
        write_text(card_out, clocked.to_json())
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(format_fpga_table(rows))
    print(f"\nJSON: {args.out / 'fpga.json'}" + (f"; plot: {plot}" if plot else ""))
    if card_out is not None:
        print(
            f"timing card with the FPGA clock: {card_out} (an FPGA Fmax, not the paper's ASIC "
            "clock; pass it with --timing-card to use it)"
        )
    return 0


def clock_source(row: dict) -> str:
    """What a card's clock_hz says about itself when it is this row's Fmax."""
    return (
        f"nextpnr-ecp5 Fmax of {row['variant']} on {row['device']}, seed {row['seed']} "
        "(an FPGA clock, not the paper's ASIC clock)"
    )


def _card_and_variant(path: str, variants: list[SwitchParams]):
    """The card at ``path`` and the variant it describes, which this run must place."""
    from fredfab.model.timing_card import load_timing_card

    card = load_timing_card(path)
    fields = {f.name for f in dataclasses.fields(SwitchParams)}
    try:
        described = SwitchParams(**{k: v for k, v in card.generator.items() if k in fields})
    except (TypeError, InputError) as exc:
        raise UserError(f"timing card {path}: its generator is not a variant: {exc}") from None
    if described not in variants:
        g = described
        raise UserError(
            f"timing card {path} describes {g.name}, which this run does not place and route; "
            f"run --ports {g.ports} --arch {g.arch} --m {g.m} --lanes {g.lanes} --dtype {g.dtype} "
            f"--adder-stages {g.adder_stages}"
        )
    return card, described


def _one(job: tuple[SwitchParams, Path, int]) -> dict:
    from fredfab.sim.verify.fpga import variant_row

    params, root, seed = job
    return variant_row(params, root / params.name, seed)


def format_fpga_table(rows: list[dict]) -> str:
    cols = [
        ("arch", "arch", "<5", ""),
        ("P", "ports", ">3", ""),
        ("m", "m", ">2", ""),
        ("lanes", "lanes", ">5", ""),
        ("dtype", "dtype", "<5", ""),
        ("stages", "adder_stages", ">6", ""),
        ("latency", "latency_cycles", ">7", ""),
        ("LUTs", "luts", ">8", ","),
        ("LUT %", "lut_percent", ">6", ""),
        ("FFs", "ffs", ">7", ","),
        ("BRAM", "bram", ">5", ""),
        ("DSP", "dsp", ">4", ""),
        ("carry", "carry", ">6", ","),
        ("Fmax MHz", "fmax_mhz", ">9", ".1f"),
        ("P&R s", "pnr_seconds", ">7", ".0f"),
    ]
    head = " ".join(f"{title:{align}}" for title, _, align, _ in cols)
    lines = [head, "-" * len(head)]
    for r in rows:
        cells = [_cell(r.get(key), align, fmt) for _, key, align, fmt in cols]
        if r["status"] != "ok":
            cells = [*cells[:7], f" {r['status']}: {r['reason']}"]
        lines.append(" ".join(cells))
    if rows:
        lines.append(f"{rows[0]['device']}, out of context, placer seed {rows[0]['seed']}")
    paths = [r for r in rows if r.get("critical_path")]
    if paths:
        lines.append("critical paths:")
        lines += [f"  {r['variant']}: {r['critical_path']}" for r in paths]
    return "\n".join(lines)


def _cell(value: object, align: str, fmt: str) -> str:
    return f"{'-':{align}}" if value is None else f"{value:{align}{fmt}}"


def plot_fpga(rows: list[dict], path: Path) -> None:
    """Fmax, LUTs, flip-flops and latency against adder stages, one line per switch (arch,
    ports, element type); variants that did not fit are left out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in rows if r["status"] == "ok"]
    panels = (
        ("fmax_mhz", "Fmax (MHz)"),
        ("luts", "LUTs"),
        ("ffs", "flip-flops"),
        ("latency_cycles", "latency (cycles)"),
    )
    fig, axes = plt.subplots(1, len(panels), figsize=(16, 4))
    switches = sorted({(r["arch"], r["ports"], r["dtype"]) for r in ok})
    for arch, ports, dtype in switches:
        rs = sorted(
            (r for r in ok if (r["arch"], r["ports"], r["dtype"]) == (arch, ports, dtype)),
            key=lambda r: r["adder_stages"],
        )
        xs = [r["adder_stages"] for r in rs]
        for ax, (key, label) in zip(axes, panels, strict=True):
            ax.plot(xs, [r[key] for r in rs], marker="o", label=f"{arch} P = {ports}, {dtype}")
            ax.set_xlabel("adder stages")
            ax.set_ylabel(label)
            ax.grid(True, alpha=0.3)
    legend_beside(axes[-1])
    seed = ok[0]["seed"]
    fig.suptitle(f"FRED switch on {ok[0]['device']} (nextpnr-ecp5, out of context, seed {seed})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
