"""The `fred` command line.

Each subcommand lives in its own module under fredfab.sim.cli (named in ``COMMANDS``, with
its one-line help) and exposes ``add_arguments(parser)`` and ``run(args) -> int``. Only the
module of the command being run is imported, and each imports what it uses when it uses it,
so ``fred --help`` loads no model and a command starts in the time its own work needs.

Exit statuses (README, "The `fred` command"): errors caused by the user's input (UserError,
and the models' InputError and its subclasses: FabricError, WorkloadError, FlowError, ...;
files that cannot be read or written; a missing tool or extra) are printed as one line on
stderr with status 2; flows that cannot be routed together exit 3 (with ``--json``, a JSON
answer on stdout names a minimal conflicting subset); an interrupt (Ctrl-C) prints one line
and exits 130 wherever it arrives; any other exception is a bug of the project: its
traceback is printed and the status is 70.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from fredfab.model.errors import InputError

#: Subcommand modules and their one-line help, in the order ``fred --help`` lists them.
COMMANDS = {
    "route": "route concurrent flows (IPS:OPS) on a Fred_m(P) switch and print its configuration",
    "generate": "generate the Verilog of a FRED switch (or a whole fabric) and its JSON manifest",
    "cosim": "co-simulate a generated switch (cocotb on Icarus or Verilator) against the golden "
    "model",
    "collective": "time a collective (All-Reduce, ...) over an NPU group on a wafer fabric",
    "phases": "per-NPU bandwidth of the MP, DP and PP phases of a 3D-parallel strategy, per fabric",
    "estimate": "estimate one training iteration (compute + exposed communication) on a fabric",
    "export": "write a workload's training iteration as Chakra traces (PREFIX.RANK.et, one per "
    "NPU)",
    "compare": "compare a training workload or a Chakra trace on the mesh and FRED-A..D (time, "
    "breakdown, speedup in samples/s)",
    "sweep": "evaluate every MP x DP x PP strategy on every fabric; best per fabric and spread",
    "sensitivity": "speedup over the mesh and exposed-communication reduction as NPU compute (or "
    "another setting) varies; where a workload turns communication-bound",
    "validate": "compare the training and collective estimates with measured systems (Megatron-LM, "
    "NCCL-tests): errors on the calibration and checked points, the goal",
    "cost": "synthesise switches with Yosys and compare area, adders, muxes, flops, depth, "
    "latency; or place and route them on an FPGA (--fpga)",
}

#: Exit statuses (README, "The `fred` command"). 70 is sysexits.h's EX_SOFTWARE (an internal
#: error), 130 the shell's status of a command ended by SIGINT.
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_UNROUTABLE = 0, 1, 2, 3
EXIT_BUG, EXIT_INTERRUPTED = 70, 130

#: The distribution whose metadata ``--version`` reads.
DISTRIBUTION = "fred-fabric"

EPILOG = (
    "exit status: 0 success; 1 a check failed (cosim mismatch); 2 bad input (one line on "
    "stderr); 3 flows that cannot be routed together (with --json, a JSON answer on stdout); "
    "70 an internal error (a bug: traceback on stderr); 130 interrupted"
)


class UserError(InputError):
    """An error caused by the user's input, found by the command line itself; printed as one
    line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line, ``fred route: error: ...``, exit status 2."""

    #: The commands' own parsers, by name (on the top parser only).
    commands: dict[str, argparse.ArgumentParser]

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {_one_line(message)}\n")

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        # argparse reports a command's unknown arguments from the top parser ("fred:
        # error: ..."); the command's own parser names the command, as its other errors do.
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            words = list(sys.argv[1:] if args is None else args)
            command = getattr(ns, "command", None)
            owner = self  # an argument given before the command word is fred's own
            if command in words and extra[0] in words[words.index(command) + 1 :]:
                owner = getattr(self, "commands", {}).get(command, self)
            owner.error(f"unrecognized arguments: {' '.join(extra)}")
        return ns


class _Version(argparse.Action):
    """``--version``: the installed distribution's version, read only when asked for."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(f"{parser.prog} ({DISTRIBUTION}) {version()}")
        parser.exit(EXIT_OK)


