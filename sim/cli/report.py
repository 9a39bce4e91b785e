"""What the CLI shows: tables, plots and progress bars for the results the engines return.

The engines (fredfab.sim.engines) return data only; everything a person reads is written here.
"""

from __future__ import annotations

import math
import sys
import time as _time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fredfab.model.system.switch_timing import describe_timing
from fredfab.model.system.units import GIB, KIB, MIB, MS, NS, US, to_ms
from fredfab.sim.cli.plot_style import CATEGORY_COLOURS, fabric_colours, legend_beside, plot_file

if TYPE_CHECKING:  # the training engine is loaded by the commands that run it
    from fredfab.sim.engines.training import CompareResult, SweepResult

#: Breakdown labels, in table order (keys of Estimate.breakdown).
LABELS = {
    "compute": "compute",
    "bubble": "bubble",
    "input": "input",
    "dp": "DP",
    "mp": "MP",
    "pp": "PP",
    "weights": "weights",
}


def fmt_bytes(n: float) -> str:
    """``n`` bytes with a binary prefix, 4 significant digits: 64 MiB, 1.5 GiB, 512 B."""
    for unit, scale in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n:.0f} B"


def fmt_time(t: float) -> str:
    """``t`` seconds in s, ms, us or ns, 4 significant digits."""
    for unit, scale in (("s", 1.0), ("ms", MS), ("us", US)):
        if t >= scale:
            return f"{t / scale:.4g} {unit}"
    return f"{t / NS:.4g} ns"


def timing_lines(per_fabric: Mapping[str, Mapping[str, Any] | None]) -> list[str]:
    """The switch timing behind a result (fabric name -> SwitchTiming.to_dict(), empty or None
    for a fabric without switches): one line if every fabric with switches used the same,
    else one per fabric; none if no fabric has switches."""
    text = {f: describe_timing(t) for f, t in per_fabric.items() if t}
    if len(set(text.values())) == 1:
        return [f"switch timing card: {next(iter(text.values()))}"]
    return [f"switch timing card of {f}: {d}" for f, d in text.items()]


def _timing_of(estimates) -> dict[str, Mapping[str, Any]]:
    return {e.fabric: e.switch_timing for e in estimates}


def format_compare_table(result: CompareResult) -> str:
    """The compare table: time per iteration, breakdown (ms on the critical path) and
    speedup (training throughput) over the baseline, one row per fabric; the minibatch and
    strategy of each fabric when they differ."""
    cats = list(LABELS)
    strategies = {e.strategy for e in result.estimates if e.ok}
    title = result.strategy if len(strategies) <= 1 else "strategy per fabric below"
    lines = [
        f"{result.workload}, {title}: time per iteration and its breakdown (ms), "
        "seen from the busiest NPU"
    ]
    head = f"{'fabric':<10}{'time ms':>11}" + "".join(f"{LABELS[c]:>10}" for c in cats)
    head += f"{'speedup':>9}"
    lines += [head, "-" * len(head)]
    for e in result.estimates:
        if not e.ok:
            lines.append(f"{e.fabric:<10}  {e.status}: {e.reason}")
            continue
        sp = result.speedup(e)
        row = f"{e.fabric:<10}{to_ms(e.time):>11.2f}"
        row += "".join(f"{to_ms(e.breakdown[c]):>10.2f}" for c in cats)
        row += f"{sp:>8.2f}x" if sp is not None else f"{'-':>9}"
        lines.append(row + ("  ! exceeds HBM (--ignore-memory)" if not e.fits else ""))
    ok = [e for e in result.estimates if e.ok]
    if ok:
        e0 = ok[0]
        s = e0.settings
        batch = (
            f"minibatch {e0.minibatch}"
            if result.same_minibatch
            else "minibatch " + ", ".join(f"{e.minibatch} on {e.fabric} ({e.strategy})" for e in ok)
        )
        lines.append(
            f"{batch}, {s['microbatches']} microbatch(es), "
            f"ZeRO-{s['zero_stage']}, {e0.execution}, recompute {s['recompute']}, "
            f"accumulation {s['accumulation']}"
        )
        if result.same_minibatch:
            lines.append(f"speedup: time per iteration of {result.baseline} / the fabric's")
        else:
            lines.append(
                f"speedup: training throughput (samples/s) over {result.baseline}'s; the "
                "fabrics have different NPU counts and run different minibatches, so their "
                "times per iteration do not compare"
            )
    lines += timing_lines(_timing_of(result.estimates))
    for e in result.estimates:
        for n in e.notes:
            lines.append(f"  {e.fabric}: {n}")
    return "\n".join(lines)


