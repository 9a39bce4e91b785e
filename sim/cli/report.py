"""What the CLI shows: tables, plots and progress bars for the results the engines return.

The engines (fredfab.sim.engines) return data only; everything a person reads is written here.
"""

from __future__ import annotations

import math
import sys
import time as _time
from pathlib import Path

import numpy as np

from fredfab.model.system.units import GIB, KIB, MIB, MS, NS, US, to_ms
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


def _plot_path(path: str | Path) -> Path:
    out = Path(path)
    if out.suffix not in (".png", ".svg"):
        raise ValueError(f"plot file {out}: use a .png or .svg name")
    out.parent.mkdir(parents=True, exist_ok=True)
    return out


def format_compare_table(result: CompareResult) -> str:
    """The compare table: time per iteration, breakdown (ms on the critical path) and
    speedup over the baseline, one row per fabric."""
    cats = list(LABELS)
    lines = [
        f"{result.workload}, {result.strategy}: time per iteration and its breakdown (ms), "
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
        lines.append(row)
    ok = [e for e in result.estimates if e.ok]
    if ok:
        e0 = ok[0]
        s = e0.settings
        lines.append(
            f"minibatch {e0.minibatch}, {s['microbatches']} microbatch(es), "
            f"ZeRO-{s['zero_stage']}, {e0.execution}, recompute {s['recompute']}, "
            f"accumulation {s['accumulation']}"
        )
    cards = sorted({e.timing_card for e in result.estimates if e.timing_card})
    if cards:
        lines.append(f"switch timing card: {', '.join(cards)}")
    clocks = sorted({e.switch_clock for e in result.estimates if e.switch_clock})
    if clocks:
        lines.append(f"switch clock: {'; '.join(clocks)}")
    for e in result.estimates:
        for n in e.notes:
            lines.append(f"  {e.fabric}: {n}")
    return "\n".join(lines)


def plot_compare(result: CompareResult, path: str | Path) -> Path:
    """Stacked bars of the breakdown per fabric (PNG or SVG by suffix)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = _plot_path(path)
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    names = [e.fabric for e in result.estimates]
    bottom = np.zeros(len(names))
    for c in LABELS:
        vals = np.array([to_ms(e.breakdown.get(c, 0.0)) if e.ok else 0.0 for e in result.estimates])
        if vals.any():
            ax.bar(names, vals, bottom=bottom, label=LABELS[c])
            bottom += vals
    for i, e in enumerate(result.estimates):
        if not e.ok:
            ax.text(i, 0, "does not fit", rotation=90, ha="center", va="bottom", fontsize=8)
        elif (sp := result.speedup(e)) is not None:
            ax.text(i, bottom[i], f"{sp:.2f}x", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("time per iteration (ms)")
    ax.set_title(f"{result.workload}, {result.strategy}")
    ax.legend(fontsize="small", ncol=3)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out)
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
                txt = f"{e.throughput:.2f}" + ("*" if best.get(f) is e else "")
            row += f"{txt:>11}"
        lines.append(row)
    lines.append("* best strategy per fabric; 'no fit': exceeds HBM capacity")
    spread = result.spread()
    for f, e in best.items():
        lines.append(
            f"best on {f}: {e.strategy}, {e.throughput:.2f} samples/s, "
            f"{to_ms(e.time):.1f} ms per iteration (worst fitting strategy: "
            f"{spread[f]:.2f}x lower throughput)"
        )
    for s, r in result.invalid:
        lines.append(f"not applicable: {s}: {r}")
    return "\n".join(lines)


def plot_sweep(result: SweepResult, path: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = _plot_path(path)
    fabs = list(dict.fromkeys(e.fabric for e in result.estimates))
    strategies = list(dict.fromkeys(e.strategy for e in result.estimates))
    fig, ax = plt.subplots(figsize=(max(6.4, 0.5 * len(strategies) + 2), 4.0))
    width = 0.8 / max(len(fabs), 1)
    for k, f in enumerate(fabs):
        ys = []
        for s in strategies:
            e = next((x for x in result.estimates if x.fabric == f and x.strategy == s), None)
            ys.append(e.throughput if e is not None and e.ok else math.nan)
        xs = np.arange(len(strategies)) + (k - (len(fabs) - 1) / 2) * width
        ax.bar(xs, ys, width, label=f)
    ax.set_xticks(range(len(strategies)), strategies, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("training throughput (samples/s)")
    ax.set_title(f"{result.workload}: strategy sweep (missing bars: does not fit)")
    ax.legend(fontsize="small", ncol=min(len(fabs), 5))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out)
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
