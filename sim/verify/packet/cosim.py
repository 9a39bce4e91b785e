"""Co-simulation of a packet-mode switch on Icarus or Verilator: generate (cached), build
(cached), run the packet scenarios as one cocotb test each in one simulator process
(cocotb_tb.py), and read back what each measured.

Files go where the circuit switch's runs go (fredfab.sim.verify.cosim):
``<root>/<sim>/<variant>/runs/<label>/`` holds scenarios.json, report.json, results.xml and
sim.log, and with ``waves`` the waveform (from a build of its own, ``<variant>-waves/``,
as the circuit switch's).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fredfab.hw.packet.params import PacketParams
from fredfab.sim.verify.build_cache import directory_lock
from fredfab.sim.verify.cosim import DEFAULT_ROOT, RunFiles, build, run_bench
from fredfab.sim.verify.packet.report import REPORT_ENV
from fredfab.sim.verify.packet.scenario import (
    PACKET_SCENARIOS_ENV,
    PacketScenario,
    PacketScenarioFile,
)

TEST_MODULE = "fredfab.sim.verify.packet.cocotb_tb"


@dataclass
class PacketCosimResult:
    sim: str
    variant: str
    run_dir: Path
    log: Path
    build_seconds: float
    wall_seconds: float
    scenarios: dict[str, dict]  # name -> report.result_dict
    waves: Path | None = None  # the waveform, when traced

    @property
    def passed(self) -> bool:
        return bool(self.scenarios) and all(r["passed"] for r in self.scenarios.values())

    def summary(self) -> str:
        bad = {n: r for n, r in self.scenarios.items() if not r["passed"]}
        if not bad:
            return f"{self.sim} {self.variant}: all {len(self.scenarios)} scenarios passed"
        lines = [f"{self.sim} {self.variant}: {len(bad)} of {len(self.scenarios)} failed"]
        lines += [f"  {n}: {'; '.join(r['errors'][:3])}" for n, r in bad.items()]
        lines.append(f"  log: {self.log}")
        return "\n".join(lines)


def run_packet(
    params: PacketParams,
    sim: str,
    scenarios: Sequence[PacketScenario],
    *,
    label: str = "packet",
    root: Path = DEFAULT_ROOT,
    seed: int = 1,
    waves: bool = False,
) -> PacketCosimResult:
    """Run ``scenarios`` in one simulator process; ``waves`` traces them (FST; VCD on
    Verilator without the lz4 headers) into the run folder."""
    names = [s.name for s in scenarios]
    if not names or len(set(names)) != len(names):
        raise ValueError(f"need scenarios with distinct names, got {names}")
    b = build(params, sim, waves=waves, root=root)
    files = RunFiles(b.build_dir / "runs" / label)
    with directory_lock(files.run_dir):
        files.clear()
        PacketScenarioFile(b.manifest, list(scenarios)).write(files.scenarios)
        env = {PACKET_SCENARIOS_ENV: str(files.scenarios), REPORT_ENV: str(files.report)}
        wall = run_bench(b, files, seed, TEST_MODULE, env, scenarios=names)
        report = json.loads(files.report.read_text()) if files.report.exists() else {}
    missing = {
        n: {"passed": False, "errors": [f"did not report (simulator crashed?); see {files.log}"]}
        for n in names
        if n not in report
    }
    return PacketCosimResult(
        sim,
        params.name,
        files.run_dir,
        files.log,
        b.seconds,
        wall,
        {**report, **missing},
        files.waves_written(b),
    )
