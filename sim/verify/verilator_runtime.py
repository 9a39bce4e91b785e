"""Verilator's run-time library, compiled once and shared by every Verilator build.

Every build of a design links the same run-time objects (``verilated.o``,
``verilated_vpi.o``, ``verilated_threads.o``, ...: ``VM_GLOBAL_FAST``/``VM_GLOBAL_SLOW`` of the
generated ``Vtop_classes.mk``), compiled from the wheel's include folder with flags that do
not depend on the design. Compiling them is a quarter of a small design's C++ (about 7 s of
CPU of the P = 8 circuit switch's 30 s). After the first build they are copied from a cache
instead: ``seed`` before ``make`` puts the cached objects into the build folder, newer than
``Vtop.mk`` so make keeps them; ``keep`` after a good ``make`` stores the ones it compiled.

The cache is keyed by the exact commands make would run for those objects (``make -n``:
compiler, flags, include folders, defines such as ``VM_TRACE``) and the compiler's and
Verilator's versions, so a build with other flags (waves, another wheel) gets its own entry.
cocotb's harness (``verilator.o``) is not shared: it includes the design's ``Vtop.h``.
Entries are written under a temporary name and renamed, so concurrent builds (pytest-xdist
workers, two commands) never read half of one.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from fredfab.sim.verify.toolchain import verilator_cxx

#: The cache folder's name under a co-simulation build root (fredfab.sim.verify.cosim).
RUNTIME_FOLDER = "verilator-runtime"


def runtime_objects(build_dir: Path) -> list[str]:
    """The run-time library's object files of the build in ``build_dir`` (after verilating)."""
    text = (Path(build_dir) / "Vtop_classes.mk").read_text()
    names: list[str] = []
    for block in re.finditer(r"^VM_GLOBAL_(?:FAST|SLOW) \+= \\\n((?:[ \t]+\S+ \\\n)*)", text, re.M):
        names += [line.strip(" \t\\") for line in block.group(1).splitlines()]
    return [f"{n}.o" for n in names if n]


def compile_units(build_dir: Path) -> int:
    """The compiler runs of a full make in ``build_dir``: every generated class, the
    run-time library, cocotb's harness and the two precompiled headers (fast and slow)."""
    text = (Path(build_dir) / "Vtop_classes.mk").read_text()
    lists = re.finditer(r"^VM_\w+ \+= \\\n((?:[ \t]+\S+ \\\n)*)", text, re.M)
    return sum(len(block.group(1).splitlines()) for block in lists) + 1 + 2


#: A compiler run in make's output: an object (``-c``) or a precompiled header.
_COMPILE = re.compile(r"\s-c\s|c\+\+-header")


def count_compile(line: str, bar) -> None:
    """Advance ``bar`` (a fredfab.sim.progress Counter) when make's ``line`` starts a
    compiler run."""
    if _COMPILE.search(line):
        bar.advance()


def runtime_key(
    build_dir: Path, objects: list[str], make_args: list[str], env: dict[str, str], versions: str
) -> str:
    """Digest of what the objects are compiled from: make's commands for them, the compiler's
    version and ``versions`` (Verilator's, cocotb's)."""
    commands = subprocess.run(
        ["make", "-n", "-B", "-f", "Vtop.mk", *make_args, *objects],
        cwd=build_dir,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    compiler = subprocess.run(
        [verilator_cxx(), "--version"], env=env, capture_output=True, text=True
    ).stdout
    return hashlib.sha256("\0".join([commands, compiler, versions]).encode()).hexdigest()[:16]


def seed(build_dir: Path, entry: Path, objects: list[str]) -> bool:
    """Copy the cached objects of ``entry`` into ``build_dir``, dated now (after ``Vtop.mk``,
    so make keeps them); False if the entry does not hold them all."""
    if not all((entry / name).is_file() for name in objects):
        return False
    for name in objects:
        target = Path(build_dir) / name
        shutil.copyfile(entry / name, target)
        os.utime(target)
    return True


def keep(build_dir: Path, entry: Path, objects: list[str]) -> None:
    """Store the objects make compiled in ``build_dir`` as the cache ``entry`` (unless another
    build stored it first)."""
    if entry.is_dir() or not all((Path(build_dir) / n).is_file() for n in objects):
        return
    entry.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{entry.name}.", dir=entry.parent))
    try:
        for name in objects:
            shutil.copyfile(Path(build_dir) / name, staging / name)
        staging.rename(entry)
    except OSError:  # another build renamed its copy into place first
        pass
    finally:
        shutil.rmtree(staging, ignore_errors=True)
