"""Figures of a packet run, from the bench's report (report.py): what the scenario had to
deliver, goodput and the per-scenario row that the CLI and the bench print."""

from __future__ import annotations

from fredfab.hw.packet.params import PacketParams
from fredfab.sim.verify.packet.scenario import PacketScenario


def expected_packets(scenario: PacketScenario) -> int:
    """Packets the receivers of ``scenario`` must deliver, from its definition alone: each
    output of a flow receives the flow's packets once (a multicast or a reduction delivers
    a copy to each of its outputs)."""
    return sum(len(f.ops) * ph.packets for ph in scenario.phases for f in ph.flow_list)


def goodput(report: dict, params: PacketParams) -> float:
    """Payload flits delivered per cycle per port: 1.0 would be every port receiving a
    payload flit every cycle (headers, ACK/NACKs and retransmissions do not count)."""
    cycles = report.get("cycles") or 0
    if not cycles:
        return 0.0
    flits = report.get("packets_delivered", 0) * params.fmt.packet_flits
    return flits / cycles / params.ports


def scenario_row(name: str, report: dict, params: PacketParams) -> dict:
    """One table row: the scenario's outcome and what it cost."""
    faults = report.get("faults") or {}
    return {
        "scenario": name,
        "passed": bool(report.get("passed")),
        "cycles": report.get("cycles"),
        "packets": report.get("packets_delivered"),
        "retransmissions": report.get("retransmissions"),
        "bad_packets": report.get("bad_packets_received"),
        "dropped": faults.get("dropped"),
        "corrupted": faults.get("corrupted"),
        "goodput": round(goodput(report, params), 4),
    }
