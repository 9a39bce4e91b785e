"""The `fred` console script (pyproject.toml, [project.scripts]).

A module of its own with nothing to import, so that the script's first import is over in
a moment: a Ctrl-C while the command line module and the command's own modules load
(fredfab.sim.cli.main catches it from then on) prints one line and exits 130, never a
traceback.
"""

from __future__ import annotations

import sys


def main() -> int:
    try:
        from fredfab.sim.cli import main as fred
    except KeyboardInterrupt:
        print("fred: interrupted", file=sys.stderr)
        return 130  # fredfab.sim.cli.EXIT_INTERRUPTED, which this module cannot import yet
    return fred()
