"""Concurrent collectives that need not be simulated together.

Many concurrent groups of a training step (the MP groups of every DP replica, a pipeline
stage's DP groups, the pipeline pairs) are, on an ASTRA-sim topology, translations of one
another that share no link. Groups that share no link do not slow each other down, so their
time together is the largest of their times alone; and on a topology of Ring, FullyConnected
and Switch dimensions, a group translated by a coordinate offset (modulo each dimension's
size) has the same links up to that translation, so the same time alone. Such a set is
simulated as one group per translation class instead of all of them at once: the same time,
exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

from fredfab.model.system.fabric import DIMS, Fabric


def representatives(
    fabric: Fabric, groups: Sequence[tuple[int, ...]], sizes: Sequence[float]
) -> list[int] | None:
    """Indices of the groups whose times alone give the time of all of them together (one per
    translation class), or None when they must be simulated together (not an ASTRA-sim
    topology, fewer than two groups, or groups that share a link)."""
    if fabric.routing != DIMS or len(groups) < 2:
        return None
    used: set[int] = set()
    for g in groups:
        links: set[int] = set()
        for a in g:
            for b in g:
                if a != b:
                    links.update(fabric.route(a, b))
        if not used.isdisjoint(links):
            return None
        used |= links
    dims = fabric.dims
    mod = dims.sizes
    reps: dict[tuple, int] = {}
    for i, (g, size) in enumerate(zip(groups, sizes, strict=True)):
        c = dims.coords(list(g))
        rel = tuple(tuple(int(x) % m for x, m in zip(row - c[0], mod, strict=True)) for row in c)
        reps.setdefault((rel, float(size)), i)
    return list(reps.values())
