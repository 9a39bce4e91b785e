"""What `fred` says and returns when a command does not simply succeed: the version, input
errors (2), bugs (70, with the traceback), a missing extra (2, naming it), and Ctrl-C (130,
one line, wherever it arrives; the workers of a sweep stop at once)."""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import pytest

import fredfab.sim.cli as cli
from fredfab.model.system.elements import FabricError
from fredfab.sim.cli import EXIT_BAD_INPUT, EXIT_BUG, EXIT_INTERRUPTED, main


def fred_script() -> list[str]:
    script = Path(sys.executable).with_name("fred")
    return [str(script)] if script.exists() else [sys.executable, "-m", "fredfab.sim.cli"]


def test_version_is_the_installed_distributions(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"fred (fred-fabric) {version('fred-fabric')}\n"


def _route_raising(monkeypatch, exc: BaseException) -> None:
    def run(args):
        raise exc

    monkeypatch.setattr(importlib.import_module("fredfab.sim.cli.route"), "run", run)


ROUTE = ["route", "--ports=4", "--flow=0:1"]


def test_an_input_error_is_one_line_and_exit_2(monkeypatch, capsys):
    _route_raising(
        monkeypatch, FabricError("fabric x: link 3 names node 9,\n which does not exist")
    )
    assert main(ROUTE) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err == "fred route: error: fabric x: link 3 names node 9, which does not exist\n"


@pytest.mark.parametrize("exc", [ValueError("internal"), KeyError("k"), AssertionError("a")])
def test_any_other_exception_is_a_bug_with_its_traceback(monkeypatch, capsys, exc):
    _route_raising(monkeypatch, exc)
    assert main(ROUTE) == EXIT_BUG
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert type(exc).__name__ in err
    assert err.splitlines()[-1].startswith("fred route: internal error (a bug in fred-fabric")


def test_a_missing_extra_names_it(monkeypatch, capsys):
    exc = ModuleNotFoundError("No module named 'amaranth'", name="amaranth")
    _route_raising(monkeypatch, exc)
    assert main(ROUTE) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "pip install 'fred-fabric[hw]'" in err


def test_a_missing_module_of_the_project_is_a_bug(monkeypatch, capsys):
    """The installed-package bug of issue 25 (a subpackage missing from the wheel) must show
    as a bug, not as bad input."""
    name = "fredfab.model.packet"
    _route_raising(monkeypatch, ModuleNotFoundError(f"No module named '{name}'", name=name))
    assert main(ROUTE) == EXIT_BUG


@pytest.mark.parametrize("command", ["generate", "cosim", "cost"])
def test_commands_needing_hw_say_which_extra(monkeypatch, capsys, tmp_path, command):
    """Without Amaranth, the commands that build RTL stop before any work with one line."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "amaranth", None)  # find_spec and import both fail
    assert main([command, "--ports=4"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"fred {command}: error: amaranth")
    assert "pip install 'fred-fabric[hw]'" in err
    assert list(tmp_path.iterdir()) == []


def test_plots_without_matplotlib_say_which_extra(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    argv = ["compare", "--workload=resnet-152", "--fabric=mesh"]
    assert main(argv) == EXIT_BAD_INPUT
    assert "pip install 'fred-fabric[plot]'" in capsys.readouterr().err
    assert main([*argv, "--no-plot"]) == 0  # and without a plot it runs


def test_ctrl_c_while_the_command_loads_is_one_line(monkeypatch, capsys):
    def interrupted(name):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli.importlib, "import_module", interrupted)
    assert main(ROUTE) == EXIT_INTERRUPTED
    assert capsys.readouterr().err == "fred route: interrupted\n"


def test_ctrl_c_in_a_command_is_one_line(monkeypatch, capsys):
    _route_raising(monkeypatch, KeyboardInterrupt())
    assert main(ROUTE) == EXIT_INTERRUPTED
    assert capsys.readouterr().err == "fred route: interrupted\n"


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc (Linux)")
def test_ctrl_c_stops_a_sweep_and_its_workers_at_once(tmp_path):
    """As a terminal's Ctrl-C does: SIGINT to the whole process group, workers included,
    while the workers run. Before the fix the pool finished every queued strategy (25 s)."""
    argv = [*fred_script(), "sweep", "--workload=transformer-17b", "--no-plot", "-j", "2"]
    p = subprocess.Popen(
        argv,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # A terminal's process gets Ctrl-C; one started from a background job of a script
        # (nohup, `&`) inherits SIGINT ignored, and the sweep would then run to its end.
        preexec_fn=_default_sigint,
    )
    try:
        deadline = time.monotonic() + 60
        while len(_children(p.pid)) < 2 and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_children(p.pid)) >= 2, "the sweep's workers never started"
        time.sleep(0.5)  # the workers are busy with strategies now
        sent = time.monotonic()
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == EXIT_INTERRUPTED, err
    assert err == "fred sweep: interrupted\n"
    assert took < 5, f"{took:.1f} s to stop"  # about 0.2 s; the margin is for a loaded machine
    with pytest.raises(ProcessLookupError):  # no worker left behind in the group
        os.killpg(p.pid, 0)
