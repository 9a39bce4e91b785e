"""FPGA place and route of the switch variants (fredfab.sim.verify.fpga, ECP5 LFE5U-85F
speed 8, out of context): LUTs, flip-flops, Fmax and the time synthesis and place and route
take, for Clos and crossbar at one lane of bf16, P = 4 and 8 (--quick: P = 4); then the
smallest Clos again under other placer seeds, to show how much Fmax depends on the seed.
P = 16 stays out: the Clos takes over half an hour and the crossbar's routing did not finish
in 40 minutes (docs/architecture-cost.md has the command).
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

NAME = "fpga"

#: Placer seeds of the spread rows (the first is the default one).
SEEDS = (1, 2, 3, 4)


def _pnr(job) -> dict:
    from fredfab.hw.switch import FredSwitch
    from fredfab.sim.verify.fpga import place_and_route

    params, seed = job
    work = Path("build/bench/fpga") / f"{params.name}_s{seed}"
    return place_and_route(FredSwitch(params), params.name, work, seed).to_dict()


def run(quick: bool = False) -> list[dict]:
    from fredfab.hw.params import SwitchParams
    from fredfab.sim.verify.fpga import DEFAULT_SEED

    sizes = (4,) if quick else (4, 8)
    variants = [
        SwitchParams(ports=p, m=3, lanes=1, dtype="bf16", arch=a)
        for a in ("clos", "xbar")
        for p in sizes
    ]
    smallest = variants[0]
    jobs = [(v, DEFAULT_SEED) for v in variants]
    jobs += [(smallest, s) for s in SEEDS if s != DEFAULT_SEED]
    with ProcessPoolExecutor(max_workers=2) as pool:
        reports = list(pool.map(_pnr, jobs))
    rows = []
    for (params, seed), rep in zip(jobs, reports, strict=True):
        rows.append(
            {
                "what": "variant" if seed == DEFAULT_SEED else "seed spread",
                "arch": params.arch,
                "ports": params.ports,
                "seed": seed,
                "luts": rep["luts"],
                "ffs": rep["ffs"],
                "bram": rep["bram"],
                "dsp": rep["dsp"],
                "carry": rep["carry"],
                "fmax_mhz": rep["fmax_mhz"],
                "synth_s": rep["synth_seconds"],
                "pnr_s": rep["pnr_seconds"],
            }
        )
    spread = [r["fmax_mhz"] for r in rows if r["arch"] == smallest.arch and r["ports"] == 4]
    rows.append(
        {
            "what": f"Fmax over seeds {list(SEEDS)}",
            "arch": smallest.arch,
            "ports": smallest.ports,
            "fmax_min": min(spread),
            "fmax_max": max(spread),
            "spread_percent": 100 * (max(spread) - min(spread)) / min(spread),
        }
    )
    return rows
