"""The switch timing card, measured by co-simulating the generated Verilog.

``measure_timing_card(params, sim="verilator")`` runs one timing scenario through the cocotb
bench (fredfab.sim.verify.cocotb_bench.switch_tb), checks every output flit as any other scenario
does (a card is only written from a run without a single mismatch), and writes a
``fred-switch-timing/2`` card (model/timing_card.py) to ``build/timing/<variant>.json``.
The raw measurements go next to the run, under ``build/cosim/timing/<sim>/<variant>.json``.

The timing scenario, per collective kind (all-reduce: every port to every port; reduce:
every port to port 0; multicast: port 0 to every port; unicast: the shift permutation
p -> p+1 mod P), each kind in its own configuration slot:

* ``ready``: every input of the flow offers a flit in every cycle, every output is always
  ready; ``FLITS_READY`` flits per input.
* ``backpressure``: the same with every output ready with probability 1/2 per cycle
  (independently, seeded); ``FLITS_BACKPRESSURE`` flits per input.

What is measured (cycle = one clock period; "in cycle t" = sampled before edge t+1):

* ``latency_cycles``: in the ready runs, first output valid minus first input accepted
  (input accepted at the end of cycle t, output valid in cycle t + latency), the largest
  over the kinds.
* throughput, flits/cycle/port: for each output port of the flow, flits delivered divided
  by the cycles of its delivery window (first to last flit) in which it was ready, i.e. the
  share of the sink's opportunities the switch used; the smallest over the flow's output
  ports. With outputs always ready this is flits per cycle; under backpressure it is the
  switch's efficiency at the pace the sink allows (what SwitchTiming scales link bandwidth
  by).
* ``reconfiguration_cycles``: cycles from ``select`` raised to ``select`` accepted, both
  inclusive, on an idle switch (configuration loaded, nothing in flight). Reported besides
  (in the measurements file): the same right after traffic with outputs ready (it then
  includes draining the pipeline) and right after traffic under backpressure.
* ``slot_write_cycles``: cycles to write one slot through ``cfg`` (first word offered to
  last word accepted), the largest over the phases.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from fredfab.hw.params import SwitchParams
from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.dtypes import random_data
from fredfab.model.switch.flow import Flow
from fredfab.model.timing_card import KINDS, SCHEMA, TIMING_DIR, TimingCard
from fredfab.sim.atomic import write_text
from fredfab.sim.verify import cosim
from fredfab.sim.verify.cocotb_bench.patterns import RandomPause
from fredfab.sim.verify.report import PortStats
from fredfab.sim.verify.scenario_file import Scenario
from fredfab.sim.verify.scenarios import PATTERNS, ScenarioBuilder
from fredfab.sim.verify.traffic import Traffic, packet_lasts, traffic_from_data

FLITS_READY = 64
FLITS_BACKPRESSURE = 128
BACKPRESSURE = RandomPause(0.5)


def kind_flows(kind: str, ports: int) -> list[Flow]:
    """The flow set that measures ``kind`` on a ``ports``-port switch."""
    every = range(ports)
    if kind == CollectiveKind.ALL_REDUCE:
        return [Flow(every, every)]
    if kind == CollectiveKind.REDUCE:
        return [Flow(every, [0])]
    if kind == CollectiveKind.MULTICAST:
        return [Flow([0], every)]
    if kind == CollectiveKind.UNICAST:
        return [Flow([p], [(p + 1) % ports]) for p in every]
    raise ValueError(f"unknown collective kind {kind!r}; have {list(KINDS)}")


def timing_scenario(params: SwitchParams, seed: int = 1) -> Scenario:
    """The scenario described in the module docstring."""
    b = ScenarioBuilder(params, seed)
    settle = params.latency_cycles + 8
    phases = []
    for kind in KINDS:
        routing = b.route(kind_flows(kind, params.ports))
        for cond, flits, stall in (
            ("ready", FLITS_READY, PATTERNS["none"]),
            ("backpressure", FLITS_BACKPRESSURE, BACKPRESSURE),
        ):
            lasts = {f: packet_lasts(b.rng, flits, 8) for f in routing.flows}
            data = {
                p: random_data(b.rng, b.sw.et, (flits, params.lanes))
                for f in routing.flows
                for p in f.ips
            }
            traffic, _ = traffic_from_data(b.sw, routing, data, lasts)
            ph = b._phase(f"{kind} {cond}", routing, traffic, b.next_slot())
            ph.stall = stall
            phases.append(ph)
    # The first select happens on an idle switch; so does a last one, after everything.
    phases[0].wait_before = settle
    unicast = b.route(kind_flows(CollectiveKind.UNICAST, params.ports))
    idle = b._phase("idle reconfiguration", unicast, Traffic(), b.next_slot())
    idle.wait_before = settle
    idle.drain = True
    idle.stall = PATTERNS["none"]
    phases.append(idle)
    sc = ScenarioBuilder.scenario("timing", phases, "none", "none", seed, "timing card")
    return sc


@dataclass(frozen=True)
class TimingMeasurement:
    """Everything the timing scenario measured (the card holds a subset)."""

    variant: str
    simulator: str
    latency_cycles: int
    latency_by_kind: dict[str, int]
    throughput: dict[str, dict[str, float]]
    reconfiguration_idle_cycles: int
    reconfiguration_after_traffic_cycles: int  # outputs ready
    reconfiguration_after_backpressure_cycles: int  # max over kinds
    slot_write_cycles: int
    simulated_cycles: int
    wall_seconds: float

    def card(self, params: SwitchParams) -> TimingCard:
        generator = {**params.to_dict(), "top": params.name}
        return TimingCard(
            schema=SCHEMA,
            generator=generator,
            simulator=self.simulator,
            latency_cycles=self.latency_cycles,
            throughput=self.throughput,
            reconfiguration_cycles=self.reconfiguration_idle_cycles,
            slot_write_cycles=self.slot_write_cycles,
        )


def _window_rate(out: PortStats, ready_based: bool) -> float:
    if ready_based:
        return out.flits / (out.ready_last - out.ready_first + 1)
    return out.flits / (out.last - out.first + 1)


def measurements_from_report(params: SwitchParams, sim: str, result) -> TimingMeasurement:
    """Turn the timing scenario's phase statistics into a TimingMeasurement."""
    sc = result.by_name("timing")
    if not sc.passed:
        raise cosim.CosimError(f"timing scenario failed on {sim}: {sc.error}")
    phases = {ph.label: ph for ph in sc.phases}
    latency: dict[str, int] = {}
    throughput: dict[str, dict[str, float]] = {}
    after_bp = []
    after_ready = []
    for kind in KINDS:
        throughput[kind] = {}
        for cond in ("ready", "backpressure"):
            ph = phases[f"{kind} {cond}"]
            outs = ph.out.values()
            if not outs:
                raise cosim.CosimError(f"{kind} {cond}: no output flit measured")
            rate = min(_window_rate(o, cond == "backpressure") for o in outs)
            throughput[kind][cond] = round(rate, 4)
            if cond == "ready":
                latency[kind] = min(o.valid_first for o in outs) - ph.in_first
                if kind != KINDS[0]:
                    after_bp.append(ph.select_cycles)
            else:
                after_ready.append(ph.select_cycles)
    writes = [ph.slot_write_cycles for ph in sc.phases if ph.slot_write_cycles is not None]
    idle = [
        phases[KINDS[0] + " ready"].select_cycles,
        phases["idle reconfiguration"].select_cycles,
    ]
    return TimingMeasurement(
        variant=params.name,
        simulator=cosim.simulator_version(sim),
        latency_cycles=max(latency.values()),
        latency_by_kind=latency,
        throughput=throughput,
        reconfiguration_idle_cycles=max(idle),
        reconfiguration_after_traffic_cycles=max(after_ready),
        reconfiguration_after_backpressure_cycles=max(after_bp),
        slot_write_cycles=max(writes),
        simulated_cycles=sc.cycles,
        wall_seconds=sc.wall_seconds,
    )


