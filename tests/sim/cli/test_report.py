"""The CLI's tables, plots and units of display (fredfab.sim.cli.report)."""

import pytest

from fredfab.sim.cli.report import (
    LABELS,
    fmt_bytes,
    fmt_time,
    format_compare_table,
    plot_compare,
)
from fredfab.sim.engines.training import DEFAULT_FABRICS, compare


@pytest.mark.parametrize(
    ("n", "text"),
    [(64 * 2**20, "64 MiB"), (1.5 * 2**30, "1.5 GiB"), (2048, "2 KiB"), (512, "512 B")],
)
def test_fmt_bytes(n, text):
    assert fmt_bytes(n) == text


@pytest.mark.parametrize(
    ("t", "text"),
    [(1.023, "1.023 s"), (2.972e-3, "2.972 ms"), (22.43e-6, "22.43 us"), (7e-9, "7 ns")],
)
def test_fmt_time(t, text):
    assert fmt_time(t) == text


def test_compare_table_has_every_fabric_label_and_speedup(tmp_path):
    res = compare("transformer-17b")
    table = format_compare_table(res)
    lines = table.splitlines()
    for f in DEFAULT_FABRICS:
        assert any(line.startswith(f) for line in lines)
    for label in LABELS.values():
        assert label in lines[1]
    assert "speedup" in table and "MP2-DP5-PP2" in table
    # The baseline's row ends with its speedup over itself.
    assert next(line for line in lines if line.startswith(DEFAULT_FABRICS[0])).endswith("1.00x")
    with pytest.raises(ValueError, match=r"\.png or \.svg"):
        plot_compare(res, tmp_path / "compare.pdf")


def test_a_fabric_keeps_its_colour_whatever_the_order():
    from fredfab.sim.cli.plot_style import FABRIC_COLOURS, fabric_colours

    one = fabric_colours(["mesh-5x4", "fred-a", "fred-d", "mine"])
    other = fabric_colours(["fred-d", "yours", "mine", "fred-a", "mesh-5x4"])
    for f in ("mesh-5x4", "fred-a", "fred-d"):
        assert one[f] == other[f] == FABRIC_COLOURS[f]
    assert len(set(other.values())) == len(other)  # distinct, user fabrics included
    many = fabric_colours([f"f{k}" for k in range(20)])
    assert len(many) == 20


def _legends(monkeypatch, module) -> list[list[str]]:
    """The labels of every legend ``module`` draws beside its axes, in order."""
    seen: list[list[str]] = []
    real = module.legend_beside

    def record(ax, **kwargs):
        real(ax, **kwargs)
        seen.append([t.get_text() for t in ax.get_legend().get_texts()])

    monkeypatch.setattr(module, "legend_beside", record)
    return seen


def test_the_compare_legend_reads_like_the_stack(tmp_path, monkeypatch):
    """Top entry = top segment: the bars stack compute first, so compute is listed last."""
    import fredfab.sim.cli.report as report

    seen = _legends(monkeypatch, report)
    plot_compare(compare("transformer-17b", fabrics=["mesh", "fred-d"]), tmp_path / "c.svg")
    (labels,) = seen
    assert labels[-1] == "compute" and labels[-2] == "bubble"
    assert labels == [LABELS[c] for c in LABELS if LABELS[c] in labels][::-1]


def test_the_phases_legend_is_beside_the_bars(tmp_path, monkeypatch):
    import fredfab.sim.cli.plot_style as style
    from fredfab.sim.cli import main

    called = []
    real = style.legend_beside
    monkeypatch.setattr(style, "legend_beside", lambda ax, **kw: called.append(1) or real(ax, **kw))
    argv = ["phases", "--fabric", "mesh", "--fabric", "fred-d", "--strategy", "MP2-DP5-PP2"]
    assert main([*argv, "--size", "1MiB", "-o", str(tmp_path / "p.svg")]) == 0
    assert called == [1] and (tmp_path / "p.svg").is_file()
