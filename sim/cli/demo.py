"""`make demo`: the main job, as a sequence of `fred` commands a user could type.

1. generate an 8-port Fred_3 switch (Verilog + manifest),
2. route the phases of a 3D-parallel strategy on it,
3. co-simulate the generated Verilog (Icarus) and measure its timing card, packet costs
   included,
4. estimate the wafer: per-phase bandwidth and Transformer-17B training time on the mesh
   and FRED-A..D, using the measured timing card.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from fredfab.hw.params import SwitchParams
from fredfab.sim.cli import main as fred
from fredfab.sim.verify import cosim

OUT = "build/demo"
PARAMS = SwitchParams(ports=8, m=3, lanes=4, dtype="bf16")
SWITCH = [
    *("--ports", str(PARAMS.ports), "--m", str(PARAMS.m)),
    *("--lanes", str(PARAMS.lanes), "--dtype", PARAMS.dtype),
]
VARIANT = PARAMS.name  # the timing card's file name


def step(title: str, argv: list[str]) -> None:
    print(f"\n=== {title}\n$ fred {' '.join(argv)}", flush=True)
    t0 = time.perf_counter()
    rc = fred(argv)
    print(f"({time.perf_counter() - t0:.1f} s)", flush=True)
    if rc != 0:
        raise SystemExit(f"demo: step failed: fred {' '.join(argv)} (exit {rc})")


def main() -> int:
    step("1. Generate a FRED switch", ["generate", *SWITCH, "-o", f"{OUT}/verilog"])
    # Step 3 co-simulates this very Verilog: hand it to the co-simulation's build cache
    # rather than generating it a second time.
    cosim.rtl(PARAMS, cosim.DEFAULT_ROOT, made=Path(f"{OUT}/verilog"))
    # MP2-DP2-PP2 on 8 ports with the paper's placement: MP groups {0,1},{2,3},...
    step(
        "2. Route the MP phase of MP2-DP2-PP2 (four concurrent All-Reduces)",
        ["route", "--ports", "8", "--m", "3"]
        + [f"--flow={a}-{a + 1}:{a}-{a + 1}" for a in (0, 2, 4, 6)],
    )
    step(
        "   and its DP phase (members 4 ports apart)",
        ["route", "--ports", "8", "--m", "3"]
        + [f"--flow={a},{a + 4}:{a},{a + 4}" for a in range(4)],
    )
    # Icarus: these runs are a few thousand cycles, and Icarus compiles a switch in about a
    # second where Verilator spends half a minute or more of C++ per design; both agree cycle
    # for cycle (tests/sim/verify/test_cosim.py and test_packet_cosim.py check it), and long
    # runs (soaks, sweeps, make bench) use Verilator.
    step(
        "3. Co-simulate the generated Verilog on Icarus against the golden model, and measure "
        "its timing card (the circuit switch, then the packet-mode switch for its packet costs)",
        [
            "cosim",
            "--sim",
            "icarus",
            *SWITCH,
            "--scenario",
            "all_reduce",
            "reduce_scatter",
            "concurrent_flows",
            "--timing-card",
        ],
    )
    card = ["--timing-card", f"build/timing/{VARIANT}.json"]
    step(
        "4. Per-NPU bandwidth of each phase of MP2-DP5-PP2 on the wafer fabrics",
        [
            "phases",
            "--strategy",
            "MP2-DP5-PP2",
            "--size",
            "64MiB",
            "-o",
            f"{OUT}/phases.png",
            *card,
        ],
    )
    step(
        "5. Transformer-17B training iteration: the mesh against FRED-A..D",
        ["compare", "--workload", "transformer-17b", "-o", f"{OUT}/compare.png", *card],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
