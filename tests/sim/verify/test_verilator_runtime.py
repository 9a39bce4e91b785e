"""Verilator's run-time library compiled once and shared (fredfab.sim.verify.verilator_runtime)."""

from __future__ import annotations

import os

import pytest

from fredfab.hw.params import SwitchParams
from fredfab.sim.verify import cosim
from fredfab.sim.verify import verilator_runtime as rt

CLASSES_MK = """\
VM_C11 = 1
VM_CLASSES_FAST += \\
  Vtop \\
  Vtop___024root__0 \\

VM_CLASSES_SLOW += \\
  Vtop___024root__Slow \\

VM_SUPPORT_FAST += \\
  Vtop__Dpi \\

VM_SUPPORT_SLOW += \\
  Vtop__Syms__Slow \\

VM_GLOBAL_FAST += \\
  verilated \\
  verilated_vpi \\

VM_GLOBAL_SLOW += \\

"""


def test_runtime_objects_and_compile_units(tmp_path):
    (tmp_path / "Vtop_classes.mk").write_text(CLASSES_MK)
    assert rt.runtime_objects(tmp_path) == ["verilated.o", "verilated_vpi.o"]
    # 5 design files, 2 run-time files, cocotb's harness, 2 precompiled headers.
    assert rt.compile_units(tmp_path) == 10


def test_keep_then_seed(tmp_path):
    build, entry = tmp_path / "build", tmp_path / "cache" / "k1"
    build.mkdir()
    objects = ["verilated.o", "verilated_vpi.o"]
    assert not rt.seed(build, entry, objects)
    rt.keep(build, entry, objects)  # make failed: nothing to keep
    assert not entry.exists()
    for name in objects:
        (build / name).write_bytes(name.encode())
    rt.keep(build, entry, objects)
    assert sorted(p.name for p in entry.iterdir()) == objects
    (build / "verilated.o").write_bytes(b"another build")
    rt.keep(build, entry, objects)  # the first stored entry stays
    assert (entry / "verilated.o").read_bytes() == b"verilated.o"
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "Vtop.mk").write_text("")
    os.utime(entry / "verilated.o", (1, 1))
    assert rt.seed(fresh, entry, objects)
    assert (fresh / "verilated_vpi.o").read_bytes() == b"verilated_vpi.o"
    # Newer than the makefile, so make keeps them.
    assert (fresh / "verilated.o").stat().st_mtime >= (fresh / "Vtop.mk").stat().st_mtime


@pytest.mark.needs("verilator")
def test_builds_share_the_runtime_objects():
    """A Verilator build either compiled the run-time library and stored it, or took it
    from the cache: either way its objects are the cache's, byte for byte."""
    root = cosim.shared_build_root()
    b = cosim.build(SwitchParams(ports=4, m=2, lanes=2, dtype="int16"), "verilator", root=root)
    objects = rt.runtime_objects(b.build_dir)
    assert "verilated.o" in objects
    entries = [e for e in (root / rt.RUNTIME_FOLDER).iterdir() if not e.name.startswith(".")]
    assert any(
        all((e / n).read_bytes() == (b.build_dir / n).read_bytes() for n in objects)
        for e in entries
    )
