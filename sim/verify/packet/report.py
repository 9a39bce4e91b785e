"""What a packet scenario measured, as JSON for the runner: outcome, cycles, goodput,
retransmissions, faults, phase changes."""

from __future__ import annotations

from fredfab.sim.verify.packet.loop import LoopResult

REPORT_ENV = "FRED_PACKET_REPORT"


def result_dict(result: LoopResult, wall_seconds: float) -> dict:
    npus = result.npus
    delivered = sum(len(r.got) for n in npus for r in n.receivers.values())
    flits = {
        "data_packets_sent": sum(n.stats.data_packets_sent for n in npus),
        "retransmissions": sum(n.retransmissions for n in npus),
        "control_sent": sum(n.stats.control_sent for n in npus),
        "bad_packets_received": sum(n.stats.bad_packets for n in npus),
        "sender_timeouts": sum(n.stats.timeouts for n in npus),
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
        "deliveries": {
            f"{n.port}:{key}": [n.first_delivery.get(key), n.last_delivery.get(key)]
            for n in npus
            for key in n.receivers
        },
        "wall_seconds": round(wall_seconds, 3),
    }
