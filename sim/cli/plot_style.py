"""What every plot of the `fred` commands shares: where it may be written, and one colour
per breakdown category, so that a category keeps its colour from plot to plot whichever
categories a workload has."""

from __future__ import annotations

from pathlib import Path

from fredfab.sim.cli import UserError

#: One colour per breakdown category (keys of Estimate.breakdown and of the exposed
#: communication kinds): matplotlib's tab10 palette, assigned once.
CATEGORY_COLOURS = {
    "compute": "tab:blue",
    "bubble": "tab:gray",
    "input": "tab:olive",
    "dp": "tab:orange",
    "mp": "tab:green",
    "pp": "tab:red",
    "weights": "tab:purple",
    "io": "tab:cyan",
}


def plot_file(path: str | Path) -> Path:
    """``path`` as a Path if its suffix names a format we write (PNG or SVG); its folder is
    made."""
    out = Path(path)
    if out.suffix not in (".png", ".svg"):
        raise UserError(f"plot file {out}: use a .png or .svg name")
    out.parent.mkdir(parents=True, exist_ok=True)
    return out


def legend_beside(ax, **kwargs) -> None:
    """The legend to the right of the axes, where it never covers a bar or a line."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **kwargs)
