"""A packet-mode scenario: the phases that run (each a VC, a slot and its flows, or unicast
pairs), when each starts, how many packets, and how hostile the links are.

Written to JSON for the cocotb bench (schema ``fred-packet-scenarios/1``) and read back there.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fredfab.model.packet.faults import FaultRates
from fredfab.model.packet.format import DATA_VCS, SEQ_MOD, UNICAST_INDEX
from fredfab.model.packet.gbn import ACK_EVERY
from fredfab.model.switch.flow import Flow

PACKET_SCENARIO_SCHEMA = "fred-packet-scenarios/1"
PACKET_SCENARIOS_ENV = "FRED_PACKET_SCENARIOS"


@dataclass(frozen=True)
class PacketPhase:
    """``flows`` ((input ports, output ports) pairs: model/switch/flow.py ``Flow``) run on ``vc``
    in configuration slot ``slot``; slot 0 means unicast: every flow is one sender to one
    receiver, routed by destination. Each flow sends ``packets`` packets; its senders start
    at cycle ``start``."""

    vc: int
    slot: int
    flows: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]
    packets: int
    start: int = 0

    def __post_init__(self) -> None:
        if self.vc not in DATA_VCS:
            raise ValueError(f"vc must be one of {DATA_VCS}, got {self.vc}")
        if self.packets < 1:
            raise ValueError(f"packets must be >= 1, got {self.packets}")
        if self.slot == UNICAST_INDEX:
            for f in self.flow_list:
                if len(f.ips) != 1 or len(f.ops) != 1:
                    raise ValueError(f"unicast flows are one sender to one receiver, got {f}")

    @property
    def flow_list(self) -> list[Flow]:
        return [Flow(ips, ops) for ips, ops in self.flows]

    @classmethod
    def of(cls, vc: int, slot: int, flows: list[Flow], packets: int, start: int = 0):
        pairs = tuple((tuple(sorted(f.ips)), tuple(sorted(f.ops))) for f in flows)
        return cls(vc, slot, pairs, packets, start)


@dataclass(frozen=True)
class LinkHostility:
    """drop / corrupt: per-flit fault rates on every link, both directions; burst: the
    probability that a fault covers several consecutive flits; silence: the per-cycle
    probability that a link goes silent for a while (model/packet/faults.py); stall:
    probability that an NPU holds a freed buffer slot one more cycle before returning its
    credit (backpressure); idle: probability that an NPU sends nothing in a cycle it could."""

    drop: float = 0.0
    corrupt: float = 0.0
    stall: float = 0.0
    idle: float = 0.0
    burst: float = 0.0
    silence: float = 0.0

    @property
    def faults(self) -> FaultRates:
        return FaultRates(self.drop, self.corrupt, self.burst, self.silence)


@dataclass(frozen=True)
class PacketScenario:
    name: str
    phases: tuple[PacketPhase, ...]
    seed: int = 1
    links: LinkHostility = field(default_factory=LinkHostility)
    #: Go-Back-N: packets in flight per stream, and the cycles without progress after which
    #: a sender rewinds / a receiver repeats its NACK. Receivers ACK every 16 packets (the
    #: paper's rule), so a window of twice that keeps a sender busy between two ACKs; the
    #: timeouts are a few packet round trips (docs/cosim.md).
    window: int = 32
    sender_timeout: int = 600
    receiver_timeout: int = 400
    max_cycles: int = 200_000
    #: Slow receivers: (port, first cycle, end cycle) windows in which the NPU at that port
    #: returns no credit to the switch.
    credit_holds: tuple[tuple[int, int, int], ...] = ()

    def __post_init__(self) -> None:
        if not ACK_EVERY < self.window < SEQ_MOD // 2:
            raise ValueError(
                f"{self.name}: window must exceed the ACK interval ({ACK_EVERY} packets) and "
                f"stay below {SEQ_MOD // 2}, got {self.window}"
            )
        # What the switch's sequence numbers are kept for (docs/switch-rtl.md, "Control
        # unit"): a configured slot carries one stream per input, on one VC, and a VC one
        # configured phase at a time (two at once could wait on each other's heads).
        by_vc: dict[int, int] = {}
        seen: set[int] = set()
        for ph in self.phases:
            if ph.slot == UNICAST_INDEX:
                continue
            if ph.slot in seen:
                raise ValueError(f"{self.name}: slot {ph.slot} is used by two phases")
            seen.add(ph.slot)
            if ph.vc in by_vc:
                raise ValueError(
                    f"{self.name}: VC {ph.vc} carries two configured phases (slots "
                    f"{by_vc[ph.vc]} and {ph.slot}); a VC serves one at a time"
                )
            by_vc[ph.vc] = ph.slot

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> PacketScenario:
        d = dict(d)
        d["phases"] = tuple(
            PacketPhase(**{**p, "flows": tuple((tuple(i), tuple(o)) for i, o in p["flows"])})
            for p in d["phases"]
        )
        d["links"] = LinkHostility(**d["links"])
        d["credit_holds"] = tuple(tuple(h) for h in d.get("credit_holds", ()))
        return cls(**d)


@dataclass
class PacketScenarioFile:
    manifest: Path
    scenarios: list[PacketScenario]

    def write(self, path: Path) -> None:
        path.write_text(
            json.dumps(
                {
                    "schema": PACKET_SCENARIO_SCHEMA,
                    "manifest": str(self.manifest),
                    "scenarios": [s.to_dict() for s in self.scenarios],
                },
                indent=1,
            )
        )

    @classmethod
    def read(cls, path: Path) -> PacketScenarioFile:
        d = json.loads(Path(path).read_text())
        if d.get("schema") != PACKET_SCENARIO_SCHEMA:
            raise ValueError(f"{path} is not a {PACKET_SCENARIO_SCHEMA} file")
        return cls(Path(d["manifest"]), [PacketScenario.from_dict(s) for s in d["scenarios"]])
