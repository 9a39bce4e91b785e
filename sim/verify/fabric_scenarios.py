"""Co-simulation scenarios of a fabric: collectives over its NPUs, routed switch by switch.

A *fabric operation* (``FabricOp``) is one phase: concurrent collectives over disjoint groups
of NPUs, each one FRED tree flow (a hierarchical All-Reduce, a Reduce, a broadcast, or a
point-to-point transfer), e.g. one phase of a 3D-parallel strategy (every MP group's
All-Reduce at once). ``FabricScenarioBuilder.phase`` routes it through the fabric router
(model/switch/fabric_router.py), packs every switch's configuration into the fabric's words
(hw/fabric.py: the switches' words one after the other), draws the NPUs' data and computes
what every receiving NPU must get: the golden collective (``Collective.expected``) evaluated in
the order the fabric adds (``FabricRouting.result_tree``: the root switch's reduction tree with
each leaf replaced by the tree of the switch below), so floats are checked bit for bit too.

Each operation also gives the system model's requests for it (``FabricOp.requests``), which the
cross-check (fredfab.sim.verify.fabric_check) simulates on the same fabric.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fredfab.hw.fabric_params import FabricParams
from fredfab.model import collectives as col
from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.dtypes import random_data
from fredfab.model.errors import InputError
from fredfab.model.switch.fabric_router import FabricRouting, route_flows
from fredfab.model.switch.flow import Flow
from fredfab.model.system.placement import Strategy
from fredfab.model.system.request import CollectiveRequest
from fredfab.sim.verify.scenario_file import Phase, Scenario
from fredfab.sim.verify.scenarios import ScenarioBuilder
from fredfab.sim.verify.traffic import pack, packet_lasts

#: Fabric operations by name (``fred cosim --fabric ... --op``).
FABRIC_OPS = ("all-reduce", "reduce", "multicast")


@dataclass(frozen=True)
class Part:
    """One collective of a phase and the system model's request for the same transfer."""

    collective: col.Collective
    request_op: str
    group: tuple[int, ...]
    root: int | None = None


@dataclass(frozen=True)
class FabricOp:
    """A phase: concurrent collectives over disjoint NPU groups, one tree flow each."""

    label: str
    parts: tuple[Part, ...]

    @property
    def flows(self) -> list[Flow]:
        flows = []
        for p in self.parts:
            (step,) = p.collective.steps()  # the fabric runs one-step collectives
            flows += [t.flow for t in step.transfers]
        return flows

    def requests(self, size_bytes: float) -> list[CollectiveRequest]:
        return [
            CollectiveRequest(p.request_op, p.group, size_bytes, root=p.root, label=self.label)
            for p in self.parts
        ]


def collective_op(name: str, npus: Sequence[int], root: int = 0) -> FabricOp:
    """``all-reduce``, ``reduce`` (to ``root``) or ``multicast`` (from ``root``) over ``npus``."""
    g = tuple(npus)
    if root not in g:
        raise InputError(f"fabric op {name}: root {root} is not one of the NPUs {list(g)}")
    # The root's own data never crosses the fabric (model/system/schedule.py tree_flow: a
    # reduce's sink adds its own buffer locally; a multicast's source keeps its own), so
    # the switches carry a Reduce of the others to the root and a Multicast to the others.
    others = tuple(u for u in g if u != root)
    if name == "all-reduce":
        part = Part(col.AllReduce(g), CollectiveKind.ALL_REDUCE, g)
    elif name == "reduce":
        part = Part(col.Reduce(others, root), CollectiveKind.REDUCE, g, root)
    elif name == "multicast":
        part = Part(col.Multicast(root, others), CollectiveKind.BROADCAST, g, root)
    else:
        raise InputError(f"fabric op {name!r} unknown; use one of {', '.join(FABRIC_OPS)}")
    return FabricOp(f"{name} over {len(g)} NPUs", (part,))


