"""Bad command lines for every `fred` subcommand: exit 2 (3 for unroutable flows), exactly one
line on stderr, no traceback, no new file, and no hang.

Each example takes a command line that would run, and makes one argument bad: a number
out of its documented bounds, a fraction, an empty or non-numeric string, an unknown name,
an output path that cannot be written. Commands run in-process through ``main(argv)`` inside
a scratch folder; a per-example alarm turns a hang into a failure.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fredfab.hw.params import PARAM_LIMITS
from fredfab.model.switch.flow import Flow
from fredfab.model.switch.router import routable
from fredfab.sim.cli import EXIT_BAD_INPUT, EXIT_UNROUTABLE, main
from fredfab.sim.cli import arguments as A

#: Ports of the switch the unroutable property routes on (about one flow set in ten
#: conflicts on Fred_2(8)).
ROUTE_PORTS = 8
#: Seconds one bad command line may take: bad input is found before any real work.
ALARM_SECONDS = 20

_INTEGER = re.compile(r"\s*[+-]?\d[\d_]*\s*")


def _not_integer() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(["", " ", "abc", "1.5", "1e3", "0x10", "nan", "inf", "4 4", "½"]),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.text(max_size=8),
    ).filter(lambda s: not _INTEGER.fullmatch(s) and "\x00" not in s)


def bad_int(bounds: tuple[int, int]) -> st.SearchStrategy[str]:
    low, high = bounds
    return st.one_of(
        st.integers(max_value=low - 1).map(str),
        st.integers(min_value=high + 1).map(str),
        _not_integer(),
    )


def bad_float(bounds: tuple[float, float]) -> st.SearchStrategy[str]:
    low, high = bounds
    return st.one_of(
        st.floats(max_value=low, exclude_max=True).map(repr),
        st.floats(min_value=high, exclude_min=True).map(repr),
        st.sampled_from(["nan", "inf", "-inf", "", "x", "1,5"]),
    )


def bad_size() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(["", "lots", "-1", "1e999", "nan", "2TiB", "1.5B", "1 MiB x", "64MiBs"]),
        st.floats(min_value=0, max_value=1e6).filter(lambda v: v != int(v)).map(repr),
        st.integers(min_value=A.MAX_SIZE + 1).map(str),
    )


def bad_choice() -> st.SearchStrategy[str]:
    return st.sampled_from(["", "nope", "CLOS", "all-reduce!", "0"])


def bad_flow(ports: int) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(["", ":", "0", "0:", ":0", "a:b", "0:1:2", "3-1:0", "-1:0", "0.5:1"]),
        st.integers(min_value=ports).map(lambda n: f"0:{n}"),
        st.integers(min_value=ports).map(lambda n: f"0-{n}:0"),
        st.text(max_size=10).filter(lambda s: not re.fullmatch(r"[\d,\- ]+:[\d,\- ]+", s)),
    )


def bad_file(suffix: str) -> st.SearchStrategy[str]:
    """File outputs that cannot be written (``file`` is a regular file, ``dir`` a folder)."""
    return st.sampled_from([f"file/x{suffix}", f"file/a/b{suffix}", "dir", f"file/../dir/{suffix}"])


def bad_folder() -> st.SearchStrategy[str]:
    return st.sampled_from(["file", "file/x", "file/x/y"])


def bad_plot() -> st.SearchStrategy[str]:
    return st.one_of(bad_file(".png"), st.sampled_from(["x.txt", "plot", "dir/x.pdf"]))


TIMING_CARD = st.sampled_from(["missing.json", "file", "dir", "card"])
WORKLOAD = st.sampled_from(["", "gpt-5", "file", "dir", "missing.toml"])
FABRIC = st.sampled_from(["", "nope", "file", "dir", "missing.toml"])
#: Fabric specs the fabric RTL refuses: not a fabric, a mesh, malformed trees, a file
#: whose switch_m (2) disagrees with the --m given (3).
FABRIC_SPEC = st.sampled_from(
    ["", "nope", "file", "dir", "missing.toml", "mesh-5x4", "tree:2y2", "tree:", "tree:1x2x"]
)
STRATEGY = st.sampled_from(["", "x", "MP2-DP5-PP4", "MP3-DP7-PP1", "MP0-DP20-PP1", "DP-1"])

TRAINING = {
    "--microbatches": bad_int(A.MICROBATCHES),
    "--samples-per-replica": bad_int(A.SAMPLES_PER_REPLICA),
    "--accumulation": bad_int(A.ACCUMULATION),
    "--chunks": bad_int(A.CHUNKS),
    "--zero-stage": bad_int((0, 2)),
    "--execution": bad_choice(),
    "--recompute": bad_choice(),
    "--pipeline": bad_choice(),
    "--placement": st.sampled_from(["", "mp-dp", "mp-mp-dp", "x"]),
    "--efficiency": st.one_of(
        st.floats(max_value=0).map(repr),
        st.floats(min_value=1, exclude_min=True).map(repr),
        st.sampled_from(["nan", "inf", "", "x"]),
    ),
    "--hbm-GB": st.one_of(
        st.floats(max_value=0).map(repr), st.sampled_from(["nan", "inf", "1e300", "", "x"])
    ),
    "--timing-card": TIMING_CARD,
    "--workload": WORKLOAD,
    # The shipped workloads are TOML: any clock is refused for them, like a bad one.
    "--astra-clock-GHz": st.one_of(bad_float(A.ASTRA_CLOCK_GHZ), st.sampled_from(["1", "2.5"])),
}

SWITCH = {
    "--ports": bad_int(PARAM_LIMITS["ports"]),
    "--m": bad_int(PARAM_LIMITS["m"]),
    "--lanes": bad_int(PARAM_LIMITS["lanes"]),
    "--slots": bad_int(PARAM_LIMITS["slots"]),
    "--regs-per-stage": bad_int(PARAM_LIMITS["regs_per_stage"]),
    "--adder-stages": bad_int(PARAM_LIMITS["adder_stages"]),
    "--word-width": bad_int(PARAM_LIMITS["word_width"]),
    "--dtype": st.sampled_from(["", "fp64", "BF16", "int4"]),
    "--arch": bad_choice(),
}

#: Per command: a command line that would run, and the bad values of each of its options.
#: Options with output paths run without --no-plot, so the path is really used.
COMMANDS: dict[str, tuple[list[str], dict[str, st.SearchStrategy[str]]]] = {
    "route": (
        ["route", "--ports=4", "--flow=0:1"],
        {
            "--ports": bad_int(A.ROUTE_PORTS),
            "--m": bad_int(A.ROUTE_M),
            "--word-width": bad_int(A.WORD_WIDTH),
            "--flow": bad_flow(4),
            "--arch": bad_choice(),
            "--emit-config": st.one_of(bad_file(".hex"), bad_file(".json")),
        },
    ),
    "generate": (["generate", "--ports=4", "--out=out"], {**SWITCH, "--out": bad_folder()}),
    # A whole fabric: the fabric, its links, and switch parameters no fabric switch takes.
    "generate-fabric": (
        ["generate", "--fabric=tree:2x2", "--lanes=1", "--dtype=int16", "--out=out"],
        {
            "--fabric": FABRIC_SPEC,
            "--link-delay": bad_int((0, 16)),
            "--m": bad_int(PARAM_LIMITS["m"]),
            "--lanes": bad_int(PARAM_LIMITS["lanes"]),
            "--dtype": st.sampled_from(["", "fp64", "BF16"]),
            "--arch": bad_choice(),
            "--ports": st.integers(2, 64).map(str),  # the fabric gives the ports
            "--packet": st.just(""),
            "--out": bad_folder(),
        },
    ),
    "cosim-fabric": (
        ["cosim", "--fabric=tree:2x2", "--op=all-reduce", "--lanes=1", "--root=out"],
        {
            "--fabric": FABRIC_SPEC,
            "--link-delay": bad_int((0, 16)),
            "--flits": bad_int((1, 4096)),
            "--strategy": st.sampled_from(["", "x", "MP4-DP2", "MP0-DP4"]),
            "--op": bad_choice(),
            "--m": bad_int(PARAM_LIMITS["m"]),
            "--root": bad_folder(),
        },
    ),
    "cosim": (
        ["cosim", "--ports=4", "--root=out"],
        {
            **SWITCH,
            "--root": bad_folder(),
            "--sim": bad_choice(),
            "--phases": bad_int(A.COSIM_PHASES),
            "--packets": bad_int(A.COSIM_PACKETS),
            "--seed": bad_int(A.SEED),
            "--flows": bad_flow(4),
            "--scenario": bad_choice(),
            "--idle": bad_choice(),
            "--stall": bad_choice(),
        },
    ),
    "collective": (
        ["collective", "--fabric=mesh", "--size=1MiB"],
        {
            "--size": bad_size(),
            "--chunks": bad_int(A.CHUNKS),
            "--group": st.one_of(
                st.sampled_from(["", "3", "0", "3,3", "0,,1", "a", "0-40", "20", "0-99999999999"]),
                st.integers(min_value=20).map(lambda n: f"0,{n}"),
            ),
            "--root": st.one_of(st.integers().map(str), _not_integer()),
            "--op": bad_choice(),
            "--fabric": FABRIC,
            "--resolution-ns": bad_float(A.RESOLUTION_NS),
            "--timing-card": TIMING_CARD,
            "--sharing": bad_choice(),
            "--engine": bad_choice(),
            "--on-conflict": bad_choice(),
        },
    ),
    "phases": (
        ["phases", "--fabric=mesh", "--strategy=MP2-DP5-PP2", "--size=1MiB", "--output=p.svg"],
        {
            "--strategy": STRATEGY,
            "--size": bad_size(),
            "--mp-size": bad_size(),
            "--dp-size": bad_size(),
            "--pp-size": bad_size(),
            "--chunks": bad_int(A.CHUNKS),
            "--fabric": FABRIC,
            "--timing-card": TIMING_CARD,
            "--output": bad_plot(),
            "--format": bad_choice(),
        },
    ),
    "estimate": (
        ["estimate", "--workload=resnet-152", "--fabric=mesh"],
        {**TRAINING, "--fabric": FABRIC, "--strategy": STRATEGY},
    ),
    "compare": (
        ["compare", "--workload=resnet-152", "--fabric=mesh", "--output=c.svg"],
        {**TRAINING, "--fabric": FABRIC, "--strategy": STRATEGY, "--output": bad_plot()},
    ),
    "sweep": (
        ["sweep", "--workload=resnet-152", "--fabric=mesh", "--processes=1", "--output=s.svg"],
        {
            **TRAINING,
            "--fabric": FABRIC,
            "--processes": bad_int(A.JOBS),
            "--scheduler": st.sampled_from(["tcp://127.0.0.1:1", "garbage", "tcp://:8786"]),
            "--output": bad_plot(),
        },
    ),
    "sensitivity": (
        [
            "sensitivity",
            "--workload=resnet-152",
            "--fabric=mesh",
            "--vary=efficiency",
            "--values=0.4,0.5",
            "--output=s.svg",
        ],
        {
            **TRAINING,
            "--fabric": FABRIC,
            "--strategy": STRATEGY,
            "--vary": bad_choice(),
            # Efficiency values: out of 0.01..1, not numbers, empty items, too many.
            "--values": st.one_of(
                st.sampled_from(["", ",", "0.5,,0.6", "x", "nan", "inf", "1e999", "0,0.5"]),
                bad_float((0.01, 1.0)),
                st.just(",".join(["0.5"] * (A.MAX_SENSITIVITY_VALUES + 1))),
            ),
            "--output": bad_plot(),
        },
    ),
    "cost": (
        ["cost", "--ports=4", "--out=out"],
        {
            "--ports": st.one_of(
                st.sampled_from(["", "1", "65", "4,,8", "x", "4-9999999999", "8-4"]),
                st.integers(min_value=PARAM_LIMITS["ports"][1] + 1).map(str),
            ),
            "--arch": st.sampled_from(["", ",", "foo", "clos,foo", "CLOS"]),
            "--m": bad_int(PARAM_LIMITS["m"]),
            "--lanes": bad_int(PARAM_LIMITS["lanes"]),
            "--dtype": st.sampled_from(["", "fp64"]),
            "--adder-stages": st.one_of(
                st.sampled_from(["", ",", "0,,2", "x", "3-1", "0-99999999999", "-1"]),
                st.integers(min_value=PARAM_LIMITS["adder_stages"][1] + 1).map(str),
            ),
            "--jobs": bad_int(A.JOBS),
            "--seed": bad_int(A.SEED),
            "--out": bad_folder(),
        },
    ),
}


class Hang(BaseException):
    """Raised by the alarm; a BaseException, so no handler in the command can swallow it."""


@contextmanager
def alarm(seconds: int, argv: list[str]):
    def ring(signum, frame):
        raise Hang(f"fred {' '.join(argv)}: no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture
def scratch(tmp_path, monkeypatch) -> Path:
    """A working folder with a regular file ``file``, a folder ``dir``, a ``card`` that is
    not a timing card, and a regular file ``build``, so the default outputs (build/...)
    cannot be written."""
    (tmp_path / "file").write_text("not TOML, not JSON\n")
    (tmp_path / "build").write_text("a file where the build folder would be\n")
    (tmp_path / "dir").mkdir()
    (tmp_path / "card").write_text("{}\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_bad(argv: list[str], scratch: Path, capsys) -> tuple[int, str, str]:
    before = _tree(scratch)
    with alarm(ALARM_SECONDS, argv):
        code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert err.count("\n") == 1 and err.endswith("\n"), f"{argv}: stderr {err!r}"
    assert err.startswith("fred"), err
    assert _tree(scratch) == before, f"{argv} left {_tree(scratch) - before}"
    return code, out, err


@pytest.mark.parametrize("command", list(COMMANDS))
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_one_bad_argument_is_one_line_and_exit_2(command, data, scratch, capsys):
    base, bad = COMMANDS[command]
    option = data.draw(st.sampled_from(sorted(bad)), label="option")
    value = data.draw(bad[option], label="value")
    # The bad value replaces the option's good one, if the command line has one; a flag
    # (value "") is given bare.
    argv = [a for a in base if not a.startswith(f"{option}=")]
    argv.append(f"{option}={value}" if value or option != "--packet" else option)
    code, _, err = run_bad(argv, scratch, capsys)
    assert code == EXIT_BAD_INPUT, f"{argv}: exit {code}, {err!r}"


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["route"],
        ["route", "--ports=4", "--flow=0:1", "--frob"],
        ["route", "--ports=4", "--flow=0:1", "stray"],
        ["collective", "--fabric=mesh"],
        ["generate", "--ports"],
        ["collective", "--fabric=mesh", "--engine=packet", "--size=1GiB"],
        # Default outputs under build/, which is a file here.
        ["generate", "--ports=4"],
        ["cosim", "--ports=4", "--root=out", "--timing-card"],
        ["phases", "--fabric=mesh", "--strategy=MP2-DP5-PP2", "--size=1MiB"],
        ["compare", "--workload=resnet-152", "--fabric=mesh"],
        ["sweep", "--workload=resnet-152", "--fabric=mesh", "-j", "1"],
        ["sensitivity", "--workload=resnet-152", "--fabric=mesh"],
        # A ResNet has no sequence length to vary.
        ["sensitivity", "--workload=resnet-152", "--vary=seq", "--no-plot"],
        ["sensitivity", "--workload=transformer-17b", "--vary=samples", "--values=0.5"],
        ["cost", "--ports=4"],
    ],
)
def test_bad_command_lines_are_one_line(argv, scratch, capsys):
    code, _, err = run_bad(argv, scratch, capsys)
    assert code == EXIT_BAD_INPUT
    assert "error: " in err and "usage:" not in err


@pytest.mark.parametrize(
    "argv, extra",
    [
        (["route", "--ports=4", "--flow=0:1", "--frob"], "--frob"),
        (["route", "--ports=4", "stray", "--flow=0:1"], "stray"),
        (["sensitivity", "--workload=gpt3-175b", "-j", "2"], "-j 2"),  # -j is sweep's
    ],
)
def test_an_unknown_argument_is_blamed_on_its_command(argv, extra, scratch, capsys):
    _, _, err = run_bad(argv, scratch, capsys)
    assert err == f"fred {argv[0]}: error: unrecognized arguments: {extra}\n"


def test_an_unknown_argument_before_the_command_is_freds_own(scratch, capsys):
    _, _, err = run_bad(["--frob", "route", "--ports=4", "--flow=0:1"], scratch, capsys)
    assert err == "fred: error: unrecognized arguments: --frob\n"


@st.composite
def flow_sets(draw, ports: int) -> list[str]:
    """Up to ``ports`` flows over disjoint ports (each port to one flow or none), and sometimes
    one more flow that reuses a port, which makes the set malformed."""
    n = draw(st.integers(1, ports))
    side = st.lists(st.integers(-1, n - 1), min_size=ports, max_size=ports)
    ins, outs = draw(side), draw(side)
    flows = [
        Flow([p for p in range(ports) if ins[p] == f], [p for p in range(ports) if outs[p] == f])
        for f in range(n)
        if f in ins and f in outs
    ]
    if not flows or draw(st.integers(0, 9)) == 0:
        flows.append(Flow([draw(st.integers(0, ports - 1))], [draw(st.integers(0, ports - 1))]))
    return [str(f) for f in flows]


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(flows=flow_sets(ROUTE_PORTS))
def test_unroutable_is_exit_3_with_the_conflict_in_json(flows, scratch, capsys):
    """On Fred_2(8): a malformed flow set exits 2, an unroutable one 3 with a JSON answer
    naming a subset of the flows that still conflicts; a routable one exits 0."""
    argv = ["route", f"--ports={ROUTE_PORTS}", "--m=2", "--json", *(f"--flow={f}" for f in flows)]
    parsed = [Flow.parse(f) for f in flows]
    try:
        ok = routable(parsed, ROUTE_PORTS, 2)
    except ValueError:  # flows share a port
        ok = None
    event("routable" if ok else "malformed" if ok is None else "unroutable")
    if ok:
        with alarm(ALARM_SECONDS, argv):
            assert main(argv) == 0
        capsys.readouterr()
        return
    code, out, _ = run_bad(argv, scratch, capsys)
    if ok is None:
        assert code == EXIT_BAD_INPUT and out == ""
        return
    assert code == EXIT_UNROUTABLE
    answer = json.loads(out)
    named = answer["conflicting_flows"]
    assert answer["error"] == "unroutable" and set(named) <= {str(f) for f in parsed}
    assert not routable([Flow.parse(f) for f in named], ROUTE_PORTS, 2)


def _fred(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("fred")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "fredfab.sim.cli"]
    return subprocess.run(
        [*cmd, *argv], cwd=cwd, capture_output=True, text=True, timeout=120, env=os.environ
    )


def test_installed_command_exit_statuses(scratch):
    """The console script: the same one line and exit 2, and exit 3 with JSON on stdout."""
    r = _fred("route", "--ports", "100000", "--flow", "0:1", cwd=scratch)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == "fred route: error: argument --ports/-P: 100000 is out of range 2..256\n"
    triangle = ["--flow", "1:0,2", "--flow", "2:1", "--flow", "3:3"]
    r = _fred("route", "-P", "4", "--m", "2", *triangle, "--json", cwd=scratch)
    assert r.returncode == 3 and r.stderr.count("\n") == 1
    assert json.loads(r.stdout)["conflicting_flows"] == ["1:0,2", "2:1", "3:3"]
    assert _tree(scratch) == {"file", "dir", "card", "build"}


#: Input files with something wrong inside, and the command that reads each.
BAD_FILES = {
    "net.yml": ("topology: [Ring]\nnpus_count: [4]\nbandwidth: [fast]\nlatency: [1]\n", "fabric"),
    "bad.yml": ("topology: [Ring\n", "fabric"),
    "fab.toml": ('schema = "fred-fabric/1"\nname = "x"\n[tree]\nradix = [4, "5"]\n', "fabric"),
    "wl.toml": ('schema = "fred-workload/1"\nname = "x"\n', "workload"),
    "wl.txt": ("HYBRID_TRANSFORMER model_parallel_NPU_group: 2\n1\nattn -1 x\n", "workload"),
    "card.json": ('{"schema": "fred-switch-timing/2"}\n', "timing-card"),
    "nojson.json": ("{\n", "timing-card"),
}


@pytest.mark.parametrize("name", list(BAD_FILES))
def test_a_bad_input_file_is_one_line_naming_it(name, scratch, capsys):
    text, option = BAD_FILES[name]
    (scratch / name).write_text(text)
    argv = {
        "fabric": ["collective", f"--fabric={name}", "--size=1MiB"],
        "workload": ["estimate", f"--workload={name}", "--fabric=mesh"],
        "timing-card": ["estimate", "--workload=resnet-152", f"--timing-card={name}"],
    }[option]
    code, _, err = run_bad(argv, scratch, capsys)
    assert code == EXIT_BAD_INPUT and name in err, err


#: Where a text file belongs, a file that is not UTF-8 text (the head of an ELF binary), and
#: the command that reads it (write_trace makes the Chakra job for --comm-groups).
BINARY = b"\x7fELF\x02\x01\x01\x00\xcf\xfa\xed\xfe\x00\x00"
BINARY_READERS = {
    "fabric.toml": ["collective", "--fabric=fabric.toml", "--size=1MiB"],
    "network.yml": ["collective", "--fabric=network.yml", "--size=1MiB"],
    "workload.toml": ["estimate", "--workload=workload.toml", "--fabric=mesh"],
    "card.json": ["estimate", "--workload=resnet-152", "--timing-card=card.json"],
    "system.json": ["collective", "--fabric=fred-d", "--size=1MiB", "--system=system.json"],
    "groups.json": ["estimate", "--workload=job", "--comm-groups=groups.json"],
    "switches.toml": ["generate", "--fabric=switches.toml"],
    "data.toml": ["validate", "--data=data.toml", "--no-plot"],
}


@pytest.mark.parametrize("name", list(BINARY_READERS))
def test_a_binary_file_where_text_belongs_is_one_line_naming_it(name, scratch, capsys):
    from fredfab.model.chakra import write_trace
    from fredfab.model.chakra.trace import TraceNode

    write_trace(scratch / "job", [[TraceNode(0, "c", "COMP", duration=1e-3)]] * 2)
    (scratch / name).write_bytes(BINARY)
    code, _, err = run_bad(BINARY_READERS[name], scratch, capsys)
    assert code == EXIT_BAD_INPUT and name in err and "not UTF-8 text" in err, err


@pytest.mark.parametrize(
    "argv, message",
    [
        # The value as typed and its bytes in full (it said "is 1024 bytes, not a whole
        # number of bytes").
        (
            ["collective", "--size=1.0000001KiB"],
            "size '1.0000001KiB' is 1024.0001024 bytes, not a whole number of bytes",
        ),
        # The value and the bound in full (it said "value 1e+06 is out of range 1..1e+06").
        (
            ["sensitivity", "--workload=resnet-152", "--values=1000001", "--no-plot"],
            "value 1000001 is out of range 1..1000000",
        ),
        # A group is of NPUs, not ports; a repeat is a repeat however short the group.
        (["collective", "--group=0-25", "--size=1MiB"], "--group: range 0-25 goes beyond NPU 19"),
        (["collective", "--group=a", "--size=1MiB"], "--group: 'a' is not an NPU or range"),
        (["collective", "--group=0,0", "--size=1MiB"], "--group 0,0: names an NPU twice"),
        (["collective", "--group=3", "--size=1MiB"], "a collective needs at least 2 NPUs"),
        (["route", "-P", "4", "--flow=a:1"], "'a' is not a port or range"),
    ],
)
def test_a_refused_value_is_named_as_given(argv, message, scratch, capsys):
    code, _, err = run_bad(argv, scratch, capsys)
    assert code == EXIT_BAD_INPUT and message in err


@pytest.mark.parametrize(
    "argv, message",
    [
        # Fabric options on a single switch used to be ignored (the cosim ones after the
        # whole build of its standard scenarios).
        (["generate", "--ports=4", "--link-delay=0"], "--link-delay applies to --fabric"),
        (["cosim", "--ports=4", "--op", "all-reduce"], "--op applies to --fabric"),
        (["cosim", "--ports=4", "--packet", "--strategy", "MP2-DP2-PP1"], "--strategy applies"),
        (["cosim", "--ports=4", "--link-delay=2"], "--link-delay applies to --fabric"),
        (["cosim", "--ports=4", "--check"], "--check applies to --fabric"),
        (["cosim", "--ports=4", "--flits=16"], "--flits applies to --fabric"),
        # Options whose defaults hid whether they were given (they were ignored).
        (["cosim", "--ports=4", "--idle=none"], "--idle applies to --flows or --fabric"),
        (["cosim", "--ports=4", "--packet", "--stall=none"], "--stall does not apply to --packet"),
        (["cosim", "--ports=4", "--arch=xbar", "--m=3"], "--m applies to --arch clos"),
        (["generate", "--fabric=fred-d", "--arch=xbar", "--m=3"], "--m applies to --arch clos"),
        (["route", "-P", "4", "--arch=xbar", "--m=3", "--flow=0:1"], "--m applies to --arch clos"),
        # The flow engine's options with another engine (its times came out unchanged).
        (
            ["collective", "--size=1MiB", "--engine=packet", "--sharing=proportional"],
            "--sharing is the flow engine's: not with --engine packet",
        ),
        (
            ["collective", "--size=1MiB", "--network-model=congestion-aware", "--resolution-ns=20"],
            "--resolution-ns is the flow engine's: not with --network-model",
        ),
        # One worker: no phase (it printed an empty table and exit 0).
        (
            ["phases", "--strategy=MP1-DP1-PP1", "--size=1MiB", "--no-plot"],
            "--strategy MP1-DP1-PP1: one worker has no MP, DP or PP phase to time",
        ),
        # The varied setting's own option (its value was dropped in silence).
        (
            ["sensitivity", "--workload=resnet-152", "--vary=efficiency", "--efficiency=0.5"],
            "--vary efficiency sets --efficiency itself",
        ),
        (
            ["sensitivity", "--workload=resnet-152", "--vary=samples", "--samples-per-replica=8"],
            "--vary samples sets --samples-per-replica itself",
        ),
    ],
)
def test_an_option_without_what_it_belongs_to_is_refused(argv, message, scratch, capsys):
    code, _, err = run_bad(argv, scratch, capsys)
    assert code == EXIT_BAD_INPUT and message in err
    assert (scratch / "build").is_file()  # nothing was built (build/ is a file here)


def test_options_left_out_take_their_defaults_where_they_apply():
    """--idle/--stall and --m default to None so that "given" can be told from "left out";
    where they apply and are left out, the run takes the documented defaults (no build)."""
    from fredfab.model import defaults
    from fredfab.sim.cli import build_parser
    from fredfab.sim.cli.cosim import DEFAULT_PATTERN, idle_and_stall
    from fredfab.sim.cli.fabric_spec import fabric_params_from

    parse = build_parser(["cosim"]).parse_args
    assert idle_and_stall(parse(["cosim", "-P", "4", "--flows", "0-3:0-3"])) == (
        DEFAULT_PATTERN,
        DEFAULT_PATTERN,
    )
    given = parse(["cosim", "-P", "4", "--flows", "0-3:0-3", "--idle", "none", "--stall", "stalls"])
    assert idle_and_stall(given) == ("none", "stalls")
    xbar = fabric_params_from(parse(["cosim", "--fabric", "fred-d", "--arch", "xbar"]))
    assert {xbar.switch_params(s).m for s in xbar.wiring.switches} == {defaults.M}
    clos = fabric_params_from(parse(["cosim", "--fabric", "fred-d"]))
    assert clos.switch_m == clos.fabric.switch_m
