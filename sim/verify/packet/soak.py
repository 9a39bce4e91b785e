"""Long self-checking soak of the packet-mode switch: random 3D-parallel traffic on hostile
links through the cocotb bench, until a number of cycles has elapsed.

Each scenario runs the MP, DP and PP phases (scenarios.py: MP pairs, DP over every port, a
PP ring on the unicast index) with random packet counts and random start cycles, under
random backpressure and idle rates, with drop and corrupt faults on every link at
``drop`` and ``corrupt`` per flit, some of them bursts, and now and then a silent link.
The NPU endpoints check every delivery as in every other packet run (bit-exact against the
functional model, each packet once and in order); on top of that each scenario must
deliver exactly the packets its phases define. Scenarios run in rounds of a few per
simulator process (run_packet), sized from the cycles still to go and the cycles per
packet measured so far, until at least ``cycles`` cycles have run. The Python endpoints
set its pace; hw_soak.py runs the same kind of traffic with hardware endpoints instead.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fredfab.hw.packet.params import PacketParams
from fredfab.model.errors import InputError
from fredfab.model.packet.format import UNICAST_INDEX, VC_DP, VC_MP, VC_PP
from fredfab.sim import progress
from fredfab.sim.verify.cosim import DEFAULT_ROOT
from fredfab.sim.verify.packet.cosim import run_packet
from fredfab.sim.verify.packet.metrics import expected_packets
from fredfab.sim.verify.packet.scenario import LinkHostility, PacketPhase, PacketScenario
from fredfab.sim.verify.packet.scenarios import DP_SLOT, MP_SLOT, dp_flows, mp_flows, pp_flows

#: Default per-flit drop and corrupt rate on every link, each direction; the share of
#: faults that are bursts, and the per-cycle rate at which a faulty link goes silent.
FAULT_RATE = 1e-3
BURST = 0.1
SILENCE = 1e-5
#: Scenarios per simulator process, and the largest scenario (cycles, about): a failure is
#: found within one scenario, and a round's report is read when its process ends.
PER_ROUND = 4
MAX_SCENARIO_CYCLES = 60_000
#: Cycles per packet of a phase before anything is measured (P = 4 under the soak's
#: backpressure runs at about 30 to 60); later rounds use the measured figure.
FIRST_GUESS_CYCLES_PER_PACKET = 50.0
#: Latest phase start, cycles after the slots are loaded.
MAX_SPREAD = 2_000


@dataclass
class PacketSoakResult:
    sim: str
    variant: str
    target_cycles: int
    drop: float
    corrupt: float
    cycles: int = 0  # all scenarios together
    scenarios: dict[str, dict] = field(default_factory=dict)  # name -> report.result_dict
    errors: list[str] = field(default_factory=list)
    rounds: int = 0
    build_seconds: float = 0.0
    wall_seconds: float = 0.0  # simulator processes, builds excluded

    @property
    def passed(self) -> bool:
        return bool(self.scenarios) and not self.errors and self.cycles >= self.target_cycles

    def total(self, key: str) -> int:
        return sum(r.get(key) or 0 for r in self.scenarios.values())

    def fault_total(self, key: str) -> int:
        return sum((r.get("faults") or {}).get(key, 0) for r in self.scenarios.values())

    @property
    def cycles_per_second(self) -> float:
        return self.cycles / self.wall_seconds if self.wall_seconds else float("nan")


def soak_scenario(
    name: str,
    ports: int,
    packets: int,
    seed: int,
    drop: float,
    corrupt: float,
    burst: float = BURST,
    silence: float = SILENCE,
) -> PacketScenario:
    """MP, DP and PP phases of ``packets / 2 .. packets`` packets each, starting at random
    cycles, on links with random backpressure and idles and ``drop`` / ``corrupt`` faults,
    a ``burst`` share of them bursts, links falling silent at ``silence`` per cycle."""
    rng = np.random.default_rng([seed, 17])
    counts = rng.integers(max(1, packets // 2), packets + 1, size=3)
    starts = rng.integers(0, MAX_SPREAD + 1, size=3)
    phases = (
        PacketPhase.of(VC_MP, MP_SLOT, mp_flows(ports), int(counts[0]), int(starts[0])),
        PacketPhase.of(VC_DP, DP_SLOT, dp_flows(ports), int(counts[1]), int(starts[1])),
        PacketPhase.of(VC_PP, UNICAST_INDEX, pp_flows(ports), int(counts[2]), int(starts[2])),
    )
    links = LinkHostility(
        drop=drop,
        corrupt=corrupt,
        stall=round(float(rng.uniform(0.0, 0.5)), 3),
        idle=round(float(rng.uniform(0.0, 0.4)), 3),
        burst=burst,
        silence=silence if drop or corrupt else 0.0,
    )
    # A hang shows as a scenario that runs out of cycles: allow several times the expected.
    budget = int(4 * FIRST_GUESS_CYCLES_PER_PACKET * packets) + MAX_SPREAD + 20_000
    return PacketScenario(name, phases, seed, links, max_cycles=budget)


def packet_soak(
    params: PacketParams,
    cycles: int,
    sim: str = "verilator",
    *,
    drop: float = FAULT_RATE,
    corrupt: float = FAULT_RATE,
    burst: float = BURST,
    silence: float = SILENCE,
    seed: int = 1,
    root: Path = DEFAULT_ROOT,
    label: str = "soak",
) -> PacketSoakResult:
    """Run soak scenarios on ``params`` until at least ``cycles`` cycles have elapsed, or
    until a scenario fails (its errors are in the result; the soak stops there)."""
    if cycles < 1:
        raise InputError(f"cycles must be >= 1, got {cycles}")
    out = PacketSoakResult(sim, params.name, cycles, drop, corrupt)
    per_packet = FIRST_GUESS_CYCLES_PER_PACKET
    while out.cycles < cycles and not out.errors:
        remaining = cycles - out.cycles
        size = min(remaining, MAX_SCENARIO_CYCLES)
        packets = max(4, math.ceil(size / per_packet))
        count = min(PER_ROUND, math.ceil(remaining / size))
        scenarios = [
            soak_scenario(
                f"soak_{out.rounds}_{k}",
                params.ports,
                packets,
                seed * 100_003 + out.rounds * PER_ROUND + k,
                drop,
                corrupt,
                burst,
                silence,
            )
            for k in range(count)
        ]
        t0 = time.perf_counter()
        result = run_packet(params, sim, scenarios, label=label, root=root, seed=seed)
        out.build_seconds += result.build_seconds
        out.wall_seconds += time.perf_counter() - t0 - result.build_seconds
        out.rounds += 1
        ran = 0
        for sc in scenarios:
            r = result.scenarios[sc.name]
            out.scenarios[sc.name] = r
            if not r.get("passed"):
                out.errors += [f"{sc.name}: {e}" for e in r.get("errors", [])[:3]]
                out.errors.append(f"{sc.name}: log {result.log}")
                continue
            want = expected_packets(sc)
            if r["packets_delivered"] != want:
                out.errors.append(
                    f"{sc.name}: delivered {r['packets_delivered']} packets, expected {want}"
                )
            out.cycles += r["cycles"]
            ran += r["cycles"]
        # The phases overlap: cycles per packet of the longest phase is what sizes a scenario.
        longest = sum(max(ph.packets for ph in sc.phases) for sc in scenarios)
        if ran and longest:
            per_packet = max(1.0, ran / longest)
        done = min(out.cycles, cycles)
        progress.step(f"soak: {done:,} of {cycles:,} cycles ({100 * done // cycles}%)")
    return out
