"""Yosys cost of Fred_3(P) against P: P = 4, 8, 16, 32 at one datapath width (1 lane of
bf16, so the adders do not drown the interconnect), synthesised with sim/verify/synth.py in
parallel processes (P = 32 takes tens of minutes).
The uSwitch count of a Clos with m = 3 grows like P^log2(3) ~ P^1.58; the ratio columns
show it against P log2 P.
"""

from __future__ import annotations

import math
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

NAME = "rtl_cost"


def _synth(params) -> dict:
    from fredfab.hw.switch import FredSwitch
    from fredfab.sim.verify.synth import synthesize

    report = synthesize(FredSwitch(params), params.name, Path("build/bench/synth") / params.name)
    return report.to_dict()


def run(quick: bool = False) -> list[dict]:
    from fredfab.hw.params import SwitchParams
    from fredfab.model.switch.topology import Topology

    rows: list[dict] = []
    sizes = (4, 8) if quick else (4, 8, 16, 32)
    variants = [SwitchParams(ports=p, m=3, lanes=1, dtype="bf16") for p in sizes]
    with ProcessPoolExecutor(max_workers=2) as pool:
        reports = list(pool.map(_synth, variants))
    for params, rep in zip(variants, reports, strict=True):
        counts = Topology.build(params.ports, params.m).counts()
        plogp = params.ports * math.log2(params.ports)
        rows.append(
            {
                "what": "yosys cost",
                "ports": params.ports,
                "lanes": 1,
                "dtype": "bf16",
                "uswitches": counts["uswitches"],
                "adders": counts["adders"],
                "flops": rep["flops"],
                "mux2": rep["mux2"],
                "nand2_eq": round(rep["nand2_eq"]),
                "logic_depth": rep["logic_depth"],
                "uswitches_per_PlogP": counts["uswitches"] / plogp,
                "nand2_per_PlogP": rep["nand2_eq"] / plogp,
                "synth_s": rep["seconds"],
                "cells": ", ".join(f"{k.strip('$_')}={v}" for k, v in sorted(rep["cells"].items())),
            }
        )
    return rows
