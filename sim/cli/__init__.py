"""The `fred` command line.

Each subcommand lives in its own module under fredfab.sim.cli and exposes
``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``. Errors a user can
fix (bad parameters, unroutable flows, malformed files) are raised as ``UserError`` or
ValueError and printed as one line on stderr with exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

#: Subcommand modules, in the order ``fred --help`` lists them.
COMMANDS = (
    "route",
    "generate",
    "cosim",
    "collective",
    "phases",
    "estimate",
    "compare",
    "sweep",
    "cost",
)


class UserError(Exception):
    """An error caused by the user's input; printed as one line, exit status 2."""


def _command_modules():
    for name in COMMANDS:
        yield importlib.import_module(f"fredfab.sim.cli.{name}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fred",
        description="FRED wafer-scale fabric: route flows, generate and co-simulate switch RTL, "
        "and estimate training performance.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _command_modules():
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except (UserError, ValueError) as exc:
        print(f"fred {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # Output piped into `head` and the like: stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
