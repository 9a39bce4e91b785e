"""The `fred` command line.

Each subcommand lives in its own module under fredfab.sim.cli and exposes
``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``. Errors a user can
fix (bad parameters, malformed files, paths that cannot be read or written, a missing tool)
are raised as ``UserError``, ValueError or OSError and printed as one line on stderr with
exit status 2; flows that cannot be routed together exit with status 3 (with ``--json``,
a JSON answer on stdout names a minimal conflicting subset).
"""

from __future__ import annotations

import argparse
import importlib
import json
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
    "sensitivity",
    "validate",
    "cost",
)


#: Exit statuses (README, "The `fred` command").
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_UNROUTABLE = 0, 1, 2, 3

EPILOG = (
    "exit status: 0 success; 1 a check failed (cosim mismatch); 2 bad input (one line on "
    "stderr); 3 flows that cannot be routed together (with --json, a JSON answer on stdout)"
)


class UserError(Exception):
    """An error caused by the user's input; printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line, ``fred route: error: ...``, exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {_one_line(message)}\n")


def _command_modules():
    for name in COMMANDS:
        yield importlib.import_module(f"fredfab.sim.cli.{name}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="fred",
        description="FRED wafer-scale fabric: route flows, generate and co-simulate switch RTL, "
        "and estimate training performance.",
        epilog=EPILOG,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _command_modules():
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP, epilog=EPILOG)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2, already printed)
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    try:
        return int(args._run(args) or 0)
    except BrokenPipeError:
        # Output piped into `head` and the like: stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except (UserError, ValueError) as exc:
        if _unroutable(exc):
            if getattr(args, "json", False):
                print(json.dumps(_unroutable_json(exc), indent=1))
            return _fail(args.command, str(exc), EXIT_UNROUTABLE)
        return _fail(args.command, str(exc))
    except OSError as exc:  # a file the user named cannot be read or written
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(args.command, f"{where}{exc.strerror or exc}")
    except RuntimeError as exc:
        if not _tool_missing(exc):
            raise
        return _fail(args.command, str(exc))
    except KeyboardInterrupt:
        return _fail(args.command, "interrupted", 130)


def _fail(command: str, message: str, code: int = EXIT_BAD_INPUT) -> int:
    print(f"fred {command}: error: {_one_line(message)}", file=sys.stderr)
    return code


def _one_line(message: str) -> str:
    return " ".join(str(message).split())


def _unroutable(exc: Exception) -> bool:
    from fredfab.model.switch.router import RouteConflict

    if isinstance(exc, RouteConflict):
        return True
    # Only a loaded module can have raised its exception: no import for the check.
    system = sys.modules.get("fredfab.sim.engines.system")
    return system is not None and isinstance(exc, system.CollectiveConflict)


def _unroutable_json(exc: Exception) -> dict:
    from fredfab.model.switch.router import RouteConflict

    out: dict = {"error": "unroutable", "message": _one_line(str(exc))}
    if isinstance(exc, RouteConflict):
        out.update(ports=exc.ports, m=exc.m, conflicting_flows=[str(f) for f in exc.flows])
    return out


def _tool_missing(exc: Exception) -> bool:
    toolchain = sys.modules.get("fredfab.sim.verify.toolchain")
    return toolchain is not None and isinstance(exc, toolchain.ToolMissing)


if __name__ == "__main__":
    sys.exit(main())
