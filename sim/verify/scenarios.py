"""Co-simulation scenarios: phases of routed flows with their traffic and expected outputs.

Everything the cocotb bench needs is computed here, in Python, from the models: routing
(model/switch/router.py), configuration words (model/switch/config.py), packet data
(model/dtypes.py, edge cases included) and expected outputs (the functional switch model,
model/switch/switch_model.py, which follows the routed reduction order). Collective
scenarios take their steps from model/collectives.py, one phase per step, and are checked
against the collective's own definition (``Collective.expected`` with the routed order)
before they are handed to the simulator, so the bench's expectations are the golden
collective, bit for bit.

Slots: a phase with a configuration takes the next slot of the rotation 1..K-1 (slot 0 keeps
the reset default), so a phase never loads into the slot that is active while it loads, and
long schedules (Reduce-Scatter over 8 ports is 8 phases) reload slots as they go.

Scenarios are fredfab.sim.verify.scenario_file dataclasses; fredfab.sim.verify.cocotb_bench
(sequencer.py) says how they run.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fredfab.hw.params import SwitchParams
from fredfab.model import collectives as col
from fredfab.model.dtypes import random_data, to_bits
from fredfab.model.errors import InputError
from fredfab.model.switch.flow import Flow
from fredfab.model.switch.flowgen import random_flow_set
from fredfab.model.switch.router import RouteConflict, Routing
from fredfab.model.switch.switch_model import FunctionalSwitch
from fredfab.sim.verify.cocotb_bench.patterns import Always, Pattern, Periodic, RandomPause, Stalls
from fredfab.sim.verify.scenario_file import Phase, Scenario
from fredfab.sim.verify.traffic import Traffic, flow_traffic, packet_lasts, traffic_from_data

#: Input idle / output readiness patterns by name, as in the verilog-axis benches.
PATTERNS: dict[str, Pattern] = {
    "none": Always(),
    "random": RandomPause(0.4),
    "periodic": Periodic((1, 1, 1, 0)),
    "stalls": Stalls(go=(1, 12), pause=(8, 40)),
}
PATTERN_NAMES = tuple(PATTERNS)


class ScenarioBuilder:
    """Builds phases and scenarios for one switch variant; one seeded generator throughout."""

    def __init__(self, params: SwitchParams, seed: int = 0) -> None:
        self.params = params
        self.sw = FunctionalSwitch(params.ports, params.m, params.element, arch=params.arch)
        self.rng = np.random.default_rng(seed)
        self._slot = 0

    # ------------------------------------------------------------------ phases

    def next_slot(self) -> int:
        self._slot = self._slot % (self.params.slots - 1) + 1
        return self._slot

    def _phase(
        self, label: str, routing: Routing | None, traffic: Traffic, slot: int | None
    ) -> Phase:
        return Phase(
            label=label,
            slot=slot,
            words=None if slot is None else routing.config.to_words(self.params.word_width),
            flows=[str(f) for f in routing.flows] if routing is not None else [],
            send={p: list(v) for p, v in traffic.send.items()},
            expect={p: list(v) for p, v in traffic.expect.items()},
        )

    def route(self, flows: Sequence[Flow]) -> Routing:
        return self.sw.route(flows)

    def flows_phase(
        self,
        flows: Sequence[Flow] | Routing,
        label: str,
        packets: int = 2,
        max_packet: int = 3,
        edge_cases: bool = True,
        select: bool = True,
    ) -> Phase:
        """A phase running ``flows`` with random packets (its own slot unless not select)."""
        routing = flows if isinstance(flows, Routing) else self.route(flows)
        traffic = flow_traffic(
            self.sw, routing, self.rng, self.params.lanes, packets, max_packet, edge_cases
        )
        return self._phase(label, routing, traffic, self.next_slot() if select else None)

    def random_routing(self, min_flows: int = 1) -> Routing:
        P = self.params.ports
        while True:
            n = int(self.rng.integers(min(min_flows, P), P + 1))
            try:
                return self.route(random_flow_set(self.rng, P, n_flows=n))
            except RouteConflict:
                continue

    def collective_phases(
        self, coll: col.Collective, flits: int = 3, max_packet: int = 2
    ) -> list[Phase]:
        """One phase per step of ``coll``; every chunk is ``flits`` flits of edge-case data.

        Raises RuntimeError if the phases' expected outputs, assembled into the collective's
        output buffers, differ from ``coll.expected`` in the routed order: the bench would
        then not be checking the collective.
        """
        et, lanes = self.sw.et, self.params.lanes
        chunk = flits * lanes
        inputs = {
            p: random_data(self.rng, et, (coll.in_chunks, chunk), edge_cases=True)
            for p in coll.senders()
        }
        outputs: dict[int, np.ndarray] = {}
        trees = {}
        phases = []
        for i, step in enumerate(coll.steps()):
            routing = self.route(step.flows)
            data, lasts = {}, {}
            for t in step.transfers:
                lasts[t.flow] = packet_lasts(self.rng, flits, max_packet)
                for ip in t.flow.ips:
                    data[ip] = inputs[ip][t.src_chunk].reshape(flits, lanes)
            traffic, outs = traffic_from_data(self.sw, routing, data, lasts)
            for t in step.transfers:
                trees[(i, t.flow)] = routing.tree_of(t.flow)
                for op in t.flow.ops:
                    buf = outputs.setdefault(op, np.zeros((coll.out_chunks, chunk), et.dtype))
                    buf[t.dst_chunk] = outs[op]
            label = f"{coll.name} step {i}: " + " ".join(str(f) for f in step.flows)
            phases.append(self._phase(label, routing, traffic, self.next_slot()))
        for port, src, dst in coll.local_copies():
            outputs.setdefault(port, np.zeros((coll.out_chunks, chunk), et.dtype))[dst] = inputs[
                port
            ][src]
        with np.errstate(invalid="ignore", over="ignore"):
            want = coll.expected(inputs, et, col.order_from_trees(trees))
        for p, buf in want.items():
            if not np.array_equal(to_bits(buf, et), to_bits(outputs[p], et)):
                raise RuntimeError(f"{coll.name}: the switch model disagrees at port {p}")
        return phases

    # ------------------------------------------------------------------ scenarios

    @staticmethod
    def scenario(
        name: str,
        phases: list[Phase],
        idle: str = "none",
        stall: str = "none",
        seed: int = 1,
        doc: str = "",
    ) -> Scenario:
        """A scenario of ``phases`` under the patterns named ``idle`` and ``stall``
        (PATTERNS); its timeout grows with the phases' flits and waits."""
        flits = sum(ph.sent_flits for ph in phases)
        waits = sum(ph.wait_before for ph in phases)
        return Scenario(
            name=name,
            phases=phases,
            doc=doc or name,
            seed=seed,
            idle=PATTERNS[idle],
            stall=PATTERNS[stall],
            # Generous: long stalls pause outputs for up to 40 cycles at a time.
            timeout_cycles=4000 + 60 * flits + waits + 200 * len(phases),
        )


