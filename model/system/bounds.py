"""Lower bounds on collective times from link bandwidths: the bytes an algorithm must move
over each directed link, divided by the link's bandwidth, maximised over links.

Every link carries at most its bandwidth (in capacity units: a flow of kind k leaving a switch
uses 1/f_k of it, fabric.kind_weight), so no schedule of those transfers, however chunked or
overlapped, finishes sooner than its most loaded link. Latencies are left out, except where an
algorithm's chain of dependent steps is long enough to matter (ring_chain_seconds): the bounds
are reached for large sizes only. docs/system-model.md gives each algorithm's bound in closed form
for the shipped fabrics.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.system.fabric import Fabric


class LinkLoad:
    """Bytes (in capacity units) each directed link of ``fabric`` must carry."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        self.load = np.zeros(len(fabric.links))

    def path(self, src: int, dst: int, nbytes: float, kind: str = CollectiveKind.UNICAST) -> None:
        """``nbytes`` along the fabric's route from ``src`` to ``dst``."""
        links = np.array(self.fabric.route(int(src), int(dst)), dtype=np.int64)
        if len(links):
            self.load[links] += nbytes * self.fabric.kind_weight(links, kind)

    def paths(self, src: Sequence[int], dst: Sequence[int], nbytes: float) -> None:
        for a, b in zip(src, dst, strict=True):
            self.path(a, b, nbytes)

    def ring(self, members: Sequence[int], nbytes: float) -> None:
        """``nbytes`` over every hop of the ring ``members[0] -> members[1] -> ... -> [0]``."""
        m = list(members)
        self.paths(m, m[1:] + m[:1], nbytes)

    def links(self, links: Sequence[int], nbytes: float | np.ndarray, weights: np.ndarray) -> None:
        """``nbytes`` (per link, or the same on all) over explicit links with capacity
        ``weights`` (a relay's share is part of its weight)."""
        ls = np.asarray(links, dtype=np.int64)
        np.add.at(self.load, ls, np.asarray(nbytes, dtype=float) * np.asarray(weights))

    def per_link_seconds(self) -> np.ndarray:
        return self.load / self.fabric.bandwidth

    def seconds(self) -> float:
        """The most loaded link's time at full bandwidth."""
        return float(self.per_link_seconds().max(initial=0.0))


def split_seconds(a: LinkLoad, b: LinkLoad) -> float:
    """The bound of a stream whose bytes split at any fraction x between two ways (x of the
    load ``a`` plus 1 - x of ``b``): min over x in [0, 1] of the most loaded link."""
    ta, tb = a.per_link_seconds(), b.per_link_seconds()
    d = ta - tb

    def worst(x: float) -> tuple[float, float]:
        """The most loaded link's time at fraction x, and that link's slope in x."""
        t = tb + x * d
        i = int(np.argmax(t))
        return float(t[i]), float(d[i])

    # max_l (tb + x d) is convex and piecewise linear in x: bisect on the sign of its slope.
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if worst(mid)[1] > 0:
            hi = mid
        else:
            lo = mid
    return min(worst(0.0)[0], worst(1.0)[0], worst(lo)[0], worst(hi)[0])


def ring_chain_seconds(fabric: Fabric, members: Sequence[int], steps: int) -> float:
    """A ring's chain of dependent steps: step k of the first chunk starts only once step
    k - 1 has been delivered, which takes at least the latency of a hop's route (links and
    switch pipelines), so ``steps`` steps take at least ``steps`` x the shortest hop latency.
    On large groups this exceeds the bandwidth bound (4,096 NPUs under 16-port switches:
    8,190 steps of >= 25 ns, 205 us)."""
    m = list(members)
    hops = [
        float(fabric.hop_latency[list(fabric.route(int(a), int(b)))].sum())
        for a, b in zip(m, m[1:] + m[:1], strict=True)
    ]
    return steps * min(hops, default=0.0)
