"""nextpnr's JSON report read into an FpgaReport (fredfab.sim.verify.fpga). A real place and
route of the smallest switches runs in tests/sim/cli/test_cost_fpga.py."""

import pytest

from fredfab.sim.verify.fpga import DEVICE, FpgaError, overfull, parse_report


def _report(fmax: dict, comb_used: int = 10) -> dict:
    return {
        "fmax": {k: {"achieved": v, "constraint": 100} for k, v in fmax.items()},
        "utilization": {
            "TRELLIS_COMB": {"available": 100, "used": comb_used},
            "TRELLIS_FF": {"available": 100, "used": 7},
            "DP16KD": {"available": 4, "used": 1},
        },
    }


def test_the_slowest_clock_is_the_fmax():
    r = parse_report(_report({"clk": 80.0, "cfg_clk": 55.5}), seed=3, carry=2)
    assert r.fmax_mhz == 55.5
    assert (r.luts, r.ffs, r.bram, r.dsp, r.carry, r.lut_capacity) == (10, 7, 1, 0, 2, 100)
    assert r.seed == 3 and r.device == DEVICE.name


@pytest.mark.parametrize(
    "data",
    [{}, {"fmax": {}}, _report({}), {"fmax": {"clk": {"achieved": 1}}, "utilization": {}}],
    ids=["empty", "no-utilization", "no-clock", "no-comb"],
)
def test_reports_without_a_clock_or_logic_are_errors(data):
    with pytest.raises(FpgaError):
        parse_report(data, seed=1, carry=0)


LOG = """\
Info: Device utilisation:
Info: \t          TRELLIS_IO:       0/    365     0%
Info: \t              DP16KD:     {bram}/    208    {pct}%
Info: \t        TRELLIS_COMB:  {comb}/  83640   {pct}%
Info: Placed 0 cells based on constraints.
ERROR: Failed to expand region (0, 0) |_> (125, 94) of {comb} TRELLIS_COMBs
"""


def test_an_overfull_device_is_named_by_its_cell_types():
    assert overfull(LOG.format(bram=300, comb=91000, pct=109)) == [
        "300 DP16KD of 208",
        "91,000 TRELLIS_COMB of 83,640",
    ]
    assert overfull(LOG.format(bram=0, comb=83640, pct=100)) == []
