"""Router time with P/2 concurrent random flows, and functional-model throughput."""

from __future__ import annotations

import statistics
import time

import numpy as np

from fredfab.model.dtypes import element_type, random_data
from fredfab.model.switch.flow import Flow
from fredfab.model.switch.flowgen import random_flow_set
from fredfab.model.switch.router import routable, route
from fredfab.model.switch.switch_model import FunctionalSwitch

NAME = "router"


def _routable_sets(rng, ports: int, m: int, count: int) -> tuple[list[list[Flow]], float]:
    """``count`` routable random sets of P/2 flows, and the share of draws that conflicted."""
    sets: list[list[Flow]] = []
    draws = 0
    while len(sets) < count:
        draws += 1
        flows = random_flow_set(rng, ports, n_flows=ports // 2)
        if routable(flows, ports, m):
            sets.append(flows)
    return sets, 1 - count / draws


def run(quick: bool = False) -> list[dict]:
    rng = np.random.default_rng(2025)
    rows: list[dict] = []
    n_sets = 20 if quick else 100
    for ports in (16, 32, 64):
        for m in (2, 3):
            sets, conflict_rate = _routable_sets(rng, ports, m, n_sets)
            times = []
            for flows in sets:
                t0 = time.perf_counter()
                route(flows, ports, m)
                times.append(time.perf_counter() - t0)
            rows.append(
                {
                    "what": "route",
                    "ports": ports,
                    "m": m,
                    "flows": ports // 2,
                    "samples": len(times),
                    "median_ms": 1e3 * statistics.median(times),
                    "p90_ms": 1e3 * float(np.percentile(times, 90)),
                    "conflict_rate": conflict_rate,
                }
            )
    for ports, dtype in ((16, "fp16"), (16, "int32"), (64, "bf16")):
        et = element_type(dtype)
        sw = FunctionalSwitch(ports, 3, et)
        routing = sw.route([Flow(range(ports), range(ports))])
        length = 1 << 14
        data = {p: random_data(rng, et, (length,)) for p in range(ports)}
        times = []
        for _ in range(3 if quick else 7):
            t0 = time.perf_counter()
            sw.forward(routing, data)
            times.append(time.perf_counter() - t0)
        t = statistics.median(times)
        rows.append(
            {
                "what": "functional all-reduce",
                "ports": ports,
                "m": 3,
                "dtype": dtype,
                "elements_per_port": length,
                "median_ms": 1e3 * t,
                "input_elements_per_s": ports * length / t,
            }
        )
    return rows
