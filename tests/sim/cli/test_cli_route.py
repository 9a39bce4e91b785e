"""`fred route` as a user runs it: output, JSON, and one-line errors with exit status 2."""

import json

from fredfab.model.switch.config import Configuration
from fredfab.sim.cli import main


def test_route_table(capsys):
    assert main(["route", "--ports", "5", "--m", "2", "--flow", "0-4:0-4"]) == 0
    out = capsys.readouterr().out
    assert "Fred_2(5): 5 stages, 18 uSwitches" in out
    assert "(((0, 1), (2, 3)), 4)" in out
    assert "demux" in out and "mux" in out


def test_route_json_round_trips(capsys):
    assert main(["route", "-P", "8", "--flow", "0-3:4-7", "--flow", "4:0-3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    config = Configuration.from_json(json.dumps({k: v for k, v in data.items() if k != "trees"}))
    assert [str(f) for f in config.flows] == ["0-3:4-7", "4:0-3"]
    assert data["trees"]["4:0-3"] == 4


TRIANGLE = ["route", "-P", "4", "--m", "2", "--flow", "1:0,2", "--flow", "2:1", "--flow", "3:3"]


def test_conflict_is_one_line_and_exit_3(capsys):
    rc = main(TRIANGLE)
    out, err = capsys.readouterr()
    assert rc == 3 and err.count("\n") == 1 and out == ""
    assert err.startswith("fred route: error: flows 1:0,2, 2:1, 3:3 cannot run concurrently")


def test_conflict_with_json_names_the_conflicting_flows(capsys):
    """On Fred_2(6) the flow 4,5:4,5 routes beside the others, so it is not named."""
    argv = ["route", "-P", "6", "--m", "2", "--flow", "4,5:4,5", *TRIANGLE[5:], "--json"]
    assert main(argv) == 3
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["error"] == "unroutable" and (data["ports"], data["m"]) == (6, 2)
    assert data["conflicting_flows"] == ["1:0,2", "2:1", "3:3"]
    assert err.count("\n") == 1


def test_bad_input_is_one_line_and_nonzero(capsys):
    for argv, message in [
        (["route", "-P", "4", "--flow", "0:9"], "output port 9 out of range 0..3"),
        (["route", "-P", "4", "--flow", "0-1"], "expected IPS:OPS"),
        (["route", "-P", "4", "--m", "1", "--flow", "0:0"], "--m: 1 is out of range 2..4"),
        (["route", "-P", "4", "--flow", "0-99999999999:0"], "range 0-99999999999 goes beyond"),
        (["route", "-P", "4", "--flow", "0:1", "--flow", "0:2"], "share input port 0"),
    ]:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1


def test_route_on_the_crossbar(capsys):
    """The triangle that conflicts on Fred_2(4) routes on the crossbar."""
    argv = [
        "route",
        "-P",
        "4",
        "--arch",
        "xbar",
        "--flow",
        "1:0,2",
        "--flow",
        "2:1",
        "--flow",
        "3:3",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("xbar(4):") and "1:0,2" in out
