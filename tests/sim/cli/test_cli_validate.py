"""`fred validate`: table, --json points, the goal, bad input."""

import json
from pathlib import Path

import pytest

from fredfab.model.system import loader
from fredfab.model.validation import suite
from fredfab.sim.cli import main


def test_validate_json_lists_points_with_estimate_measured_calibration_and_source(capsys):
    argv = ["validate", "--dataset", "nccl-a100-allreduce", "--json", "--no-plot"]
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    pts = d["points"]
    assert pts and all(p["dataset"] == "nccl-a100-allreduce" for p in pts)
    for p in pts:
        assert {"estimate", "measured", "calibration", "source"} <= p.keys()
        assert p["error"] == pytest.approx(p["estimate"] / p["measured"] - 1)
        assert p["in_goal"] == (
            not p["calibration"] and p["name"] and p["detail"] is not None and _size(p) >= 2**20
        )
    assert any(p["calibration"] for p in pts) and any(not p["calibration"] for p in pts)
    goal = d["goal"]["collective"]
    assert goal["points"] == sum(p["in_goal"] for p in pts)
    worst = max(abs(p["error"]) for p in pts if p["in_goal"])
    assert goal["max_abs_error"] == pytest.approx(worst)
    assert set(d["calibration"]) >= {"kernel_efficiency", "nvlink_fraction", "fixed_cost_us"}


def _size(p):
    return int(p["name"].split(" B")[0])


def test_the_nccl_curve_meets_the_goal_on_its_checked_sizes(capsys):
    argv = ["validate", "--dataset", "nccl-a100-allreduce", "--json", "--no-plot"]
    assert main(argv) == 0
    goal = json.loads(capsys.readouterr().out)["goal"]["collective"]
    assert goal["points"] == 13
    assert goal["geomean_abs_error"] <= 0.10 and goal["max_abs_error"] <= 0.20


def test_validate_table_and_plot(tmp_path, capsys):
    plot = tmp_path / "v.svg"
    assert main(["validate", "--dataset", "nccl-a100-allreduce", "-o", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "calibration:" in out and "checked:" in out and "goal on the checked points" in out
    assert plot.read_text().lstrip().startswith("<?xml")


def test_validate_unknown_dataset_is_bad_input(capsys):
    assert main(["validate", "--dataset", "nope", "--no-plot"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fred validate: error: dataset(s) nope unknown")


def test_validate_bad_data_file_is_bad_input(tmp_path, capsys):
    f = tmp_path / "bad.toml"
    f.write_text('schema = "fred-validation/1"\nname = "x"\n')
    assert main(["validate", "--data", str(f), "--no-plot"]) == 2
    assert capsys.readouterr().err.startswith("fred validate: error: ")


@pytest.mark.parametrize("flag", ["--fit", "--ablations"])
def test_a_dataset_choice_is_refused_where_every_dataset_is_refitted(flag, capsys):
    assert main(["validate", flag, "--dataset", "nccl-a100-allreduce", "--no-plot"]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"fred validate: error: --dataset does not apply to {flag}, which uses every dataset\n"
    )
    assert main(["validate", flag, "--dataset", "nope", "--no-plot"]) == 2
    assert "dataset(s) nope unknown" in capsys.readouterr().err


def test_fit_and_ablations_are_one_or_the_other(capsys):
    assert main(["validate", "--fit", "--ablations"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def _dataset_with_fabric(tmp_path, fabric: bytes, name: str):
    """The shipped NCCL dataset naming a fabric file ``name`` of these bytes instead."""
    shipped = (suite.DATA_DIR / "nccl-a100-allreduce.toml").read_text()
    assert 'fabric = "fabrics/dgx-a100.toml"' in shipped
    (tmp_path / name).write_bytes(fabric)
    data = tmp_path / "d.toml"
    data.write_text(shipped.replace("fabrics/dgx-a100.toml", name))
    return data


MESH = (loader.DATA_DIR / "mesh-5x4.toml").read_text()  # a valid fabric without [dims]
#: A valid ASTRA-sim network file: a fabric, but not one the validation reads.
ASTRA = Path(__file__).parents[3] / "examples" / "astra-sim" / "ring_fc_switch.yml"


@pytest.mark.parametrize(
    "name, fabric, says",
    [
        ("net.toml", "not = [toml", "not valid TOML"),
        ("net.toml", MESH, "must give [dims] of two dimensions or more"),
        ("net.toml", "\udcff", "not UTF-8 text"),
        ("net.yml", ASTRA.read_text(), "an ASTRA-sim network file; the validation needs a TOML"),
    ],
)
def test_a_dataset_whose_fabric_is_unusable_is_bad_input(tmp_path, capsys, name, fabric, says):
    data = _dataset_with_fabric(tmp_path, fabric.encode("utf-8", "surrogateescape"), name)
    assert main(["validate", "--data", str(data), "--no-plot"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fred validate: error: ") and says in err and err.count("\n") == 1


@pytest.mark.slow
def test_sc21_table1_meets_the_goal_on_its_checked_rows(capsys):
    argv = ["validate", "--dataset", "megatron-sc21-table1", "--json", "--no-plot"]
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    checked = d["datasets"][0]["checked"]
    assert checked["points"] == 9
    assert checked["geomean_abs_error"] <= 0.10 and checked["max_abs_error"] <= 0.20


@pytest.mark.slow
def test_ablations_refit_every_variant_and_the_shipped_model_is_the_best(capsys):
    assert main(["validate", "--ablations", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["ablations"]
    assert len(rows) == 6 and rows[0]["variant"] == "as shipped"
    assert rows[0]["checked"]["all"]["points"] == 12
    shipped = rows[0]["checked"]["all"]["max_abs_error"]
    # Undoing a fix never makes the checked iteration times better.
    assert all(r["checked"]["all"]["max_abs_error"] >= shipped - 1e-9 for r in rows)