def strategy_ops(strategy: Strategy) -> list[FabricOp]:
    """The MP, DP and PP phases of a 3D-parallel strategy (placement.py): every group's
    All-Reduce at once, and every PP pair's transfer at once. Size-1 dimensions are left out."""
    ops = []
    for what, groups in (("MP", strategy.mp_groups()), ("DP", strategy.dp_groups())):
        if len(groups[0]) > 1:
            parts = tuple(Part(col.AllReduce(g), CollectiveKind.ALL_REDUCE, g) for g in groups)
            ops.append(FabricOp(f"{strategy} {what}", parts))
    if strategy.pp > 1:
        pairs = strategy.pp_pairs()
        parts = tuple(Part(col.Unicast(a, b), CollectiveKind.P2P, (a, b)) for a, b in pairs)
        ops.append(FabricOp(f"{strategy} PP", parts))
    return ops


class FabricScenarioBuilder:
    """Builds phases and scenarios for one fabric variant; one seeded generator throughout."""

    def __init__(self, params: FabricParams, seed: int = 0) -> None:
        self.params = params
        self.et = params.switch_params(params.wiring.switches[0]).element
        self.rng = np.random.default_rng(seed)
        self._slot = 0

    def next_slot(self) -> int:
        self._slot = self._slot % (self.params.slots - 1) + 1
        return self._slot

    def route(self, op: FabricOp) -> FabricRouting:
        p = self.params
        return route_flows(p.fabric, op.flows, m=p.switch_m, arch=p.arch)

    def words(self, routing: FabricRouting) -> list[int]:
        words: list[int] = []
        for site in self.params.wiring.switches:
            words += routing.config(site.node).to_words(self.params.word_width)
        return words

    def phase(self, op: FabricOp, flits: int = 4, max_packet: int = 3) -> Phase:
        """``op`` with ``flits`` flits per sender, in packets of 1..``max_packet`` flits.

        Raises RuntimeError if two receivers of one flow would get different reduction
        orders: the fabric would then not compute one collective.
        """
        et, lanes = self.et, self.params.lanes
        routing = self.route(op)
        send: dict[int, list] = {}
        expect: dict[int, list] = {}
        for part in op.parts:
            coll = part.collective
            (step,) = coll.steps()
            (transfer,) = step.transfers
            flow = transfer.flow
            trees = {routing.result_tree(q) for q in flow.ops}
            if len(trees) != 1:
                raise RuntimeError(f"{op.label}: receivers of {flow} add in different orders")
            tree = trees.pop()
            last = packet_lasts(self.rng, flits, max_packet)
            inputs = {
                q: random_data(self.rng, et, (1, flits * lanes), edge_cases=True)
                for q in coll.senders()
            }
            for q, arr in inputs.items():
                send[q] = list(zip(pack(arr.reshape(flits, lanes), et), last, strict=True))
            with np.errstate(invalid="ignore", over="ignore"):
                out = coll.expected(inputs, et, lambda f, t=tree: t)
            for q, arr in out.items():
                expect[q] = list(zip(pack(arr.reshape(flits, lanes), et), last, strict=True))
        return Phase(
            label=op.label,
            slot=self.next_slot(),
            words=self.words(routing),
            flows=[str(f) for f in op.flows],
            send=send,
            expect=expect,
        )

    def scenario(
        self,
        name: str,
        ops: Sequence[FabricOp],
        flits: int = 4,
        idle: str = "none",
        stall: str = "none",
        seed: int = 1,
        drain: bool = False,
    ) -> Scenario:
        """The phases of ``ops`` in order under the named idle/stall patterns; with ``drain``
        each phase starts on an empty fabric (for timing)."""
        phases = [self.phase(op, flits) for op in ops]
        for ph in phases:
            ph.drain = drain
        sc = ScenarioBuilder.scenario(name, phases, idle, stall, seed)
        sc.timeout_cycles += 20 * self.params.link_delay * len(phases)
        return sc
