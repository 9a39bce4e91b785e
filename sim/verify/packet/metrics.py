"""Figures of a packet run, from the bench's report (report.py): what the scenario had to
deliver, goodput, the per-scenario row that the CLI and the bench print, and the gaps
inside packets on a link."""

from __future__ import annotations

from fredfab.hw.packet.params import PacketParams
from fredfab.model.packet.format import VC_CTRL
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
        "link_replays": report.get("link_replays"),
        "bad_packets": report.get("bad_packets_received"),
        "dropped": faults.get("dropped"),
        "corrupted": faults.get("corrupted"),
        "goodput": round(goodput(report, params), 4),
    }


def packet_gaps(flits) -> list[int]:
    """Per data packet on a link, the longest run of cycles between two of its flits (from
    its head to its last flit): ``flits`` has, per cycle, the link flit or None. Control
    flits and syncs between a packet's flits count as gaps of that packet."""
    last: dict[int, int] = {}  # open packet per data VC: the cycle of its latest flit
    worst: dict[int, int] = {}
    out = []
    for t, f in enumerate(flits):
        if f is None or f.sync or f.vc == VC_CTRL:
            continue
        if f.head:
            last[f.vc], worst[f.vc] = t, 0
            continue
        if f.vc not in last:
            continue
        worst[f.vc] = max(worst[f.vc], t - last[f.vc] - 1)
        last[f.vc] = t
        if f.last:
            out.append(worst.pop(f.vc))
            del last[f.vc]
    return out
