"""What the packet protocol costs, measured in co-simulation, for the timing card
(model/timing_packet.py names the fields).

Three scenarios on an otherwise idle switch, no faults, no backpressure:

* ``alone``: an MP phase (All-Reduce in pairs) by itself. Its receivers' payload rate
  (payload flits per cycle between their first and last delivery) is what one phase gets;
  the gap to 1 is the header flit and any bubble of the switch. The NPUs' credit round trips
  (head flit sent to credit back; the shortest, a packet that found the switch idle, since
  the others include queueing behind earlier packets) give ``credit_rtt_cycles``; the cycles
  per packet that carry no payload (``packet_flits / rate - packet_flits``: the header flit,
  and any bubble the switch adds) give ``header_flits``.
* ``competing``: the same MP phase and a DP phase (All-Reduce over every port) start
  together. Per VC: the payload rate while both have packets waiting. The served phase's
  rate against its rate alone is ``vc_share``.
* ``preempt``: DP runs first; once it streams, MP arrives. ``preempt_cycles`` is how much
  later MP's first packet arrives than it does on an idle switch (``alone``): the DP packet
  in flight finishing, the drain, the configuration copy and its check.
* ``faulty``: ``alone`` on links that drop and corrupt flits at ``FAULT_RATE`` each. The
  payload rate it loses against ``alone``, per faulted flit of the links, is
  ``retry_cycles``: what one fault costs a link (link-level retry replays it).
"""

from __future__ import annotations

import ast
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from fredfab.hw.packet.params import PacketParams
from fredfab.model.packet.format import VC_DP, VC_MP
from fredfab.sim.atomic import write_text
from fredfab.sim.verify import cosim
from fredfab.sim.verify.packet.cosim import run_packet
from fredfab.sim.verify.packet.scenario import LinkHostility, PacketPhase, PacketScenario
from fredfab.sim.verify.packet.scenarios import DP_SLOT, MP_SLOT, dp_flows, mp_flows

#: Packets per stream: long enough that the first and last packets' edges are a small part
#: of a rate, short enough to simulate in seconds.
PACKETS = 48
#: When MP arrives in ``preempt``: DP has filled its buffers and streams by then.
PREEMPT_AT = 200
#: Drop and corrupt rate of ``faulty``: a few dozen faults in its run, few enough that
#: their costs do not overlap.
FAULT_RATE = 5e-3


@dataclass(frozen=True)
class PacketMeasurement:
    variant: str
    simulator: str
    packet_flits: int
    data_depth: int
    header_flits: int
    preempt_cycles: int
    credit_rtt_cycles: int
    vc_share: float
    retry_cycles: float
    #: Details behind the card fields.
    payload_rate_alone: float  # payload flits per cycle at an MP receiver, MP alone
    payload_rate_competing: dict[str, float]  # per VC, while MP and DP both wait
    first_delivery_alone: int  # cycles from MP's start to its first packet delivered
    first_delivery_preempting: int  # the same with DP running when MP arrives
    credit_rtt: dict  # min / median / max / n over every packet of ``alone``
    payload_rate_faulty: float  # ``alone``'s rate on faulty links
    faults_per_flit: float  # faulted flits of ``faulty`` per flit its links carried
    simulated_cycles: int

    def card_fields(self) -> dict[str, float]:
        return {
            "packet_flits": self.packet_flits,
            "data_depth": self.data_depth,
            "header_flits": self.header_flits,
            "preempt_cycles": self.preempt_cycles,
            "credit_rtt_cycles": self.credit_rtt_cycles,
            "vc_share": self.vc_share,
            "retry_cycles": self.retry_cycles,
        }


