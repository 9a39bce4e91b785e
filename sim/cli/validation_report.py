"""The table and plot of `fred validate`."""

from __future__ import annotations

from pathlib import Path

from fredfab.model.validation.calibration import PARAMETERS, Calibration
from fredfab.model.validation.metrics import GOAL_GEOMEAN, GOAL_MAX, GOAL_MIN_BYTES, Summary
from fredfab.sim.cli.plot_style import legend_beside, plot_file
from fredfab.sim.engines.ablation import AblationRow
from fredfab.sim.engines.validation import PointResult, ValidationResult


def _value(r: PointResult, seconds: float) -> str:
    v, unit = (seconds * 1e6, "us") if r.point.kind == "collective" else (seconds, "s")
    return f"{v:,.0f} {unit}" if v >= 1000 else f"{v:.4g} {unit}"


def _role(r: PointResult) -> str:
    if r.point.calibration:
        return "fit: " + ",".join(r.point.fits)
    return "checked" if r.in_goal else "checked (< 1 MiB)"


def _summary(s: Summary) -> str:
    if not s.n:
        return "no points"
    return (
        f"{s.n} points: geomean |error| {100 * s.geomean_abs:.1f}%, mean "
        f"{100 * s.mean_abs:.1f}%, max {100 * s.max_abs:.1f}%"
    )


def format_validation(res: ValidationResult) -> str:
    lines = []
    for d in res.datasets:
        rows = res.select(dataset=d.name)
        lines.append(f"{d.name}: {d.description}")
        lines.append(f"  source: {d.source}")
        lines.append(f"  {'point':<24}{'measured':>13}{'estimate':>13}{'error':>9}  role")
        for r in rows:
            lines.append(
                f"  {r.point.name:<24}{_value(r, r.point.measured):>13}"
                f"{_value(r, r.estimate):>13}{100 * r.error:>8.1f}%  {_role(r)}"
            )
        lines.append(f"  calibration: {_summary(res.summary(dataset=d.name, calibration=True))}")
        lines.append(f"  checked:     {_summary(res.summary(dataset=d.name, calibration=False))}")
        lines.append("")
    lines.append(
        f"goal on the checked points: geomean |error| <= {100 * GOAL_GEOMEAN:.0f}%, max <= "
        f"{100 * GOAL_MAX:.0f}% (collectives from {GOAL_MIN_BYTES // 2**20} MiB)"
    )
    for kind, s in res.goal().items():
        if not s.n:
            continue
        verdict = "met" if s.meets_goal else "not met"
        label = "iteration times" if kind == "training" else "collective times"
        lines.append(f"  {label:<17} {_summary(s)}: {verdict}")
    lines.append(format_calibration(res.calibration))
    return "\n".join(lines)


def format_calibration(cal: Calibration, fitted: Calibration | None = None) -> str:
    lines = [
        "calibrated parameters (frozen in the shipped files)"
        if fitted is None
        else "calibrated parameters: frozen in the shipped files / fitted now"
    ]
    frozen = cal.to_dict()
    new = fitted.to_dict() if fitted else None
    for k, what in PARAMETERS.items():
        key = "fixed_cost_us" if k == "fixed_cost" else k
        unit = " us" if k == "fixed_cost" else ""
        v = f"{frozen[key]:.4g}{unit}"
        if new is not None:
            v += f" / {new[key]:.4g}{unit}"
        lines.append(f"  {k:<20} {v:<24} {what}")
    return "\n".join(lines)


def plot_validation(res: ValidationResult, path: str | Path) -> Path:
    """Estimate against measurement, log-log, one panel per kind; calibration points hollow."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = plot_file(path)
    kinds = [k for k in ("training", "collective") if any(r.point.kind == k for r in res.points)]
    fig, axes = plt.subplots(1, len(kinds), figsize=(5.2 * len(kinds), 4.4), squeeze=False)
    for ax, kind in zip(axes[0], kinds, strict=True):
        scale = 1e6 if kind == "collective" else 1.0
        rs = [r for r in res.points if r.point.kind == kind]
        for i, d in enumerate(res.datasets):
            mine = [r for r in rs if r.point.dataset == d.name]
            colour = f"C{i % 10}"
            for cal, marker in ((False, "o"), (True, "s")):
                sel = [r for r in mine if r.point.calibration == cal]
                if not sel:
                    continue
                x = [r.point.measured * scale for r in sel]
                y = [r.estimate * scale for r in sel]
                label = d.name + (" (calibration)" if cal else "")
                face = "none" if cal else colour
                ax.scatter(x, y, marker=marker, facecolors=face, edgecolors=colour, label=label)
        lo = min(min(r.point.measured, r.estimate) for r in rs) * scale
        hi = max(max(r.point.measured, r.estimate) for r in rs) * scale
        ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
        for f in (1 + GOAL_MAX, 1 / (1 + GOAL_MAX)):
            ax.plot([lo, hi], [lo * f, hi * f], color="gray", lw=0.6, ls="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        unit = "us" if kind == "collective" else "s"
        ax.set_xlabel(f"measured ({unit})")
        ax.set_ylabel(f"estimate ({unit})")
        ax.set_title("iteration time" if kind == "training" else "collective time")
        ax.grid(alpha=0.3, which="both")
        legend_beside(ax, fontsize="small")
    fig.tight_layout()
    fig.savefig(out, bbox_inches="tight")
    plt.close(fig)
    return out


def format_ablations(rows: list[AblationRow]) -> str:
    """The table of ``fred validate --ablations``: per variant, the refitted compute
    parameters and the checked iteration times' errors per dataset and in all."""
    keys = list(rows[0].checked) if rows else []
    head = f"{'variant':<56} {'efficiency':>10} {'factor':>7}  " + "  ".join(
        f"{k[:26]:>26}" for k in keys
    )
    lines = [
        "each fix of the compute model undone alone; geomean / max |error| of the checked "
        "iteration times (the compute parameters refitted on their calibration rows)",
        head,
        "-" * len(head),
    ]
    for r in rows:
        cells = "  ".join(
            f"{f'{s.geomean_abs:.1%} / {s.max_abs:.1%} ({s.n})':>26}" for s in r.checked.values()
        )
        lines.append(
            f"{r.variant:<56} {r.calibration.kernel_efficiency:>10.4f} "
            f"{r.calibration.software_2022_factor:>7.4f}  {cells}"
        )
    return "\n".join(lines)
