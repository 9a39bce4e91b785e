import json

from fredfab.model.system.units import GIB
from fredfab.sim.cli import main

NETWORK = """\
topology: [ Ring ]
npus_count: [ 8 ]
bandwidth: [ 50.0 ]
latency: [ 500.0 ]
"""


def test_collective_runs_an_astra_sim_network_file(tmp_path, capsys):
    p = tmp_path / "ring8.yml"
    p.write_text(NETWORK)
    assert main(["collective", "--fabric", str(p), "--size", "64MiB", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["fabric"] == "ring8" and row["group_size"] == 8
    assert row["algorithm"].startswith("dims-")
    # Two-way ring of 50 GiB/s links: each link carries 2 * 7/8 * 64 MiB / 2; 14 ring
    # steps of 500 ns latency add about 1%.
    bound = 7 / 8 * 2**26 / (50 * GIB)
    assert bound <= row["time_s"] <= bound * 1.02


def test_a_bad_network_file_is_one_line_and_exit_2(tmp_path, capsys):
    p = tmp_path / "bad.yml"
    p.write_text(NETWORK.replace("Ring", "Torus"))
    assert main(["collective", "--fabric", str(p), "--size", "1MiB"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fred ") and "\n" not in err and "'topology'[0]" in err


def test_the_table_names_each_fabrics_group_when_they_differ(tmp_path, capsys):
    p = tmp_path / "a-ring-of-eight-npus.yml"  # a name longer than the fabric column
    p.write_text(NETWORK)
    argv = ["collective", "--fabric", "mesh", "--fabric", str(p), "--size", "1MiB"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "all-reduce of 1 MiB over 20 NPUs on mesh-5x4, 8 NPUs on a-ring-of-eight-npus"
    )
    rows = [ln for ln in lines if ln.startswith(("mesh-5x4 ", "a-ring-of-eight-npus "))]
    assert len(rows) == 2
    # The columns line up: the algorithm starts at the same place on every row.
    algs = [r.split()[1] for r in rows]
    assert {rows[i].index(algs[i]) for i in range(2)} == {lines[1].index("algorithm")}
