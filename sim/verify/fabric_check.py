"""Cross-check: the cycles a collective takes on the fabric RTL against the system model.

The system model (sim/engines/system.simulate) runs the same requests on a model of the same
fabric at the RTL's rates (``model_fabric``): the clock is 1 GHz, a lane of a link carries one
flit per cycle (a switch-to-switch bundle of ``lanes`` ports carries that many flits per
cycle), every link's latency is the RTL's ``link_delay`` register slices, and the switch
timing card has throughput 1.0 for every kind (the switch moves one flit per cycle per port),
no reconfiguration time (the measurement starts at the first flit) and the latency of a
switch of the fabric. The system model gives every switch one latency (one timing card); the
RTL's switches differ when their port counts do (FRED-D: Fred_3(12) L1, Fred_3(20) L2, more
Clos stages), so the card takes the latency of the L1 switches and each link leaving a switch
of another latency carries the difference (``exact_latency``); with ``exact_latency=False``
the model keeps its single latency, and the difference shows.

Measured cycles: from the first input flit accepted to the last output flit delivered, both
inclusive, on a fabric that starts empty, with no idle cycles and no backpressure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fredfab.hw.fabric_params import FabricParams
from fredfab.model.system.elements import Link
from fredfab.model.system.fabric import Fabric
from fredfab.model.system.switch_timing import SwitchTiming
from fredfab.model.timing_card import KINDS, default_card
from fredfab.sim.verify.fabric_scenarios import FabricOp
from fredfab.sim.verify.report import ScenarioReport

#: The cross-check's clock: cycles are seconds * CLOCK_HZ.
CLOCK_HZ = 1e9


def flit_bytes(params: FabricParams) -> int:
    """Bytes of one simulated flit (lanes x element bytes)."""
    et = params.switch_params(params.wiring.switches[0]).element
    return params.lanes * et.bits // 8


def switch_latencies(params: FabricParams) -> dict[int, int]:
    """Latency in cycles of every switch (by fabric node)."""
    return {s.node: params.switch_params(s).latency_cycles for s in params.wiring.switches}


def model_fabric(params: FabricParams, exact_latency: bool = True) -> Fabric:
    """The fabric of ``params`` at the RTL's rates and latencies (module docstring)."""
    fab = params.fabric
    lat = switch_latencies(params)
    l1 = min(s for s in fab.switches if fab.nodes[s].level == 1)
    card = replace(
        default_card(),
        latency_cycles=float(lat[l1]),
        reconfiguration_cycles=0.0,
        throughput={k: {"ready": 1.0, "backpressure": 1.0} for k in KINDS},
        source="fabric RTL cross-check",
    )
    fb = flit_bytes(params)
    links = []
    for lk in fab.links:
        # A bundle of lanes between two switches carries one flit per cycle per lane.
        child = lk.src if fab.parent[lk.src] == lk.dst else lk.dst
        lanes = fab.lanes[child] if fab.nodes[child].kind == "switch" else 1
        extra = lat[lk.src] - lat[l1] if exact_latency and lk.src in lat else 0
        cycles = params.link_delay + extra
        links.append(Link(lk.id, lk.src, lk.dst, fb * CLOCK_HZ * lanes, cycles / CLOCK_HZ))
    timing = SwitchTiming(card=card, clock_hz=CLOCK_HZ, flit_bytes=fb)
    return Fabric(
        f"{fab.name}-rtl",
        fab.nodes,
        links,
        "tree",
        in_switch=True,
        switch_m=fab.switch_m,
        timing=timing,
        description=f"{fab.name} at the RTL's rates (fabric cross-check)",
    )


def predicted_cycles(
    params: FabricParams, op: FabricOp, flits: int, exact_latency: bool = True
) -> float:
    """The system model's cycles for ``op`` with ``flits`` flits per sender."""
    from fredfab.sim.engines.system import simulate

    result = simulate(model_fabric(params, exact_latency), op.requests(flits * flit_bytes(params)))
    return result.time * CLOCK_HZ


def measured_cycles(report: ScenarioReport, phase: int = 0) -> int:
    """First input accepted to last output delivered, inclusive, of one phase."""
    st = report.phases[phase]
    last = max(o.last for o in st.out.values() if o.last is not None)
    return last - st.in_first + 1


@dataclass(frozen=True)
class CheckRow:
    """One collective: measured and predicted cycles."""

    label: str
    flits: int
    measured: int
    predicted: float
    predicted_single_latency: float

    @property
    def error(self) -> float:
        """Relative difference of the prediction from the measurement."""
        return (self.predicted - self.measured) / self.measured


def cross_check(
    params: FabricParams,
    ops: list[FabricOp],
    sim: str,
    flits: int = 64,
    seed: int = 0,
    root=None,
) -> list[CheckRow]:
    """Run every op as its own phase on an empty, never stalled fabric; compare each
    phase's cycles with the system model's. Raises AssertionError if the RTL's results
    are wrong (the comparison would mean nothing)."""
    from fredfab.sim.verify import cosim
    from fredfab.sim.verify.fabric_scenarios import FabricScenarioBuilder

    b = FabricScenarioBuilder(params, seed)
    sc = b.scenario("cross_check", ops, flits=flits, drain=True)
    for ph in sc.phases:
        ph.wait_before = 2
    result = cosim.run(
        params, sim, [sc], label="cross_check", root=root or cosim.shared_build_root()
    )
    assert result.passed, result.summary()
    report = result.scenarios[0]
    return [
        CheckRow(
            op.label,
            flits,
            measured_cycles(report, i),
            predicted_cycles(params, op, flits),
            predicted_cycles(params, op, flits, exact_latency=False),
        )
        for i, op in enumerate(ops)
    ]
