"""Run one proof: a harness module to RTLIL, a SymbiYosys job, its verdict.

A harness is an Amaranth ``Module`` holding the design under proof and its ``Assert`` /
``Assume`` / ``Cover`` statements. It runs in one clock domain, ``sync``, whose reset is held
low: every proof starts from the design's power-up state (the init values, which equal its
reset values) and sees no reset afterwards.

Modes (SymbiYosys'): ``prove`` is k-induction (a base case of ``depth`` steps and an inductive
step of ``depth`` steps: a pass holds for every cycle, unbounded); ``bmc`` checks the first
``depth`` cycles; ``cover`` looks for a trace of at most ``depth`` cycles reaching each
``Cover``. A verdict is ``pass``, ``fail`` (a counterexample, or a cover never reached) or
``unknown`` (the induction did not close, or the time ran out).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import rtlil
from amaranth.hdl import Assume, Module, ResetSignal

from fredfab.sim.formal.toolchain import default_solver, formal_env, sby_command

MODES = ("prove", "bmc", "cover")
RESULTS = ("pass", "fail", "unknown")
#: Per-proof wall-clock limit (seconds) unless a proof states its own.
DEFAULT_TIMEOUT = 900


class FormalError(RuntimeError):
    """SymbiYosys could not run the job (a tool or harness problem, not a verdict)."""


@dataclass(frozen=True)
class Verdict:
    """What one run of SymbiYosys said."""

    result: str  # pass / fail / unknown
    seconds: float
    workdir: Path
    trace: Path | None  # the counterexample (or, for cover, a trace reaching the covers)
    failed: tuple[str, ...]  # the assertions that failed, or the covers not reached
    log_tail: str

    def explain(self) -> str:
        """Several lines for a person: the verdict, what failed, where the trace is."""
        lines = [f"{self.result} in {self.seconds:.1f} s ({self.workdir})"]
        lines += [f"  {f}" for f in self.failed]
        if self.result == "fail" and self.trace is not None:
            lines.append(f"  counterexample: {self.trace}")
            lines.append(
                f"  open it with a VCD viewer, e.g. `gtkwave {self.trace}` "
                f"(apt-get install gtkwave) or `surfer {self.trace}`"
            )
        return "\n".join(lines)


def harness_module() -> Module:
    """A Module that assumes the ``sync`` reset low in every cycle (see the module docstring).
    The domain itself is the one Amaranth creates at the top, whose clock SymbiYosys drives."""
    m = Module()
    m.d.comb += Assume(~ResetSignal("sync"), "no reset after power-up")
    return m


def sby_script(mode: str, depth: int, solver: str, timeout: int) -> str:
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    if not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be a positive integer, got {depth!r}")
    return "\n".join(
        [
            "[options]",
            f"mode {mode}",
            f"depth {depth}",
            f"timeout {timeout}",
            "",
            "[engines]",
            f"smtbmc {solver}",
            "",
            "[script]",
            "read_rtlil top.il",
            "prep -top top",
            "",
            "[files]",
            "top.il",
            "",
        ]
    )


_DONE = re.compile(r"DONE \((\w+), rc=(\d+)\)")
#: What failed, from SymbiYosys' summary (the base case's failures, not the induction's).
_SUMMARY_FAILED = re.compile(
    r"summary:\s+((?:failed assertion|unreached cover statement) .*)", re.I
)
#: The same from the engine's log, where the summary names nothing.
_FAILED = re.compile(r"(Assert failed in .*|Unreached cover statement .*)")


def run(
    build: Callable[[], Module],
    mode: str,
    depth: int,
    workdir: Path,
    *,
    solver: str | None = None,
    timeout: int = DEFAULT_TIMEOUT,
) -> Verdict:
    """Elaborate ``build()``, run SymbiYosys in ``workdir`` (emptied first), return its verdict."""
    solver = solver or default_solver()
    env = formal_env(solver)
    workdir = Path(workdir)
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    start = time.monotonic()
    text = rtlil.convert(build(), ports=[])
    (workdir / "top.il").write_text(text)
    (workdir / "job.sby").write_text(sby_script(mode, depth, solver, timeout))
    proc = subprocess.run(
        [*sby_command(), "-f", "-d", "run", "job.sby"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.monotonic() - start
    log = proc.stdout + proc.stderr
    (workdir / "sby.log").write_text(log)
    done = _DONE.findall(log)
    status = done[-1][0] if done else "ERROR"
    if status == "ERROR" or status not in ("PASS", "FAIL", "UNKNOWN", "TIMEOUT"):
        tail = "\n".join(log.splitlines()[-25:])
        raise FormalError(f"SymbiYosys did not finish its job in {workdir}:\n{tail}")
    result = {"PASS": "pass", "FAIL": "fail"}.get(status, "unknown")
    messages = check_messages(text)
    found = list(_SUMMARY_FAILED.finditer(log)) or list(_FAILED.finditer(log))
    failed = tuple(dict.fromkeys(_name_check(m.group(1).strip(), messages) for m in found))
    return Verdict(
        result=result,
        seconds=seconds,
        workdir=workdir,
        trace=_trace(workdir / "run", result, mode),
        failed=failed,
        log_tail="\n".join(log.splitlines()[-12:]),
    )


_CHECK_CELL = re.compile(r'cell \$check \$(\d+)\n\s*parameter \\FORMAT "((?:[^"\\]|\\.)*)"')
_WITNESS = re.compile(r"_witness_\.check_(\d+)")


def check_messages(rtlil_text: str) -> dict[str, str]:
    """Cell number -> message of every Assert/Assume/Cover in the RTLIL (its FORMAT)."""
    return {n: msg for n, msg in _CHECK_CELL.findall(rtlil_text)}


def _name_check(line: str, messages: dict[str, str]) -> str:
    """A SymbiYosys failure line with the check's message in front of it."""
    found = _WITNESS.search(line)
    message = messages.get(found.group(1)) if found else None
    return f"{message}: {line}" if message else line


def _trace(rundir: Path, result: str, mode: str) -> Path | None:
    """The VCD SymbiYosys wrote: the counterexample of a failure (the base case's before the
    induction step's), or the first cover trace."""
    names = ["trace.vcd", "trace0.vcd"] if mode == "cover" or result == "fail" else []
    names += ["trace_induct.vcd"] if result == "unknown" else []
    for name in names:
        found = sorted(rundir.glob(f"engine_*/{name}"))
        if found:
            return found[0]
    return None
