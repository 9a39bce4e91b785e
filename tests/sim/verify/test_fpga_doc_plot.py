"""The plot of docs/architecture-cost.md's pipelined-adder table reads every row of it."""

from pathlib import Path

import pytest

from fredfab.sim.verify.fpga_doc_plot import HEADER, main, table_rows

DOC = Path(__file__).resolve().parents[3] / "docs" / "architecture-cost.md"


def test_the_doc_table_gives_both_architectures_at_p4_and_p8_from_depth_0():
    rows = table_rows(DOC.read_text())
    switches = {(r["arch"], r["ports"], r["dtype"]) for r in rows}
    assert {("clos", 4, "bf16"), ("xbar", 4, "bf16"), ("clos", 8, "bf16"), ("xbar", 8, "bf16")} <= (
        switches
    )
    for s in switches:
        depths = sorted(r["adder_stages"] for r in rows if (r["arch"], r["ports"], r["dtype"]) == s)
        assert depths[0] == 0, s  # every line starts at the combinational adder
        assert len(depths) >= 2, s


def test_a_row_that_does_not_parse_is_an_error_not_a_missing_point():
    row = "| xbar | 4 | bf16 | 0 | 4 | 3,687 | 1,146 | 41.2 | 24.2 ns |"
    good = "\n".join([HEADER, "|---|", row])
    assert table_rows(good)[0] == table_rows(good)[0] | {"luts": 3687, "fmax_mhz": 41.2}
    with pytest.raises(ValueError, match="does not parse"):
        table_rows(good.replace("41.2", "about 41"))
    with pytest.raises(ValueError, match="expected 9 cells"):
        table_rows(good.replace("| 24.2 ns |", "|"))
    with pytest.raises(ValueError, match="twice"):
        table_rows(good + "\n" + row)
    with pytest.raises(ValueError, match="no table"):
        table_rows(row)


def test_main_draws_the_table(tmp_path):
    png = tmp_path / "fpga.png"
    main([str(DOC), str(png)])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
