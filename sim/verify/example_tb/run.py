"""Run the example All-Reduce bench (render.py) on Icarus Verilog.

The bench comes first on the iverilog command line so that its ```timescale`` also covers
the generated switch, which has none. The switch's Verilog gets the time-0 wake-up of its
combinational blocks (fredfab.sim.verify.cosim.icarus_verilog explains why Icarus under
-g2012 can leave a block whose inputs never change at X); the design is unchanged.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from fredfab.sim.verify.cosim import CosimError, check_simulator, icarus_verilog
from fredfab.sim.verify.example_tb.render import BENCH, render


@dataclass(frozen=True)
class BenchResult:
    passed: bool
    flits: int  # output flits the bench received
    errors: int
    log: str


def build(manifest_path: Path, out_dir: Path, flits: int = 6) -> Path:
    """Render the bench, compile it with the switch's Verilog; return the vvp program."""
    check_simulator("icarus")
    manifest = json.loads(Path(manifest_path).read_text())
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "tb.v").write_text(render(manifest, flits=flits))
    dut = (Path(manifest_path).parent / manifest["verilog"]).read_text()
    (out_dir / "dut.v").write_text(icarus_verilog(dut))
    cmd = ["iverilog", "-g2012", "-o", "tb.vvp", "-s", BENCH, "tb.v", "dut.v"]
    r = subprocess.run(cmd, cwd=out_dir, capture_output=True, text=True)
    if r.returncode != 0:
        raise CosimError(f"iverilog failed:\n{(r.stdout + r.stderr)[-2000:]}")
    return out_dir / "tb.vvp"


def run(program: Path, bias: int = 0) -> BenchResult:
    """Run the compiled bench; ``bias`` != 0 makes one expected value wrong."""
    r = subprocess.run(
        ["vvp", "-n", str(program), f"+bias={bias}"],
        cwd=program.parent,
        capture_output=True,
        text=True,
    )
    m = re.search(r"^RESULT flits=(\d+) errors=(\d+)$", r.stdout, re.M)
    if r.returncode != 0 or m is None:
        raise CosimError(f"vvp failed ({r.returncode}):\n{(r.stdout + r.stderr)[-2000:]}")
    verdict = r.stdout.strip().splitlines()[-1]
    return BenchResult(verdict == "PASS", int(m[1]), int(m[2]), r.stdout)
