"""What a fabric is made of: nodes and directed links, the limits on their numbers, and the
error a malformed description raises. fredfab.model.system.fabric builds the validated,
routed graph from them; topology builders (the mesh, trees, ASTRA-sim dimensions) use them
without needing the graph."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from fredfab.model.errors import InputError

NODE_KINDS = ("npu", "switch", "io")
#: Node id order of a fabric: NPUs, then I/O controllers, then switches.
NODE_ORDER = {"npu": 0, "io": 1, "switch": 2}

# Size limits of a fabric (docs/system-model.md, "Limits and approximations"). They sit well
# above the paper's 20-NPU wafer and the 1,024-NPU fabrics the benchmarks run, and low enough
# that a typo (radix = [100000, 100000]) fails at once instead of building a graph for hours.
#: NPUs per fabric.
MAX_NPUS = 4096
#: I/O controllers per fabric.
MAX_IO_CONTROLLERS = 1024
#: Switches per fabric (a tree of MAX_NPUS NPUs has fewer unless levels have radix 1).
MAX_SWITCHES = 4096
#: Levels of a switch tree: a binary tree over MAX_NPUS NPUs.
MAX_TREE_LEVELS = 12
#: Most GB/s a link, I/O port or network dimension may be given: a million times the
#: paper's 3 TB/s NPU-switch link, so a typo (or 1e308, which overflows to infinity once
#: made bytes per second) fails at once, naming its key.
MAX_LINK_GBPS = 3e9


class FabricError(InputError):
    """A fabric description that is malformed or violates its routing discipline."""


@dataclass(frozen=True)
class Node:
    id: int
    name: str
    kind: str  # "npu", "switch" or "io"
    level: int = 0  # switches: 1 = attached to NPUs, root highest; 0 for NPUs and I/O
    x: int | None = None  # mesh coordinates of NPUs (routing "xy")
    y: int | None = None


@dataclass(frozen=True)
class Link:
    id: int
    src: int
    dst: int
    bandwidth: float  # bytes/s, this direction only
    latency: float  # seconds, wire + port logic (switch pipeline latency is added separately)


def check_counts(npus: int, ios: int, switches: int, where: str) -> None:
    """Raise FabricError if a fabric of these node counts exceeds the size limits."""
    for what, n, hi in (
        ("NPUs", npus, MAX_NPUS),
        ("I/O controllers", ios, MAX_IO_CONTROLLERS),
        ("switches", switches, MAX_SWITCHES),
    ):
        if n > hi:
            raise FabricError(f"{where}: {n} {what}; a fabric has at most {hi}")


def build_links(pairs: Iterable[tuple[int, int, float, float]]) -> list[Link]:
    """Directed links, both directions, from (a, b, bandwidth, latency) tuples."""
    links: list[Link] = []
    for a, b, bw, lat in pairs:
        links.append(Link(len(links), a, b, float(bw), float(lat)))
        links.append(Link(len(links), b, a, float(bw), float(lat)))
    return links
