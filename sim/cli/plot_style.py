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


#: One colour per shipped fabric, the same in every plot whatever fabrics it shows and in
#: which order: the mesh grey; FRED-A/B (1.5 TB/s per L1 switch) blues, FRED-C/D (12 TB/s)
#: oranges, the in-switch variants (B, D) the darker. Other fabrics take OTHER_FABRICS in
#: the order they appear.
FABRIC_COLOURS = {
    "mesh-5x4": "dimgray",
    "fred-a": "#9ecae1",
    "fred-b": "#3182bd",
    "fred-c": "#fdae6b",
    "fred-d": "#e6550d",
}
OTHER_FABRICS = ("tab:green", "tab:purple", "tab:pink", "tab:olive", "tab:cyan", "tab:brown")


def fabric_colours(fabrics: list[str]) -> dict[str, str]:
    """A colour for each of ``fabrics`` (FABRIC_COLOURS, then OTHER_FABRICS in turn)."""
    others = iter(OTHER_FABRICS * (1 + len(fabrics) // len(OTHER_FABRICS)))
    return {f: FABRIC_COLOURS.get(f) or next(others) for f in fabrics}


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
