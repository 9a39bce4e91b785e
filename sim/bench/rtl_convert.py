"""Elaboration + Verilog conversion time of the generator: P = 8, 16, 32 at 8 lanes of
bf16 (median of repeated runs in one process)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from fredfab.sim.bench import median_seconds

NAME = "rtl_convert"


def _convert(params) -> None:
    from fredfab.hw.manifest import generate

    with tempfile.TemporaryDirectory() as tmp:
        generate(params, Path(tmp))


def run(quick: bool = False) -> list[dict]:
    from fredfab.hw.params import SwitchParams

    rows: list[dict] = []
    for arch in ("clos", "xbar"):
        for ports in (8, 16, 32):
            params = SwitchParams(ports=ports, m=3, lanes=8, dtype="bf16", arch=arch)
            t = median_seconds(lambda p=params: _convert(p), repeat=1 if quick else 3, warmup=0)
            rows.append(
                {
                    "arch": arch,
                    "ports": ports,
                    "lanes": 8,
                    "dtype": "bf16",
                    "nodes": params.topology.counts()["uswitches"],
                    "median_s": t,
                }
            )
    return rows