def plot_compare(result: CompareResult, path: str | Path) -> Path:
    """Stacked bars of the breakdown per fabric (PNG or SVG by suffix)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = plot_file(path)
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    names = [e.fabric for e in result.estimates]
    if not result.same_minibatch:  # the bars' times are of different minibatches: say so
        names = [f"{e.fabric}\nbatch {e.minibatch}" if e.ok else e.fabric for e in result.estimates]
    bottom = np.zeros(len(names))
    for c in LABELS:
        vals = np.array([to_ms(e.breakdown.get(c, 0.0)) if e.ok else 0.0 for e in result.estimates])
        if vals.any():
            ax.bar(names, vals, bottom=bottom, label=LABELS[c], color=CATEGORY_COLOURS[c])
            bottom += vals
    for i, e in enumerate(result.estimates):
        if not e.ok:
            ax.text(i, 0, "does not fit", rotation=90, ha="center", va="bottom", fontsize=8)
        elif (sp := result.speedup(e)) is not None:
            ax.text(i, bottom[i], f"{sp:.2f}x", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("time per iteration (ms)")
    handles, labels = ax.get_legend_handles_labels()
    if result.same_minibatch:
        ax.set_title(f"{result.workload}, {result.strategy}; speedup over {result.baseline}")
    else:
        ax.set_title(
            f"{result.workload}: speedup in samples/s over {result.baseline} (minibatches differ)",
            fontsize=9,
        )
    # Listed top down as the segments are stacked, so the legend reads like the bars.
    legend_beside(ax, handles=handles[::-1], labels=labels[::-1], fontsize="small")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, bbox_inches="tight")
    plt.close(fig)
    return out


def format_sweep_table(result: SweepResult) -> str:
    lines = [
        f"{result.workload}: every MP x DP x PP strategy on every fabric "
        "(training throughput, samples/s; minibatch = DP x samples per replica)"
    ]
    fabs = list(dict.fromkeys(e.fabric for e in result.estimates))
    strategies = list(dict.fromkeys(e.strategy for e in result.estimates))
    cell = {(e.fabric, e.strategy): e for e in result.estimates}
    head = f"{'strategy':<16}{'batch':>6}{'ubatch':>7}" + "".join(f"{f:>11}" for f in fabs)
    lines += [head, "-" * len(head)]
    best = result.best()
    for s in strategies:
        any_e = next(e for e in result.estimates if e.strategy == s)
        row = f"{s:<16}{any_e.minibatch:>6}{any_e.settings['microbatches']:>7}"
        for f in fabs:
            e = cell.get((f, s))
            if e is None:
                txt = "-"
            elif not e.ok:
                txt = "no fit"
            else:
                mark = "*" if best.get(f) is e else "!" if not e.fits else ""
                txt = f"{e.throughput:.2f}{mark}"
            row += f"{txt:>11}"
        lines.append(row)
    legend = "* best strategy per fabric; 'no fit': exceeds HBM capacity"
    if any(e.ok and not e.fits for e in result.estimates):
        legend += "; ! exceeds HBM capacity, estimated anyway (--ignore-memory), never ranked best"
    lines.append(legend)
    spread = result.spread()
    for f, e in best.items():
        lines.append(
            f"best on {f}: {e.strategy}, {e.throughput:.2f} samples/s, "
            f"{to_ms(e.time):.1f} ms per iteration (worst fitting strategy: "
            f"{spread[f]:.2f}x lower throughput)"
        )
    for s, r in result.invalid:
        lines.append(f"not applicable: {s}: {r}")
    # One note per uneven MP degree, in the order the strategies appear.
    notes = dict.fromkeys(n for e in result.estimates for n in e.notes if n.startswith("uneven"))
    lines += [f"note: {n}" for n in notes]
    lines += timing_lines(_timing_of(result.estimates))
    lines += ["", format_sweep_study(result)]
    return "\n".join(lines)


#: Exposed-communication kinds (Estimate.exposed), in table order.
EXPOSED_LABELS = {"mp": "MP", "dp": "DP", "pp": "PP", "io": "I/O"}


def format_sweep_study(result: SweepResult) -> str:
    """Per strategy and fabric: compute, bubble and exposed communication by kind (ms, seen
    from the busiest NPU), throughput, and the exposed communication's reduction against
    the baseline fabric; then the mean reduction per fabric."""
    base = result.baseline
    lines = [
        f"{result.workload}: per strategy and fabric, ms per iteration (compute + bubble + "
        f"exposed MP, DP, PP, I/O = time); reduction of exposed communication vs {base}"
    ]
    head = (
        f"{'strategy':<16}{'fabric':<10}{'compute':>10}{'bubble':>9}"
        + "".join(f"{v:>9}" for v in EXPOSED_LABELS.values())
        + f"{'exposed':>9}{'samples/s':>11}{'vs ' + base:>14}"
    )
    lines += [head, "-" * len(head)]
    for s in dict.fromkeys(e.strategy for e in result.estimates):
        for e in (x for x in result.estimates if x.strategy == s):
            row = f"{s:<16}{e.fabric:<10}"
            if not e.ok:
                lines.append(row + f"  {e.status}")
                continue
            ex = e.exposed
            row += f"{to_ms(e.breakdown['compute']):>10.1f}{to_ms(e.breakdown['bubble']):>9.1f}"
            row += "".join(f"{to_ms(ex[k]):>9.2f}" for k in EXPOSED_LABELS)
            row += f"{to_ms(e.exposed_comm):>9.2f}{e.throughput:>10.2f}{'!' if not e.fits else ' '}"
            r = result.reduction(e)
            row += f"{'-' if r is None else f'{100 * r:.1f}%':>14}"
            lines.append(row)
    if any(e.ok and not e.fits for e in result.estimates):
        lines.append("! exceeds HBM capacity (estimated with --ignore-memory)")
    for f, (m, n) in result.mean_reduction().items():
        if f != base:
            lines.append(
                f"{f}: exposes {100 * m:.1f}% less communication than {base} on average "
                f"over {n} strategies"
            )
    return "\n".join(lines)


def plot_sweep(result: SweepResult, path: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    out = plot_file(path)
    fabs = list(dict.fromkeys(e.fabric for e in result.estimates))
    strategies = list(dict.fromkeys(e.strategy for e in result.estimates))
    cell = {(e.fabric, e.strategy): e for e in result.estimates}
    fig, (ax, ax2, ax3) = plt.subplots(
        3, 1, figsize=(max(6.4, 0.5 * len(strategies) + 2), 10.0), sharex=True
    )
    width = 0.8 / max(len(fabs), 1)
    x0 = np.arange(len(strategies))
    colour = fabric_colours(fabs)
    for k, f in enumerate(fabs):
        xs = x0 + (k - (len(fabs) - 1) / 2) * width
        es = [cell.get((f, s)) for s in strategies]
        ok = [e is not None and e.ok for e in es]
        ys = [e.throughput if good else math.nan for e, good in zip(es, ok, strict=True)]
        bars = ax.bar(xs, ys, width, color=colour[f])
        for b, e, good in zip(bars, es, ok, strict=True):
            if good and not e.fits:  # estimated with --ignore-memory: hatched
                b.set_hatch("//")
        red = [result.reduction(e) if good else None for e, good in zip(es, ok, strict=True)]
        ax2.bar(xs, [math.nan if r is None else 100 * r for r in red], width, color=colour[f])
        # Exposed communication by kind, stacked, with the bubble on top.
        bottom = np.zeros(len(strategies))
        for kind in (*EXPOSED_LABELS, "bubble"):
            vals = np.array(
                [
                    to_ms(e.breakdown["bubble"] if kind == "bubble" else e.exposed[kind])
                    if good
                    else 0.0
                    for e, good in zip(es, ok, strict=True)
                ]
            )
            ax3.bar(
                xs,
                vals,
                width,
                bottom=bottom,
                color=CATEGORY_COLOURS[kind],
                label=(EXPOSED_LABELS.get(kind, kind) if k == 0 else None),
            )
            bottom += vals
    ax.set_ylabel("throughput (samples/s)")
    ax.set_title(
        f"{result.workload}: strategy sweep (missing bars: does not fit or not applicable; "
        "hatched: exceeds HBM)",
        fontsize=9,
    )
    # Legend patches of their own: the first bar of a fabric may be hatched.
    handles = [Patch(facecolor=colour[f], label=f) for f in fabs]
    legend_beside(ax, handles=handles, fontsize="small")
    ax2.set_ylabel(f"exposed comm. reduction\nvs {result.baseline} (%)")
    ax2.axhline(0, color="k", lw=0.5)
    ax3.set_ylabel("exposed comm. + bubble (ms)\nbars: " + ", ".join(fabs), fontsize=8)
    handles3, labels3 = ax3.get_legend_handles_labels()
    legend_beside(ax3, handles=handles3[::-1], labels=labels3[::-1], fontsize="small")
    for a in (ax, ax2, ax3):
        a.grid(axis="y", alpha=0.3)
    ax3.set_xticks(range(len(strategies)), strategies, rotation=60, ha="right", fontsize=7)
    fig.tight_layout()
    fig.savefig(out, bbox_inches="tight")
    plt.close(fig)
    return out


class Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, label: str, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.label = label
        self.on = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = _time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        if not self.on:
            return
        w = 30
        k = int(w * done / max(total, 1))
        el = _time.perf_counter() - self.t0
        self.stream.write(f"\r{self.label} [{'#' * k}{'.' * (w - k)}] {done}/{total} {el:.0f}s")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()
