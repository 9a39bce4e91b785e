"""What `pip install` gives works: the sdist and the wheel are built with build isolation, the
wheel built from the sdist is installed into a fresh virtual environment outside the
checkout, and `fred` runs there, first without the optional extras (the commands that need
one say which, in one line, exit 2), then with the ``hw`` extra (generate in both modes, a
short co-simulation on Icarus).

Issue 25: a wheel missed three subpackages and every installed command failed, while the
editable install of the checkout hid it. Marked ``installed``: it runs under CI (the CI
variable set) or with ``--installed-check``, first of all tests so that it overlaps the
rest under xdist; pip and its cache are used as a user's pip would use them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
HW_HINT = "pip install 'fred-fabric[hw]'"
#: Seconds any one step may take: the hw extra's downloads are the slowest (a few minutes
#: on a slow index).
STEP_TIMEOUT = 900

pytestmark = [pytest.mark.installed, pytest.mark.needs("icarus")]


class Steps:
    """Runs the check's commands, each with its wall time, failing with its output."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.seconds: dict[str, float] = {}

    def run(self, name: str, cmd: list[str], cwd: Path, expect: int = 0) -> str:
        t0 = time.perf_counter()
        r = subprocess.run(
            cmd, cwd=cwd, env=self.env, capture_output=True, text=True, timeout=STEP_TIMEOUT
        )
        self.seconds[name] = time.perf_counter() - t0
        assert r.returncode == expect, (
            f"{name}: `{' '.join(cmd)}` exited {r.returncode}, expected {expect}\n"
            f"stdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"
        )
        return r.stdout if expect == 0 else r.stderr


def _copy_checkout(dest: Path) -> None:
    """The files git would ship (tracked and new, not ignored), so the build sees the work
    tree as it is and writes nothing into the checkout (no egg-info, no build/)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        src = REPO / os.fsdecode(name)
        if src.is_file():  # a file deleted but not yet committed is listed too
            (dest / src.relative_to(REPO)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / src.relative_to(REPO))


def _clean_env(venv: Path) -> dict[str, str]:
    """The environment of a user who activated ``venv``: nothing of this test run's Python."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
        and not k.startswith(("PYTEST", "COV_"))
    }
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(venv)
    return env


def test_the_wheel_from_the_sdist_installs_and_runs_outside_the_checkout(tmp_path):
    src, dist, venv, work = (tmp_path / d for d in ("src", "dist", "venv", "work"))
    for d in (src, work):
        d.mkdir()
    _copy_checkout(src)
    steps = Steps(_clean_env(venv))
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]
    fred = str(venv / "bin" / "fred")

    # The sdist, then the wheel from the sdist, each in an isolated build environment.
    steps.run("build", [sys.executable, "-m", "build", "--outdir", str(dist), str(src)], tmp_path)
    (sdist,) = dist.glob("fred_fabric-*.tar.gz")
    (wheel,) = dist.glob("fred_fabric-*.whl")
    assert sdist.name == f"fred_fabric-{VERSION}.tar.gz"

    # A fresh environment outside the checkout; its pip is this one (pip --python).
    steps.run("venv", [sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path)
    steps.run("install", [*pip, "install", "-q", str(wheel)], work)
    where = steps.run(
        "import",
        [str(venv / "bin" / "python"), "-c", "import fredfab.sim.cli as c; print(c.__file__)"],
        work,
    )
    assert Path(where.strip()).is_relative_to(venv), f"imported from {where} (not the wheel)"

    assert steps.run("version", [fred, "--version"], work) == f"fred (fred-fabric) {VERSION}\n"
    out = steps.run("route", [fred, "route", "--ports", "8", "--flow", "0-3:0-3"], work)
    assert out.startswith("Fred_3(8): 5 stages, 29 uSwitches")
    est = [fred, "estimate", "--workload", "transformer-17b", "--fabric", "fred-d"]
    out = steps.run("estimate", est, work)
    assert "time per iteration" in out and "transformer-17b on fred-d" in out

    # Without the hw extra: one line naming it, exit 2, nothing written.
    for command in (
        ["generate", "--ports", "4"],
        ["cosim", "--sim", "icarus", "--ports", "4"],
        ["cost", "--ports", "4"],
    ):
        err = steps.run(f"{command[0]} without hw", [fred, *command], work, expect=2)
        assert err.count("\n") == 1 and err.startswith(f"fred {command[0]}: error: amaranth")
        assert HW_HINT in err, err
    compare = [fred, "compare", "--workload", "resnet-152", "--fabric", "mesh"]
    err = steps.run("compare without plot", compare, work, expect=2)
    assert "pip install 'fred-fabric[plot]'" in err and err.count("\n") == 1
    steps.run("compare --no-plot", [*compare, "--no-plot"], work)
    assert list(work.iterdir()) == []

    # With the hw extra: the switch in both modes, and a short co-simulation on Icarus.
    steps.run("install hw", [*pip, "install", "-q", f"{wheel}[hw]"], work)
    small = ["--ports", "2", "--m", "2", "--lanes", "4", "--dtype", "bf16"]
    steps.run("generate", [fred, "generate", *small, "-o", "v"], work)
    steps.run("generate --packet", [fred, "generate", *small, "--packet", "-o", "v"], work)
    assert sorted(p.name for p in (work / "v").iterdir()) == [
        "fred_clos_p2_m2_l4_bf16_r1.json",
        "fred_clos_p2_m2_l4_bf16_r1.v",
        "fred_clos_p2_m2_l4_bf16_r1_pk8_d4.json",
        "fred_clos_p2_m2_l4_bf16_r1_pk8_d4.v",
    ]
    cosim = [fred, "cosim", "--sim", "icarus", *small, "--scenario", "all_reduce"]
    out = steps.run("cosim", cosim, work)
    assert "ok   all_reduce" in out and "all 1 scenarios passed" in out, out
    print("installed-package check, seconds per step:", steps.seconds)
