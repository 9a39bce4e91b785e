"""--npu NAME|FILE on the training commands."""

import json

import pytest

from fredfab.model.training.npu_files import load_npu
from fredfab.sim.cli import main

ARGV = ["estimate", "--workload", "resnet-152", "--fabric", "mesh", "--json"]


def _estimate(capsys, *extra):
    assert main([*ARGV, *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_npu_by_name_is_reported_and_slows_compute(capsys):
    wafer = _estimate(capsys)
    a100 = _estimate(capsys, "--npu", "a100")
    assert wafer["npu"]["name"] == "wafer" and a100["npu"]["name"] == "a100"
    assert a100["npu"]["peak_TFLOPS"] == pytest.approx(312)
    assert a100["breakdown_s"]["compute"] > 2 * wafer["breakdown_s"]["compute"]


def test_npu_file_and_efficiency_override(tmp_path, capsys):
    f = tmp_path / "slow.toml"
    f.write_text(
        'schema = "fred-npu/1"\nname = "slow"\npeak_TFLOPS = 100\nhbm_GBps = 1000\n'
        'hbm_GB = 80\nkernel_efficiency = 0.5\n[sources]\npeak_TFLOPS = "a"\nhbm_GBps = "b"\n'
        'hbm_GB = "c"\nkernel_efficiency = "d"\n'
    )
    d = _estimate(capsys, "--npu", str(f), "--efficiency", "0.25")
    assert d["npu"]["name"] == "slow" and d["npu"]["kernel_efficiency"] == 0.25
    assert load_npu(f).efficiency == 0.5


@pytest.mark.parametrize("command", ["estimate", "compare", "sweep", "sensitivity"])
def test_unknown_npu_is_bad_input(command, capsys):
    argv = [command, "--workload", "resnet-152", "--npu", "v100"]
    assert main(argv + (["--no-plot"] if command != "estimate" else [])) == 2
    assert "NPU 'v100' is neither a shipped NPU" in capsys.readouterr().err
