"""The standard packet-mode scenarios: each collective kind on its VC, the three phases of 3D
parallelism at once with random arrival and backpressure, faulty links, unicast All-to-All,
and a preemption.

Port roles follow the paper's placement on a small switch (MP-consecutive): MP groups are
neighbouring pairs, DP reduces across all ports, PP sends from each port to the next.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from fredfab.model.packet.format import UNICAST_INDEX, VC_DP, VC_MP, VC_PP
from fredfab.model.switch.flow import Flow
from fredfab.sim.verify.packet.scenario import LinkHostility, PacketPhase, PacketScenario

#: Slots the scenarios configure (slot 0 is the unicast index).
MP_SLOT, DP_SLOT, PP_SLOT = 1, 2, 3


def mp_flows(ports: int) -> list[Flow]:
    """All-Reduce in neighbouring pairs (the last port alone when P is odd)."""
    return [
        Flow(range(p, min(p + 2, ports)), range(p, min(p + 2, ports))) for p in range(0, ports, 2)
    ]


def dp_flows(ports: int) -> list[Flow]:
    """One All-Reduce over every port."""
    return [Flow(range(ports), range(ports))]


def pp_flows(ports: int) -> list[Flow]:
    """Pipeline sends: port p to port p + 1 (a ring, so every port sends and receives)."""
    return [Flow([p], [(p + 1) % ports]) for p in range(ports)]


def all_to_all(ports: int) -> list[Flow]:
    return [Flow([s], [d]) for s in range(ports) for d in range(ports) if s != d]


def three_phases(ports: int, packets: int, rng: np.random.Generator, spread: int) -> tuple:
    """MP, DP and PP phases starting at random cycles within ``spread``."""
    starts = rng.integers(0, spread + 1, size=3)
    return (
        PacketPhase.of(VC_MP, MP_SLOT, mp_flows(ports), packets, int(starts[0])),
        PacketPhase.of(VC_DP, DP_SLOT, dp_flows(ports), packets, int(starts[1])),
        PacketPhase.of(VC_PP, UNICAST_INDEX, pp_flows(ports), packets, int(starts[2])),
    )


def standard(ports: int, seed: int = 1, packets: int = 12) -> list[PacketScenario]:
    rng = np.random.default_rng(seed)
    busy = LinkHostility(stall=0.3, idle=0.2)
    return [
        PacketScenario(
            "mp_allreduce", (PacketPhase.of(VC_MP, MP_SLOT, mp_flows(ports), packets),), seed
        ),
        PacketScenario(
            "dp_allreduce_backpressure",
            (PacketPhase.of(VC_DP, DP_SLOT, dp_flows(ports), packets),),
            seed,
            busy,
        ),
        PacketScenario(
            "all_to_all_unicast",
            (PacketPhase.of(VC_DP, UNICAST_INDEX, all_to_all(ports), max(2, packets // 4)),),
            seed,
            busy,
        ),
        PacketScenario("three_phases", three_phases(ports, packets, rng, 200), seed, busy),
        PacketScenario(
            "three_phases_faults",
            three_phases(ports, packets, rng, 200),
            seed + 1,
            LinkHostility(drop=0.01, corrupt=0.01, stall=0.3, idle=0.2, burst=0.2, silence=1e-4),
        ),
    ]


def with_fault_rates(
    scenarios: list[PacketScenario],
    drop: float | None,
    corrupt: float | None,
    burst: float | None = None,
    silence: float | None = None,
) -> list[PacketScenario]:
    """The scenarios with ``drop`` / ``corrupt`` / ``burst`` / ``silence`` (where given) on
    the links of every scenario that already has faulty links; the others stay clean, so
    that they keep checking a lossless run."""
    given = {"drop": drop, "corrupt": corrupt, "burst": burst, "silence": silence}
    out = []
    for s in scenarios:
        if s.links.drop or s.links.corrupt:
            links = replace(s.links, **{k: v for k, v in given.items() if v is not None})
            s = replace(s, links=links)
        out.append(s)
    return out
