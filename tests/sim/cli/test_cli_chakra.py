"""`fred estimate --workload PREFIX` on Chakra traces: report, JSON, timeline, CSV, errors."""

import csv
import json

import pytest

from fredfab.model.chakra import write_trace
from fredfab.model.chakra.trace import TraceNode
from fredfab.sim.cli import main

MiB = 2**20


@pytest.fixture
def job(tmp_path):
    c0 = TraceNode(0, "fwd", "COMP", duration=1e-3)
    ar = TraceNode(1, "grad", "COMM_COLL", (0,), 1, comm_type=0, size=64 * MiB, pg_name="0")
    c1 = TraceNode(2, "opt", "COMP", (1,), 1, duration=1e-4)
    write_trace(tmp_path / "job", [[c0, ar, c1]] * 20, {"0": list(range(20))})
    return tmp_path / "job"


def test_estimate_a_trace_with_its_outputs(job, tmp_path, capsys):
    tl, nodes = tmp_path / "t.json", tmp_path / "n.csv"
    argv = ["estimate", "--workload", str(job), "--fabric", "fred-d", "--json"]
    assert main([*argv, "--timeline", str(tl), "--nodes-csv", str(nodes)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["ranks"] == 20 and d["nodes"] == 60
    br = d["breakdown_s"]
    assert br["compute"] == pytest.approx(1.1e-3) and br["all-reduce"] > 0
    assert sum(br.values()) == pytest.approx(d["time_s"])
    # FRED-D reduces in its switches: 20 x 64 MiB into the L1s, 5 x 64 MiB into L2.
    assert sum(d["switch_reduction_bytes"].values()) == pytest.approx(25 * 64 * MiB)
    assert all(0 < lk["utilisation"] <= 1 for lk in d["links"])
    events = json.loads(tl.read_text())["traceEvents"]
    npu = [e for e in events if e["ph"] == "X" and e["pid"] == 1]
    link = [e for e in events if e["ph"] == "X" and e["pid"] == 2]
    assert len(npu) == 60 and len({e["tid"] for e in npu}) == 20
    assert {e["tid"] for e in link} == {lk["link"] for lk in d["links"]}
    rows = list(csv.DictReader(nodes.read_text().splitlines()))
    assert len(rows) == 60 and rows[1]["kind"] == "ALL_REDUCE"
    assert float(rows[1]["start_s"]) == pytest.approx(1e-3)
    assert float(rows[2]["end_s"]) == pytest.approx(d["time_s"])


def test_placement_moves_ranks(tmp_path, capsys):
    send = TraceNode(0, "s", "COMM_SEND", size=MiB, src=0, dst=1)
    recv = TraceNode(0, "r", "COMM_RECV", size=MiB, src=0, dst=1)
    write_trace(tmp_path / "pp", [[send], [recv]])
    argv = ["estimate", "--workload", str(tmp_path / "pp"), "--fabric", "mesh-5x4", "--json"]
    assert main(argv) == 0
    near = json.loads(capsys.readouterr().out)
    assert [(lk["src"], lk["dst"]) for lk in near["links"]] == [("npu0", "npu1")]
    assert main([*argv, "--npu-map", "0,19"]) == 0
    far = json.loads(capsys.readouterr().out)
    assert len(far["links"]) == 3 and far["time_s"] > near["time_s"]  # npu0 -> 9 -> 10 -> 19
    assert main([*argv, "--npu-map", "0"]) == 2
    assert "placement names 1 NPUs for 2 ranks" in capsys.readouterr().err


def test_errors_are_one_line(job, tmp_path, capsys):
    assert main(["estimate", "--workload", str(job), "--strategy", "MP2-DP10-PP1"]) == 2
    assert "--strategy does not apply to a Chakra trace" in capsys.readouterr().err
    (tmp_path / "job.comm_groups.json").write_text('{"0": [0, 1]}')
    assert main(["estimate", "--workload", str(job)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fred estimate: error: ") and "\n" not in err
    assert "job.2.et: node 1 'grad': pg_name: rank 2 is not a member of group '0'" in err
    assert main(["estimate", "--workload", "resnet-152", "--nodes-csv", "x.csv"]) == 2
    assert "--nodes-csv applies to a Chakra trace" in capsys.readouterr().err


def test_sweep_and_sensitivity_say_why_they_take_no_trace(job, capsys):
    # sensitivity said the trace was "neither a shipped workload nor TOML".
    assert main(["sweep", "--workload", str(job), "--no-plot"]) == 2
    assert "a Chakra trace fixes its strategy" in capsys.readouterr().err
    assert main(["sensitivity", "--workload", str(job), "--no-plot"]) == 2
    assert "a Chakra trace fixes its compute times and strategy" in capsys.readouterr().err


def test_compare_a_trace_across_fabrics(job, capsys):
    argv = ["compare", "--workload", str(job), "--fabric", "mesh-5x4", "--fabric", "fred-d"]
    assert main([*argv, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    mesh, fred = d["fabrics"]
    assert (mesh["fabric"], fred["fabric"], mesh["speedup"]) == ("mesh-5x4", "fred-d", 1.0)
    # The same compute; FRED-D's in-switch All-Reduce exposes less.
    assert mesh["breakdown_s"]["compute"] == pytest.approx(fred["breakdown_s"]["compute"])
    assert fred["speedup"] == pytest.approx(mesh["time_s"] / fred["time_s"]) and fred["speedup"] > 1
    assert main([*argv, "--microbatches", "2"]) == 2
    assert "--microbatches does not apply to a Chakra trace" in capsys.readouterr().err