def measure_timing(
    params: SwitchParams, sim: str = "verilator", root: Path = cosim.DEFAULT_ROOT, seed: int = 1
) -> TimingMeasurement:
    """Run the timing scenario on ``sim`` and return what it measured."""
    result = cosim.run(params, sim, [timing_scenario(params, seed)], label="timing", root=root)
    return measurements_from_report(params, sim, result)


def measure_timing_card(
    params: SwitchParams,
    sim: str = "verilator",
    out_dir: Path = TIMING_DIR,
    root: Path = cosim.DEFAULT_ROOT,
    seed: int = 1,
    packet_costs: bool = False,
) -> Path:
    """Measure the variant on ``sim`` and write its card to ``out_dir/<variant>.json``.

    With ``packet_costs`` the packet-mode switch of the same parameters is co-simulated too
    (fredfab.sim.verify.packet.timing) and its measured costs fill the card's packet fields.
    Returns the card's path. The full measurements are written to
    ``root/timing/<sim>/<variant>.json`` (and ``<variant>.packet.json``). Raises CosimError
    if any output flit mismatched or any delivery failed its check.
    """
    m = measure_timing(params, sim, root, seed)
    card = m.card(params)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{params.name}.json"
    write_text(path, card.to_json())
    details = Path(root) / "timing" / sim / f"{params.name}.json"
    details.parent.mkdir(parents=True, exist_ok=True)
    write_text(details, json.dumps(asdict(m), indent=1) + "\n")
    if packet_costs:
        from fredfab.hw.packet.params import PacketParams
        from fredfab.sim.verify.packet.timing import add_packet_costs, measure_packet_costs

        pm = measure_packet_costs(PacketParams(params), sim, root)
        add_packet_costs(path, pm, details.with_suffix(".packet.json"))
    return path


__all__ = [
    "TimingMeasurement",
    "kind_flows",
    "measure_timing",
    "measure_timing_card",
    "timing_scenario",
]
