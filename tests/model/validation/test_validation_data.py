"""The validation data files: every measured point has a source and a precision, the
calibration subset is named, and malformed files are refused with a message."""

import math
from pathlib import Path

import pytest

from fredfab.model.validation.metrics import GOAL_MIN_BYTES, error, summarise
from fredfab.model.validation.suite import (
    FLOP_COUNTS,
    ValidationDataError,
    dataset_from_dict,
    load_suite,
    shipped_datasets,
)

DATA = Path(shipped_datasets()[0]).parent


def test_shipped_datasets_cover_the_issue():
    suite = {d.name: d for d in load_suite()}
    sc21 = suite["megatron-sc21-table1"]
    # SC'21 Table 1 has ten rows, 1.7B to 1T.
    assert [p.name for p in sc21.points][0] == "1.7B" and len(sc21.points) == 10
    nccl = suite["nccl-a100-allreduce"]
    sizes = [p.run["size"] for p in nccl.points if p.run["nodes"] == 1]
    assert min(sizes) == 8 and max(sizes) >= 2**32
    assert any(p.run["nodes"] > 1 for p in nccl.points)
    assert "megatron-korthikanti-2022" in suite


def test_every_point_says_where_it_comes_from_and_how_precise_it_is():
    for d in load_suite():
        assert d.source
        for p in d.points:
            assert p.source and p.measured > 0
            assert 0 < p.precision < 0.05, p.key
            assert p.calibration == bool(p.fits)


def test_the_calibration_subset_leaves_checked_points_in_the_goal():
    for d in load_suite():
        checked = [p for p in d.points if not p.calibration]
        assert checked, f"{d.name} has no checked point"
    nccl = next(d for d in load_suite() if d.kind == "collective")
    in_goal = [p for p in nccl.points if not p.calibration and p.run["size"] >= GOAL_MIN_BYTES]
    assert len(in_goal) >= 10


def test_sc21_flop_count_gives_back_the_published_1t_row():
    # SC'21 Table 1, 1T row: 163 TFLOP/s per GPU on 3,072 GPUs, batch 3072; the paper's
    # eq. 3 and that rate give an iteration of about 2 minutes.
    run = {"batch": 3072, "seq": 2048, "layers": 128, "hidden": 25600, "vocab": 51200}
    seconds = FLOP_COUNTS["megatron-sc21"](run) / (3072 * 163e12)
    assert 100 < seconds < 140


def _minimal(**point):
    base = {
        "name": "p",
        "calibration": False,
        "source": "somewhere",
        "size": 1024,
        "ranks": 8,
        "time_us": 20.5,
    }
    base.update(point)
    base = {k: v for k, v in base.items() if v is not None}
    return {
        "schema": "fred-validation/1",
        "name": "t",
        "kind": "collective",
        "source": "test",
        "op": "all-reduce",
        "system": {"fabric": "fabrics/dgx-a100.toml", "gpus_per_node": 8},
        "points": [base],
    }


def test_a_minimal_collective_file_loads_with_its_precision():
    d = dataset_from_dict(_minimal(), DATA / "t.toml")
    (p,) = d.points
    assert p.measured == pytest.approx(20.5e-6)
    assert p.precision == pytest.approx(0.05 / 20.5)


@pytest.mark.parametrize(
    "point, message",
    [
        ({"calibration": True}, "names what it 'fits'"),
        ({"fits": "fixed_cost"}, "calibration points only"),
        # A name that is no parameter (accepted before, and shown as what the point fits).
        ({"calibration": True, "fits": "foo"}, "'fits' names 'foo', not a calibrated parameter"),
        ({"calibration": True, "fits": "fixed_cost ll_fractoin"}, "'ll_fractoin'"),
        ({"source": None}, "source"),
        ({"time_us": -1.0}, "time_us"),
        ({"ranks": 1}, "ranks"),
        ({"bogus": 1}, "bogus"),
    ],
)
def test_malformed_points_are_refused(point, message):
    with pytest.raises(ValidationDataError, match=message):
        dataset_from_dict(_minimal(**point), DATA / "t.toml")


def test_a_missing_fabric_file_and_a_wrong_schema_are_refused():
    data = _minimal()
    data["system"]["fabric"] = "fabrics/none.toml"
    with pytest.raises(ValidationDataError, match="does not exist"):
        dataset_from_dict(data, DATA / "t.toml")
    data = _minimal()
    data["schema"] = "fred-validation/0"
    with pytest.raises(ValidationDataError, match="schema"):
        dataset_from_dict(data, DATA / "t.toml")


def test_duplicate_point_names_are_refused():
    data = _minimal()
    data["points"].append(dict(data["points"][0]))
    with pytest.raises(ValidationDataError, match="used twice"):
        dataset_from_dict(data, DATA / "t.toml")


def test_summary_floors_errors_at_the_reading_precision():
    assert error(110.0, 100.0) == pytest.approx(0.10)
    s = summarise([0.0, 0.04, -0.16], [0.01, 0.01, 0.01])
    assert s.geomean_abs == pytest.approx(
        math.exp((math.log(0.01) + math.log(0.04) + math.log(0.16)) / 3)
    )
    assert s.max_abs == pytest.approx(0.16) and s.mean_abs == pytest.approx(0.20 / 3)
    assert s.meets_goal
    assert not summarise([0.0, 0.21], [0.01, 0.01]).meets_goal
    assert not summarise([], []).meets_goal
