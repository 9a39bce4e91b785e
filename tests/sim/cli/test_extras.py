"""The table of extras the commands name (sim/cli/extras.py) agrees with pyproject.toml."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from fredfab.sim.cli.extras import EXTRA_OF_MODULE, PURPOSE

PYPROJECT = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())
EXTRAS = PYPROJECT["project"]["optional-dependencies"]


def _distribution(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9_.-]+", requirement)[0].lower().replace("-", "_")


def test_every_extra_named_exists():
    assert set(EXTRA_OF_MODULE.values()) <= set(EXTRAS)
    assert set(PURPOSE) == set(EXTRA_OF_MODULE.values())


def test_every_package_of_the_optional_extras_is_known():
    """A package added to hw, plot or cluster gets its line here, or a missing one would be
    reported as a bug instead of naming the extra."""
    for extra in PURPOSE:
        for requirement in EXTRAS[extra]:
            name = _distribution(requirement)
            if name.startswith("fred_fabric"):
                continue
            assert EXTRA_OF_MODULE.get(name) == extra, f"{requirement} ({extra})"
