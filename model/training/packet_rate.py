"""Communication at the payload rate of packets, on every fabric.

The network simulator (fredfab.sim.engines.system.simulate) times a collective at the links'
line rate. On the wafer every link carries packet mode's packets (docs/switch-rtl.md, "Packet
mode"): a header flit followed by ``packet_flits`` payload flits, so payload moves at
``1 - header_flits / (header_flits + packet_flits)`` of a link, 8/9 with the built-in timing
card (``PacketCosts.header_payload_fraction``, model/timing_packet.py).

The mesh's routers forward the same packet format as FRED's switches, so the header costs
every fabric the same share of its links: charging it to FRED alone would bias the
comparison against FRED. ``at_payload_rate`` divides every communication part of a training
task graph (MP, PP, DP, and the I/O controllers' inputs and weights, which cross the same
links) by that share; compute is untouched. What a FRED switch adds on top (one phase at a
time by priority, preemptions, its VC share and credit rate) stays with the switch
(fredfab.model.training.phase_priority).

A card with ``header_flits = 0`` gives a share of 1: the graph comes back unchanged.
"""

from __future__ import annotations

from fredfab.model.errors import InputError
from fredfab.model.training.timeline import Task, Timeline

#: Categories of a task's parts that move data over links (every one but compute).
COMM = ("mp", "pp", "dp", "input", "weights")


def at_payload_rate(tl: Timeline, fraction: float) -> Timeline:
    """``tl`` with every communication part's duration divided by ``fraction``, the share of
    a link that carries payload (0 < fraction <= 1); ``tl`` itself when it is 1."""
    if not 0 < fraction <= 1:
        raise InputError(f"payload fraction must be in (0, 1], got {fraction}")
    if fraction == 1.0:
        return tl
    scale = 1.0 / fraction
    out = Timeline()
    # Copied directly: the tasks were checked when they were added.
    out.tasks = [
        Task(
            task.name,
            task.resource,
            tuple((c, d * scale if c in COMM else d) for c, d in task.parts),
            task.where,
        )
        for task in tl.tasks
    ]
    out.deps = [list(d) for d in tl.deps]
    out.queue.update((r, list(q)) for r, q in tl.queue.items())
    return out
