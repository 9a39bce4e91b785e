"""Packet mode in co-simulation: how fast the cocotb bench runs, what faulty links cost, and
the million-cycle soak.

Rows have a ``what`` column:

- ``speed``: cycles per second of the packet bench (Python NPUs and links every cycle) on
  Verilator and Icarus, the median of 3 runs of one three-phase scenario under
  backpressure on clean links; the scenario's own time inside the simulator process, so
  process start and slot loading are left out.
- ``goodput``: the three-phase scenario (MP, DP and PP at once, random starts,
  backpressure and idles: scenarios.three_phases) with drop = corrupt = rate per flit on
  every link, rate in {0, 1e-4, 1e-3, 1e-2}: goodput (payload flits delivered per cycle
  per port), retransmissions per delivered packet, faults.
- ``soak``: fredfab.sim.verify.packet.soak for 10**6 cycles at 1e-3 (``--quick``: 5 * 10**4).
- ``costs``: what the protocol costs, as the timing card states it
  (fredfab.sim.verify.packet.timing): link cycles per packet without payload (the header),
  payload rate of a phase alone and of MP and DP competing, preemption latency, credit round
  trip, the served phase's share while another waits; P = 4 and 8 on Verilator.

Builds are cached under build/cosim and reported apart from run times.
"""

from __future__ import annotations

import statistics

import numpy as np

from fredfab.hw.packet.params import PacketParams
from fredfab.hw.params import SwitchParams
from fredfab.sim.verify import cosim
from fredfab.sim.verify.packet.cosim import run_packet
from fredfab.sim.verify.packet.metrics import goodput
from fredfab.sim.verify.packet.scenario import LinkHostility, PacketScenario
from fredfab.sim.verify.packet.scenarios import three_phases
from fredfab.sim.verify.packet.soak import packet_soak

NAME = "packet"
#: 64-bit flits (4 bf16 lanes): the CRC catches every fault the links make.
SPEED_VARIANTS = [PacketParams(SwitchParams(P, m=3, lanes=4, dtype="bf16")) for P in (4, 8)]
GOODPUT_VARIANT = SPEED_VARIANTS[0]
FAULT_RATES = (0.0, 1e-4, 1e-3, 1e-2)
#: The standard scenarios' backpressure and idles (scenarios.standard).
BUSY = LinkHostility(stall=0.3, idle=0.2)
REPEAT = 3


def _three_phases(
    ports: int, packets: int, name: str, rate: float = 0.0, seed: int = 5
) -> PacketScenario:
    phases = three_phases(ports, packets, np.random.default_rng(seed), 200)
    links = LinkHostility(drop=rate, corrupt=rate, stall=BUSY.stall, idle=BUSY.idle)
    return PacketScenario(name, phases, seed, links, max_cycles=2_000_000)


def _speed_rows(quick: bool) -> list[dict]:
    rows = []
    for sim in cosim.SIMULATORS:
        for params in SPEED_VARIANTS:
            packets = (
                (20 if sim == "icarus" else 100) if quick else (60 if sim == "icarus" else 400)
            )
            sc = _three_phases(params.ports, packets, "speed")
            runs = [run_packet(params, sim, [sc], label="bench-speed") for _ in range(REPEAT)]
            reports = [r.scenarios["speed"] for r in runs]
            rates = [r["cycles"] / r["wall_seconds"] for r in reports]
            rows.append(
                {
                    "what": "speed",
                    "sim": sim,
                    "variant": params.name,
                    "passed": all(r["passed"] for r in reports),
                    "cycles": reports[0]["cycles"],
                    "run_s": statistics.median(r["wall_seconds"] for r in reports),
                    "cycles_per_s": statistics.median(rates),
                    "process_s": statistics.median(r.wall_seconds for r in runs),
                    "build_s": runs[0].build_seconds,
                }
            )
    return rows


def _goodput_rows(quick: bool) -> list[dict]:
    params = GOODPUT_VARIANT
    packets = 60 if quick else 400
    names = {rate: f"rate_{rate:g}" for rate in FAULT_RATES}
    scenarios = [_three_phases(params.ports, packets, names[r], r) for r in FAULT_RATES]
    result = run_packet(params, "verilator", scenarios, label="bench-goodput")
    rows = []
    for rate in FAULT_RATES:
        r = result.scenarios[names[rate]]
        delivered = r.get("packets_delivered") or 0
        faults = r.get("faults") or {}
        rows.append(
            {
                "what": "goodput",
                "sim": "verilator",
                "variant": params.name,
                "passed": r["passed"],
                "rate": rate,
                "cycles": r.get("cycles"),
                "packets": delivered,
                "goodput": goodput(r, params),
                "retx_per_packet": (r.get("retransmissions") or 0) / delivered
                if delivered
                else None,
                "dropped": faults.get("dropped"),
                "corrupted": faults.get("corrupted"),
                "bad_packets": r.get("bad_packets_received"),
            }
        )
    return rows


def _soak_rows(quick: bool) -> list[dict]:
    params = GOODPUT_VARIANT
    r = packet_soak(params, 50_000 if quick else 1_000_000, "verilator", label="bench-soak")
    return [
        {
            "what": "soak",
            "sim": "verilator",
            "variant": params.name,
            "passed": r.passed,
            "rate": r.drop,
            "cycles": r.cycles,
            "run_s": r.wall_seconds,
            "cycles_per_s": r.cycles_per_second,
            "scenarios": len(r.scenarios),
            "packets": r.total("packets_delivered"),
            "retx_per_packet": r.total("retransmissions") / max(1, r.total("packets_delivered")),
            "dropped": r.fault_total("dropped"),
            "corrupted": r.fault_total("corrupted"),
            "errors": len(r.errors),
            "build_s": r.build_seconds,
        }
    ]


def _cost_rows(quick: bool) -> list[dict]:
    from fredfab.sim.verify.packet.timing import measure_packet_costs

    rows = []
    for params in SPEED_VARIANTS[:1] if quick else SPEED_VARIANTS:
        m = measure_packet_costs(params, "verilator")
        rows.append(
            {
                "what": "costs",
                "sim": "verilator",
                "variant": params.name,
                "passed": True,
                "header_flits": m.header_flits,
                "payload_rate_alone": m.payload_rate_alone,
                "payload_rate_mp_competing": m.payload_rate_competing["mp"],
                "payload_rate_dp_competing": m.payload_rate_competing["dp"],
                "preempt_cycles": m.preempt_cycles,
                "credit_rtt_cycles": m.credit_rtt_cycles,
                "vc_share": m.vc_share,
            }
        )
    return rows


def run(quick: bool = False) -> list[dict]:
    return _speed_rows(quick) + _goodput_rows(quick) + _cost_rows(quick) + _soak_rows(quick)