def scenarios(ports: int) -> list[PacketScenario]:
    mp = PacketPhase.of(VC_MP, MP_SLOT, mp_flows(ports), PACKETS)
    dp = PacketPhase.of(VC_DP, DP_SLOT, dp_flows(ports), PACKETS)
    late_mp = PacketPhase.of(VC_MP, MP_SLOT, mp_flows(ports), PACKETS // 4, PREEMPT_AT)
    faulty = LinkHostility(drop=FAULT_RATE, corrupt=FAULT_RATE)
    return [
        PacketScenario("alone", (mp,)),
        PacketScenario("competing", (mp, dp)),
        PacketScenario("preempt", (dp, late_mp)),
        PacketScenario("faulty", (mp,), links=faulty),
    ]


def _streams(report: dict, vc: int) -> list[tuple[int, int, int]]:
    """(first, last, packets) of every receiving stream of VC ``vc``."""
    out = []
    for name, (first, last, count) in report["deliveries"].items():
        key = ast.literal_eval(name.split(":", 1)[1])
        if key[0] == vc and count:
            out.append((first, last, count))
    return out


def _rate(streams: list[tuple[int, int, int]], packet_flits: int) -> float:
    """The slowest stream's payload rate between its first and last delivery."""
    return min(
        (count - 1) * packet_flits / (last - first) for first, last, count in streams if count > 1
    )


def measure_packet_costs(
    params: PacketParams, sim: str = "verilator", root: Path = cosim.DEFAULT_ROOT
) -> PacketMeasurement:
    pf = params.fmt.packet_flits
    result = run_packet(params, sim, scenarios(params.ports), label="timing", root=root)
    if not result.passed:
        raise cosim.CosimError(f"packet timing scenarios failed on {sim}:\n{result.summary()}")
    alone, competing, preempt, faulty = (
        result.scenarios[n] for n in ("alone", "competing", "preempt", "faulty")
    )
    mp_alone = _streams(alone, VC_MP)
    rate_alone = _rate(mp_alone, pf)
    # While both wait, the switch serves MP (priority): MP's window is the competition.
    mp_comp, dp_comp = _streams(competing, VC_MP), _streams(competing, VC_DP)
    mp_end = max(last for _, last, _ in mp_comp)
    dp_during = [s for s in dp_comp if s[0] < mp_end]
    rates = {"mp": _rate(mp_comp, pf), "dp": 0.0 if not dp_during else _rate(dp_during, pf)}
    first_alone = min(first for first, _, _ in mp_alone)
    first_late = min(first for first, _, _ in _streams(preempt, VC_MP)) - PREEMPT_AT
    # Link cycles per packet that carry no payload: the header flit and any bubble.
    header = round(pf / rate_alone - pf)
    rtt = alone["credit_rtt"]
    rate_faulty = _rate(_streams(faulty, VC_MP), pf)
    f = faulty["faults"]
    per_flit = (f["dropped"] + f["corrupted"]) / f["flits"]
    retry = max(0.0, rate_alone / rate_faulty - 1) / per_flit
    return PacketMeasurement(
        variant=params.name,
        simulator=cosim.simulator_version(sim),
        packet_flits=pf,
        data_depth=params.fmt.data_depth,
        header_flits=header,
        preempt_cycles=first_late - first_alone,
        credit_rtt_cycles=rtt["min"],
        vc_share=round(rates["mp"] / rate_alone, 4),
        retry_cycles=round(retry, 2),
        payload_rate_alone=round(rate_alone, 4),
        payload_rate_competing={k: round(v, 4) for k, v in rates.items()},
        first_delivery_alone=first_alone,
        first_delivery_preempting=first_late,
        credit_rtt=rtt,
        payload_rate_faulty=round(rate_faulty, 4),
        faults_per_flit=round(per_flit, 6),
        simulated_cycles=sum(r["cycles"] for r in (alone, competing, preempt, faulty)),
    )


def add_packet_costs(card_path: Path, m: PacketMeasurement, details: Path | None = None) -> None:
    """Write the measured packet costs into the timing card at ``card_path`` (the circuit
    card of the same switch parameters), and the full measurement to ``details``."""
    from fredfab.model.timing_card import TimingCard

    card = TimingCard.from_dict(json.loads(Path(card_path).read_text()), str(card_path))
    data = card.to_dict() | m.card_fields()
    data.pop("derived", None)
    card = TimingCard.from_dict(data, str(card_path))  # validates the fields
    write_text(Path(card_path), card.to_json())
    if details is not None:
        details.parent.mkdir(parents=True, exist_ok=True)
        write_text(details, json.dumps(asdict(m), indent=1) + "\n")
