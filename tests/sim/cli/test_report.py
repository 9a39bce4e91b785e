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