def version() -> str:
    """The version of the installed distribution, from its metadata."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed_version

    try:
        return installed_version(DISTRIBUTION)
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def build_parser(commands: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of `fred`, with the arguments of ``commands`` (default: every command).
    The other commands are listed by name and help only, so their modules are not imported."""
    parser = _Parser(
        prog="fred",
        description="FRED wafer-scale fabric: route flows, generate and co-simulate switch RTL, "
        "and estimate training performance.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    wanted = COMMANDS if commands is None else commands
    parser.commands = {}
    for name, text in COMMANDS.items():
        p = parser.commands[name] = sub.add_parser(name, help=text, description=text, epilog=EPILOG)
        if name in wanted:
            module = importlib.import_module(f"fredfab.sim.cli.{name}")
            module.add_arguments(p)
            p.set_defaults(_run=module.run)
    return parser


def command_in(argv: Sequence[str]) -> str | None:
    """The command an argument list names (its first word that is not an option: `fred`'s
    own options take no value), or None."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = command_in(argv)
    try:
        return _main(argv, command)
    except KeyboardInterrupt:
        # Wherever Ctrl-C arrives (importing, parsing, working): one line, no traceback.
        print(f"fred{f' {command}' if command else ''}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _main(argv: list[str], command: str | None) -> int:
    args = argparse.Namespace()
    try:
        parser = build_parser([command] if command else [])
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help, --version (0) or a usage error (2, printed)
            return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
        from fredfab.sim import progress

        # Long steps say what they do on stderr (not with --json: fredfab.sim.progress).
        with progress.to_stderr(f"fred {args.command}", on=not getattr(args, "json", False)):
            return int(args._run(args) or 0)
    except BrokenPipeError:
        # Output piped into `head` and the like: stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except InputError as exc:
        if _unroutable(exc):
            if getattr(args, "json", False):
                import json

                print(json.dumps(_unroutable_json(exc), indent=1))
            return _fail(command, str(exc), EXIT_UNROUTABLE)
        return _fail(command, str(exc))
    except OSError as exc:  # a file the user named cannot be read or written
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(command, f"{where}{exc.strerror or exc}")
    except ModuleNotFoundError as exc:
        from fredfab.sim.cli.extras import missing_extra_message

        message = missing_extra_message(exc)
        if message is None:  # a module of the project itself, or an undeclared dependency
            return _bug(command)
        return _fail(command, message)
    except Exception as exc:
        if _tool_missing(exc):
            return _fail(command, str(exc))
        return _bug(command)


def _fail(command: str | None, message: str, code: int = EXIT_BAD_INPUT) -> int:
    print(f"fred{f' {command}' if command else ''}: error: {_one_line(message)}", file=sys.stderr)
    return code


def _bug(command: str | None) -> int:
    """An exception no check raised for the user's input: a bug. Its traceback, and how to
    report it."""
    import traceback

    traceback.print_exc()
    where = f"fred {command}" if command else "fred"
    print(
        f"{where}: internal error (a bug in {DISTRIBUTION} {version()}, not in your input): "
        "please report it with the command line and the traceback above",
        file=sys.stderr,
    )
    return EXIT_BUG


def _one_line(message: str) -> str:
    return " ".join(str(message).split())


def _unroutable(exc: Exception) -> bool:
    # Only a loaded module can have raised its exception: no import for the check.
    for module, name in (
        ("fredfab.model.switch.router", "RouteConflict"),
        ("fredfab.sim.engines.switch_check", "CollectiveConflict"),
    ):
        loaded = sys.modules.get(module)
        if loaded is not None and isinstance(exc, getattr(loaded, name)):
            return True
    return False


def _unroutable_json(exc: Exception) -> dict:
    from fredfab.model.switch.router import RouteConflict

    out: dict = {"error": "unroutable", "message": _one_line(str(exc))}
    if isinstance(exc, RouteConflict):
        out.update(ports=exc.ports, m=exc.m, conflicting_flows=[str(f) for f in exc.flows])
    return out


def _tool_missing(exc: Exception) -> bool:
    toolchain = sys.modules.get("fredfab.sim.verify.toolchain")
    return toolchain is not None and isinstance(exc, toolchain.ToolMissing)
