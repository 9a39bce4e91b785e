"""Tables and plots of `fred sensitivity` (fredfab.sim.engines.sensitivity results)."""

from __future__ import annotations

import math
from pathlib import Path

from fredfab.model.system.units import to_ms
from fredfab.sim.engines.sensitivity import VARIABLES, SensitivityResult


def _value(v: float) -> str:
    return f"{v:g}"


def format_sensitivity_table(result: SensitivityResult) -> str:
    """One row per value and fabric: time, compute, bubble and exposed communication (ms),
    exposed communication's share of the time, speedup and exposed-communication reduction
    against the baseline; then where each fabric turns communication-bound."""
    var = VARIABLES[result.variable]
    base = result.baseline
    lines = [
        f"{result.workload}, {result.strategy}: sensitivity to {var.label}; "
        f"speedup and reduction of exposed communication vs {base}"
    ]
    head = (
        f"{result.variable:>10}  {'fabric':<10}{'time ms':>11}{'compute':>11}{'bubble':>9}"
        f"{'exposed':>9}{'share':>7}{'speedup':>9}{'less exposed':>14}"
    )
    lines += [head, "-" * len(head)]
    for p in result.points:
        for e in p.result.estimates:
            row = f"{_value(p.value):>10}  {e.fabric:<10}"
            if not e.ok:
                lines.append(row + f"  {e.status}: {e.reason}")
                continue
            sp = result.speedup(p, e.fabric)
            red = result.reduction(p, e.fabric)
            row += (
                f"{to_ms(e.time):>11.2f}{to_ms(e.breakdown['compute']):>11.2f}"
                f"{to_ms(e.breakdown['bubble']):>9.2f}{to_ms(e.exposed_comm):>9.2f}"
                f"{100 * e.exposed_comm / e.time:>6.1f}%"
                f"{'-' if sp is None else f'{sp:.3f}x':>9}"
                f"{'-' if red is None else f'{100 * red:.1f}%':>14}"
            )
            flags = ("C" if result.comm_bound(p, e.fabric) else "") + ("!" if not e.fits else "")
            lines.append(row + (f" {flags}" if flags else ""))
    over = any(e.ok and not e.fits for p in result.points for e in p.result.estimates)
    lines.append(
        "share: exposed communication / time; C: communication-bound (exposed communication "
        ">= compute)" + ("; ! exceeds HBM (--ignore-memory)" if over else "")
    )
    lines += summary_lines(result)
    notes = dict.fromkeys(n for p in result.points for e in p.result.estimates for n in e.notes)
    lines += [f"note: {n}" for n in notes if n.startswith("uneven")]
    return "\n".join(lines)


def summary_lines(result: SensitivityResult) -> list[str]:
    """Where the baseline turns communication-bound and what the other fabrics give there
    (or at the last value if it never does)."""
    base = result.baseline
    estimated = [p for p in result.points if result.comm_bound(p, base) is not None]
    if not estimated:
        return [f"{base} was estimated at no value (see the rows above)"]
    at = result.comm_bound_from(base)
    if at is None:
        point = estimated[-1]
        head = (
            f"{base} stays compute-bound (exposed communication < compute) up to "
            f"{result.variable} = {_value(point.value)}"
        )
    else:
        point = next(p for p in result.points if p.value == at)
        head = f"{base} is communication-bound from {result.variable} = {_value(at)}"
    others = [f for f in result.fabrics if f != base]
    out = [head + ("; there:" if others else "")]
    for f in others:
        sp, red = result.speedup(point, f), result.reduction(point, f)
        if sp is None:
            out.append(f"  {f}: not estimated")
            continue
        red_txt = "" if red is None else f", exposes {100 * red:.1f}% less communication"
        out.append(f"  {f}: {sp:.3f}x faster{red_txt}")
    for f in result.fabrics:
        if f != base and (v := result.comm_bound_from(f)) is not None:
            out.append(f"{f} is communication-bound from {result.variable} = {_value(v)}")
    return out


def plot_sensitivity(result: SensitivityResult, path: str | Path) -> Path:
    """Speedup over the baseline, reduction of exposed communication and exposed
    communication / compute against the varied setting, one line per fabric."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fredfab.sim.cli.plot_style import fabric_colours, legend_beside, plot_file

    out = plot_file(path)
    var = VARIABLES[result.variable]
    xs = [p.value for p in result.points]
    fig, axes = plt.subplots(3, 1, figsize=(6.4, 8.0), sharex=True)
    positive = False
    colour = fabric_colours(list(result.fabrics))
    for f in result.fabrics:
        sp, red, ratio = [], [], []
        for p in result.points:
            e = result.estimate(p, f)
            s, r = result.speedup(p, f), result.reduction(p, f)
            sp.append(math.nan if s is None else s)
            red.append(math.nan if r is None else 100 * r)
            ok = e is not None and e.ok and e.breakdown["compute"] > 0
            ratio.append(e.exposed_comm / e.breakdown["compute"] if ok else math.nan)
        style = dict(marker="o", label=f, color=colour[f])  # one colour per fabric throughout
        axes[0].plot(xs, sp, **style)
        if f != result.baseline:
            axes[1].plot(xs, red, **style)
        axes[2].plot(xs, ratio, **style)
        positive |= any(r > 0 for r in ratio if not math.isnan(r))
    axes[0].set_ylabel(f"speedup over {result.baseline}")
    axes[1].set_ylabel(f"exposed comm. reduction\nvs {result.baseline} (%)")
    axes[2].set_ylabel("exposed comm. / compute")
    axes[2].axhline(1.0, color="k", lw=0.8, ls="--")
    axes[2].text(xs[0], 1.0, " communication-bound above", va="bottom", fontsize=7)
    axes[2].set_xlabel(var.label)
    # Limits from the values, not the data: points that do not fit leave no data.
    lo, hi = min(xs), max(xs)
    if var.log:
        axes[2].set_xscale("log")
        axes[2].set_xlim(lo / 1.25, hi * 1.25)
    else:
        pad = 0.05 * (hi - lo) or 0.05 * abs(lo) or 1.0
        axes[2].set_xlim(lo - pad, hi + pad)
    if positive:  # a log axis needs a positive value (none if nothing fits, or no comm)
        axes[2].set_yscale("log")
    axes[0].set_title(f"{result.workload}, {result.strategy}: sensitivity to {result.variable}")
    for a in axes:
        a.grid(alpha=0.3)
        if a.get_legend_handles_labels()[0]:  # the reduction panel is empty without others
            legend_beside(a, fontsize="small")
    fig.tight_layout()
    fig.savefig(out, bbox_inches="tight")
    plt.close(fig)
    return out
