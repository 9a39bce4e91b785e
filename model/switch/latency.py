"""Switch pipeline latency: the one formula that the generator, its manifest and the
built-in timing card share.

A flit accepted at a switch input in cycle t is valid at its output in cycle t + latency,
where latency = (registered nodes on the longest input-to-output path) * (register slices
per registered node output). Every Clos path crosses every stage, so on the Clos this is
the latency of every flow; on the crossbar it is the longest path (a flow whose segment
completes below the root of the tree arrives earlier).
"""

from __future__ import annotations

from fredfab.model.errors import InputError
from fredfab.model.switch.graph import SwitchGraph


def latency_cycles(graph: SwitchGraph, regs_per_stage: int) -> int:
    """Input accepted to output valid, in cycles, for the longest path of ``graph``."""
    if isinstance(regs_per_stage, bool) or not isinstance(regs_per_stage, int):
        raise InputError(f"regs_per_stage must be an integer, got {regs_per_stage!r}")
    if regs_per_stage < 0:
        raise InputError(f"regs_per_stage must be >= 0, got {regs_per_stage}")
    return graph.register_depth * regs_per_stage
