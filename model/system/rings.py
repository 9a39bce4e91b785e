"""Rings over member matrices: the building block the endpoint algorithms share.

A member matrix M (R x n) names R concurrent rings, row r visiting M[r, 0], M[r, 1], ...
``rings`` adds their steps to a Schedule; ``rectangle`` finds the matrix of a mesh group
that fills a rectangle; ``folded`` embeds a ring in a line with short hops; ``ring_factor``
is the bytes each ring hop carries per byte of a request.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.system.fabric import Fabric
from fredfab.model.system.schedule import NO_DEP


def rings(sched, M, steps, size, req, entry, prev):
    """Concurrent rings, one per row of member matrix M (R x n): in step k member M[r, i]
    sends ``size`` bytes to M[r, i+1] once it has received step k-1 (or its ``entry``
    transfer, aligned with M). ``prev``: the previous chunk's per-step transfer ids, whose
    same-position sends must have left first. Returns (exit, per-step ids): exit[r, i] is the
    last transfer member M[r, i] received (its entry if there were no steps)."""
    R, n = M.shape
    src = M.ravel()
    dst = np.roll(M, -1, axis=1).ravel()
    recv = None if entry is None else np.asarray(entry, dtype=np.int64)
    out = []
    for k in range(steps):
        t = sched.add_paths(
            src,
            dst,
            size,
            after=[recv.ravel()] if recv is not None else (),
            after_sent=[prev[k]] if prev else (),
            request=req,
        )
        out.append(t)
        recv = np.roll(t.reshape(R, n), 1, axis=1)
    if recv is None:
        recv = np.full((R, n), NO_DEP, dtype=np.int64)
    return recv, out


def rectangle(f: Fabric, group: Iterable[int]) -> np.ndarray | None:
    """Member matrix (rows = y, columns = x) if ``group`` fills a rectangle of >= 2 x 2."""
    g = list(group)
    xs = sorted({f.nodes[u].x for u in g})
    ys = sorted({f.nodes[u].y for u in g})
    if len(xs) < 2 or len(ys) < 2 or len(xs) * len(ys) != len(g):
        return None
    if xs != list(range(xs[0], xs[-1] + 1)) or ys != list(range(ys[0], ys[-1] + 1)):
        return None
    return np.array([[f.grid[x, y] for x in xs] for y in ys], dtype=np.int64)


def folded(n: int) -> np.ndarray:
    """Ring order embedding a ring in a line of n nodes with hops of at most 2 links:
    0, 2, 4, ..., then the odd positions back (0 2 4 3 1 for n = 5). Every directed link of
    the line carries exactly one hop, like the naive order 0..n-1 whose closing hop crosses
    the whole line, but the latency of the steps stays even (no n-1-hop straggler)."""
    return np.concatenate([np.arange(0, n, 2), np.arange(n - 1 - (n % 2 == 1), 0, -2)])


def ring_factor(op: CollectiveKind, n: int) -> float:
    """Bytes per byte of the request over each hop of a ring in group order."""
    return 2 * (n - 1) / n if op == CollectiveKind.ALL_REDUCE else (n - 1) / n
