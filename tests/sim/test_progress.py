"""Progress reports of long steps (fredfab.sim.progress): silent unless a command asks,
one plain line per step, bars only on a terminal, nothing with --json."""

from __future__ import annotations

import io
import time
from concurrent.futures import ThreadPoolExecutor

from fredfab.sim import progress
from fredfab.sim.cli import main


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_silent_unless_turned_on(capsys):
    progress.step("nobody asked")
    with progress.counter("things", 3) as c:
        c.advance()
    assert capsys.readouterr() == ("", "")
    with progress.to_stderr("fred x", on=False):
        progress.step("a --json run")
    assert capsys.readouterr() == ("", "")


def test_steps_are_lines_and_bars_only_on_a_terminal():
    log = io.StringIO()
    with progress.to_stderr("fred x", stream=log):
        progress.step("building")
        with progress.counter("files", 3) as c:
            c.advance()
    assert log.getvalue() == "fred x: building\n"
    tty = Terminal()
    with progress.to_stderr("fred x", stream=tty):
        progress.step("building")
        with progress.counter("files", 3) as c:
            c.advance(2, "b.cpp")
        progress.step("running")
    text = tty.getvalue()
    assert text.startswith("fred x: building\n")
    assert "\rfred x: files [################........] 2/3 b.cpp" in text
    # The bar's line ends before the next step.
    assert text.endswith("\nfred x: running\n")


def test_watching_reads_every_line_of_a_growing_file(tmp_path):
    log, seen = tmp_path / "sim.log", []
    with progress.to_stderr("fred x", stream=io.StringIO()):
        with progress.watching(log, seen.append, every=0.01):
            with open(log, "w") as f:
                for k in range(5):
                    f.write(f"line {k}\n")
                    f.flush()
                    time.sleep(0.02)
                f.write("last\n")
    assert seen == [f"line {k}" for k in range(5)] + ["last"]


def test_pool_map_keeps_the_job_order_and_reports_each_job():
    log = io.StringIO()
    with progress.to_stderr("fred cost", stream=log), ThreadPoolExecutor(2) as pool:
        got = progress.pool_map(pool, 2, lambda s: time.sleep(s) or s, [0.05, 0.0], ["a", "b"], "x")
    assert got == [0.05, 0.0]
    lines = log.getvalue().splitlines()
    assert lines[0] == "fred cost: x: 2 variant(s), 2 at a time: a, b"
    assert sorted(line.split(" (")[0] for line in lines[1:]) == [
        "fred cost: done a",
        "fred cost: done b",
    ]
    assert lines[-1].endswith("(2 of 2, 0 s)")


def test_commands_say_what_they_do_on_stderr_but_not_with_json(tmp_path, capsys):
    args = ["generate", "--ports", "2", "--m", "2", "--lanes", "1", "--dtype", "int8"]
    assert main([*args, "-o", str(tmp_path / "a")]) == 0
    out, err = capsys.readouterr()
    assert (
        err == "fred generate: generating the Verilog of fred_clos_p2_m2_l1_int8_r1 "
        "(Amaranth, then Yosys)\n"
    )
    assert "wrote" in out and "generating" not in out
    assert main([*args, "-o", str(tmp_path / "b"), "--json"]) == 0
    assert capsys.readouterr().err == ""