def collectives_for(P: int, rng: np.random.Generator) -> dict[str, col.Collective]:
    """One of each collective kind over all P ports (roots and sources at random)."""
    group = tuple(int(p) for p in rng.permutation(P))
    root, src = int(rng.integers(P)), int(rng.integers(P))
    return {
        "all_reduce": col.AllReduce(group),
        "reduce": col.Reduce(group, root),
        "multicast": col.Multicast(src, group),
        "reduce_scatter": col.ReduceScatter(group),
        "all_gather": col.AllGather(group),
        "gather": col.Gather(group, root),
        "all_to_all": col.AllToAll(group),
    }


def _standard_phases(b: ScenarioBuilder) -> list[tuple[str, list[Phase], str]]:
    """(name, phases, doc) of every standard scenario, in SCENARIO_NAMES order (the order in
    which they draw from the builder's generator)."""
    P = b.params.ports
    out = [
        (name, b.collective_phases(coll), str(coll))
        for name, coll in collectives_for(P, b.rng).items()
    ]
    # Unicast permutations: two random permutations, then the reverse.
    perms = [b.rng.permutation(P) for _ in range(2)] + [np.arange(P)[::-1]]
    phases = [
        b.flows_phase([Flow([p], [int(q)]) for p, q in enumerate(perm)], f"permutation {k}")
        for k, perm in enumerate(perms)
    ]
    out.append(("unicast_permutations", phases, ""))
    # Several concurrent flows, reconfigured three times under traffic.
    phases = [
        b.flows_phase(b.random_routing(min_flows=2), f"concurrent flows {k}", packets=3)
        for k in range(4)
    ]
    out.append(("concurrent_flows", phases, ""))
    # Reset default: no configuration written, slot 0 (identity unicast) carries traffic.
    identity = [Flow([p], [p]) for p in range(P)]
    phases = [b.flows_phase(identity, "reset default (identity)", select=False)]
    out.append(("reset_default", phases, ""))
    # Reset in the middle of traffic, then the default, then a fresh configuration.
    first = b.flows_phase(b.random_routing(min_flows=2), "interrupted", packets=4, max_packet=4)
    first.reset_after = max(1, first.sent_flits // 3)
    phases = [
        first,
        b.flows_phase(identity, "after reset: default identity", select=False),
        b.flows_phase(b.random_routing(min_flows=2), "after reset: new configuration"),
    ]
    out.append(("reset_mid_traffic", phases, ""))
    return out


def standard_scenarios(
    params: SwitchParams, seed: int = 0, kinds: Sequence[str] | None = None
) -> list[Scenario]:
    """The default suite for one variant: every collective kind (compound ones as serial
    phases), unicast permutations, several concurrent flows over three reconfigurations,
    traffic on the reset default, and reset in the middle of traffic. Idle and backpressure
    patterns rotate with ``seed`` so that a sweep meets every pattern on every scenario."""
    b = ScenarioBuilder(params, seed)
    names = PATTERN_NAMES
    out = []
    for i, (name, phases, doc) in enumerate(_standard_phases(b)):
        idle, stall = names[(i + seed) % len(names)], names[(2 * i + seed + 1) % len(names)]
        out.append(b.scenario(name, phases, idle, stall, seed + i, doc=doc))
    if kinds is not None:
        unknown = set(kinds) - {s.name for s in out}
        if unknown:
            raise InputError(f"unknown scenario(s) {sorted(unknown)}")
        out = [s for s in out if s.name in kinds]
    return out


SCENARIO_NAMES = (
    "all_reduce",
    "reduce",
    "multicast",
    "reduce_scatter",
    "all_gather",
    "gather",
    "all_to_all",
    "unicast_permutations",
    "concurrent_flows",
    "reset_default",
    "reset_mid_traffic",
)
