"""What a packet scenario measured, as JSON for the runner: outcome, cycles, goodput,
retransmissions, faults, phase changes."""

from __future__ import annotations

from fredfab.model.packet.format import VC_CTRL
from fredfab.sim.verify.packet.loop import LoopResult

REPORT_ENV = "FRED_PACKET_REPORT"


def result_dict(result: LoopResult, wall_seconds: float, cpu_seconds: float = 0.0) -> dict:
    npus = result.npus
    delivered = sum(len(r.got) for n in npus for r in n.receivers)
    flits = {
        "data_packets_sent": sum(n.stats.data_packets_sent for n in npus),
        "retransmissions": sum(n.retransmissions for n in npus),
        "control_sent": sum(n.stats.control_sent for n in npus),
        "bad_packets_received": sum(n.stats.bad_packets for n in npus),
        "sender_timeouts": sum(n.stats.timeouts for n in npus),
        "rewinds": sum(s.gbn.rewinds for n in npus for s in n.senders),
        "syncs_sent": sum(n.stats.syncs_sent for n in npus),
        # Link-level retry at the NPUs' ends: replays of what they sent, and flits of the
        # switch's they found lost or damaged (the switch's own ends are inside the RTL).
        "link_replays": sum(n.retry_out.replays for n in npus),
        "link_rejected": sum(n.retry_in.rejected for n in npus),
    }
    return {
        "passed": result.passed,
        "errors": result.errors[:10],
        "cycles": result.cycles,
        "packets_delivered": delivered,
        **flits,
        "faults": result.faults,
        "reconfiguring_cycles": result.reconfiguring_cycles,
        "phases": [[c.cycle, c.vc, c.index] for c in result.phases],
        # Per receiving stream "port:(vc, index, src)": first and last delivery cycle, packets.
        "deliveries": {
            f"{n.port}:{key}": [n.first_delivery.get(key), n.last_delivery.get(key), len(r.got)]
            for n in npus
            for key, r in n.rx_by_key.items()
        },
        # Data VCs: a control packet is one flit and returns its credit sooner.
        "credit_rtt": _summary([t for n in npus for vc, t in n.credit_rtts if vc != VC_CTRL]),
        "wall_seconds": round(wall_seconds, 3),
        # The simulator process's CPU time for the scenario (the machine may be shared).
        "cpu_seconds": round(cpu_seconds, 3),
    }


def _summary(values: list[int]) -> dict | None:
    """min / median / max / count of cycle counts (None when there are none)."""
    if not values:
        return None
    v = sorted(values)
    return {"min": v[0], "median": v[len(v) // 2], "max": v[-1], "n": len(v)}
