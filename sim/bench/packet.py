"""Packet mode in co-simulation: how fast the benches run, what faulty links cost, and the
soaks.

Rows have a ``what`` column:

- ``speed``: cycles per second of the packet bench (Python NPUs and links every cycle) on
  Verilator and Icarus, the median of 3 runs of one three-phase scenario under
  backpressure on clean links; the scenario's own time inside the simulator process, so
  process start and slot loading are left out; also per CPU second of that process (the
  machine may be shared).
- ``hw_speed``: cycles per second of the hardware soak (hardware NPU endpoints and fault
  injectors around the switch's Verilog, one Verilated model: hw_soak.py; ``threads`` 2:
  two models on two threads, links a cycle longer: hw_soak_split.py) at P = 4 and 8, the
  median of 3 runs; per CPU second too, and against the Python bench's speed on the same
  switch (``vs_python`` per CPU second of each, ``vs_python_wall`` by the wall clock).
- ``goodput``: the three-phase scenario (MP, DP and PP at once, random starts,
  backpressure and idles: scenarios.three_phases) with drop = corrupt = rate per flit on
  every link, rate in {0, 1e-4, 1e-3, 1e-2}, at P = 4 and 8, with link-level retry (the
  default) and without it (faults reach the packets: repair, REWINDs, Go-Back-N): goodput
  (payload flits delivered per cycle per port), its ratio to the clean run, resends per
  delivered packet, link replays, faults. The plot build/bench/packet_goodput.png shows
  goodput against rate.
- ``soak``: fredfab.sim.verify.packet.soak (Python endpoints) for 10**6 cycles at 1e-3
  (``--quick``: 5 * 10**4); ``hw_soak``: the hardware soak of P = 4 for 10**8 cycles
  (``--quick``: 10**6) at 1e-3 drop and corrupt, bursts and silences, with its counters,
  on one thread and on two.
- ``costs``: what the protocol costs, as the timing card states it
  (fredfab.sim.verify.packet.timing): link cycles per packet without payload (the header),
  payload rate of a phase alone and of MP and DP competing, preemption latency, credit round
  trip, the served phase's share while another waits, the cycles a faulted flit costs its
  link; P = 4 and 8 on Verilator.

Builds are cached under build/cosim and reported apart from run times.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np

from fredfab.hw.packet.params import PacketParams
from fredfab.hw.params import SwitchParams
from fredfab.model.packet.format import PacketFormat
from fredfab.sim.verify import cosim
from fredfab.sim.verify.packet.cosim import run_packet
from fredfab.sim.verify.packet.hw_soak import hw_soak, hw_soak_summary
from fredfab.sim.verify.packet.metrics import goodput
from fredfab.sim.verify.packet.scenario import LinkHostility, PacketScenario
from fredfab.sim.verify.packet.scenarios import three_phases
from fredfab.sim.verify.packet.soak import packet_soak
from fredfab.sim.verify.packet.soak_plan import SoakPlan

NAME = "packet"
#: 64-bit flits (4 bf16 lanes): the CRC catches every fault the links make.
SPEED_VARIANTS = [PacketParams(SwitchParams(P, m=3, lanes=4, dtype="bf16")) for P in (4, 8)]
GOODPUT_VARIANTS = SPEED_VARIANTS
#: The hardware soak's switches: the same with integer lanes (its sums in any order).
HW_VARIANTS = [PacketParams(SwitchParams(P, m=3, lanes=4, dtype="int16")) for P in (4, 8)]
FAULT_RATES = (0.0, 1e-4, 1e-3, 1e-2)
#: The hardware soak's links: faults at 1e-3 drop and corrupt, bursts, silences; NPUs idle
#: and stall as in the benches' busy scenarios.
HW_SOAK_LINKS = LinkHostility(drop=1e-3, corrupt=1e-3, stall=0.3, idle=0.2, burst=0.1, silence=1e-5)
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
            cpu = [r["cycles"] / r["cpu_seconds"] for r in reports if r.get("cpu_seconds")]
            rows.append(
                {
                    "what": "speed",
                    "sim": sim,
                    "variant": params.name,
                    "passed": all(r["passed"] for r in reports),
                    "cycles": reports[0]["cycles"],
                    "run_s": statistics.median(r["wall_seconds"] for r in reports),
                    "cycles_per_s": statistics.median(rates),
                    "cycles_per_cpu_s": statistics.median(cpu) if cpu else None,
                    "process_s": statistics.median(r.wall_seconds for r in runs),
                    "build_s": runs[0].build_seconds,
                }
            )
    return rows


def _hw_speed_rows(quick: bool, python: list[dict]) -> list[dict]:
    """The hardware soak's speed, and against the Python bench's on Verilator."""
    cycles = 200_000 if quick else 1_000_000
    py = {r["variant"].replace("_bf16_", "_"): r for r in python if r["sim"] == "verilator"}
    rows = []
    for params, threads in ((p, t) for p in HW_VARIANTS for t in (1, 2)):
        plan = SoakPlan(params.ports, 1, HW_SOAK_LINKS)
        runs = [hw_soak(params, plan, cycles, threads=threads) for _ in range(REPEAT)]
        cpu = statistics.median(r.cycles_per_cpu_second for r in runs)
        wall = statistics.median(r.cycles_per_second for r in runs)
        ref = py.get(params.name.replace("_int16_", "_")) or {}
        rows.append(
            {
                "what": "hw_speed",
                "sim": "verilator",
                "variant": params.name,
                "threads": threads,
                "passed": all(r.errors == 0 for r in runs),
                "cycles": cycles,
                "run_s": statistics.median(r.seconds for r in runs),
                "cycles_per_s": wall,
                "cycles_per_cpu_s": cpu,
                "vs_python": _ratio(cpu, ref.get("cycles_per_cpu_s")),
                "vs_python_wall": _ratio(wall, ref.get("cycles_per_s")),
                "build_s": runs[0].build_seconds,
            }
        )
    return rows


def _ratio(a: float, b: float | None) -> float | None:
    return a / b if b else None


def _goodput_rows(quick: bool) -> list[dict]:
    rows = []
    packets = 60 if quick else 400
    for base in GOODPUT_VARIANTS[:1] if quick else GOODPUT_VARIANTS:
        for retry in (True, False):
            params = PacketParams(base.switch, PacketFormat(link_retry=retry))
            names = {rate: f"rate_{rate:g}" for rate in FAULT_RATES}
            scenarios = [_three_phases(params.ports, packets, names[r], r) for r in FAULT_RATES]
            result = run_packet(params, "verilator", scenarios, label="bench-goodput")
            clean = goodput(result.scenarios[names[0.0]], params)
            for rate in FAULT_RATES:
                r = result.scenarios[names[rate]]
                delivered = r.get("packets_delivered") or 0
                faults = r.get("faults") or {}
                g = goodput(r, params)
                rows.append(
                    {
                        "what": "goodput",
                        "sim": "verilator",
                        "variant": params.name,
                        "link_retry": retry,
                        "passed": r["passed"],
                        "rate": rate,
                        "cycles": r.get("cycles"),
                        "packets": delivered,
                        "goodput": g,
                        "of_clean": g / clean if clean else None,
                        "retx_per_packet": (r.get("retransmissions") or 0) / delivered
                        if delivered
                        else None,
                        "link_replays": r.get("link_replays"),
                        "rewinds": r.get("rewinds"),
                        "timeouts": r.get("sender_timeouts"),
                        "dropped": faults.get("dropped"),
                        "corrupted": faults.get("corrupted"),
                        "bad_packets": r.get("bad_packets_received"),
                    }
                )
    return rows


def plot_goodput(rows: list[dict], out: Path) -> Path | None:
    """Goodput against fault rate, one line per switch and retry mode (the zero rate is
    drawn at a tenth of the lowest, on a log axis)."""
    try:
        import matplotlib
    except ImportError:  # the plot extra is not installed: the table says it all
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    lowest = min(r for r in FAULT_RATES if r)
    for key in sorted({(r["variant"], r["link_retry"]) for r in rows}):
        mine = [r for r in rows if (r["variant"], r["link_retry"]) == key]
        xs = [r["rate"] or lowest / 10 for r in mine]
        label = f"P = {key[0].split('_p')[1].split('_')[0]}, " + (
            "link-level retry" if key[1] else "end to end only"
        )
        ax.plot(xs, [r["goodput"] for r in mine], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("drop = corrupt rate per flit (leftmost: none)")
    ax.set_ylabel("payload flits / cycle / port")
    ax.set_ylim(bottom=0)
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, bbox_inches="tight")
    plt.close(fig)
    return out


def _soak_rows(quick: bool) -> list[dict]:
    params = GOODPUT_VARIANTS[0]
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


def _hw_soak_rows(quick: bool) -> list[dict]:
    params = HW_VARIANTS[0]
    plan = SoakPlan(params.ports, 7, HW_SOAK_LINKS)
    rows = []
    for threads in (1, 2):
        r = hw_soak(params, plan, 1_000_000 if quick else 10**8, threads=threads)
        rows.append(
            {
                "what": "hw_soak",
                "sim": "verilator",
                "variant": params.name,
                "threads": threads,
                "passed": r.errors == 0 and r.delivered > 0,
                "rate": HW_SOAK_LINKS.drop,
                **hw_soak_summary(r),
            }
        )
    return rows


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
                "retry_cycles": m.retry_cycles,
            }
        )
    return rows


def run(quick: bool = False, out: Path = Path("build/bench")) -> list[dict]:
    speed = _speed_rows(quick)
    goodput_rows = _goodput_rows(quick)
    plot_goodput(goodput_rows, out / "packet_goodput.png")
    return (
        speed
        + _hw_speed_rows(quick, speed)
        + goodput_rows
        + _cost_rows(quick)
        + _soak_rows(quick)
        + _hw_soak_rows(quick)
    )
