"""Mesh collectives at the physical bound: every NPU of a rectangle sends on two links at once.

A corner NPU of a W x H rectangle has two links to the other members, so an endpoint
All-Reduce of D bytes over its N members, which sends 2(N-1)/N x D from every NPU, takes at
least 2(N-1)/N x D / (2B) on links of B bytes/s per direction; Reduce-Scatter and All-Gather
(N-1)/N x D / (2B) (``corner_bound``). The folded row and column rings of ``mesh-2d`` send on
one link per NPU at a time (both directions of every link, but one step of one ring), so they
stay at twice that. Two algorithms reach it:

* ``mesh-rings``: two rings over one Hamiltonian cycle of the rectangle, in opposite
  directions, each carrying half of the data. Every hop is one link and each ring uses its own
  direction of every cycle link, so both run at full link rate. A grid has a Hamiltonian cycle
  iff it has an even side (``hamiltonian_cycle``); odd x odd rectangles (3 x 3, 5 x 5, ...)
  have none (the grid is bipartite with one colour class larger), so this algorithm does not
  apply to them.
* ``mesh-2d-dual``: the 2D algorithm twice at once, a fraction ``a`` of the data rows first
  (rows Reduce-Scatter, columns All-Reduce, rows All-Gather) and the rest columns first. The
  fraction that loads horizontal and vertical links equally (``dual_fraction``) puts every
  directed link at exactly the corner bound on any rectangle of >= 2 x 2. The two halves'
  phases take equal times only on a square, though: elsewhere a link direction idles while
  the other half finishes a phase, and the time approaches the bound only as chunks grow
  (5 x 4, 2 chunks: 10% above). It has 2(W-1) + 2(H-1) ring steps against the cycle's
  2(N-1) (less latency; on a 32 x 32 mesh 250 thousand transfers instead of 8 million).

Which one runs: ``mesh-2d-dual`` on squares (at the bound, fewer steps) and on odd x odd
rectangles (no Hamiltonian cycle; 5 x 3, 2 chunks: 1.6 times ``mesh-2d``'s bandwidth),
``mesh-rings`` on the other rectangles with an even side. Both need a group filling a
rectangle of >= 2 x 2 NPUs of an X-Y routed mesh (any numbering: members are placed by their
grid coordinates) and run All-Reduce, Reduce-Scatter and All-Gather. A line of NPUs (1 x n)
has end NPUs with one link: the folded ring (``ring`` over the group in line order) is
already at that bound.
"""

from __future__ import annotations

import numpy as np

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.system.fabric import Fabric
from fredfab.model.system.registry import Algorithm, register
from fredfab.model.system.request import CollectiveRequest, Plan, bus_factor
from fredfab.model.system.rings import folded, rectangle, rings
from fredfab.model.system.schedule import Schedule

_OPS = frozenset(
    {CollectiveKind.ALL_REDUCE, CollectiveKind.REDUCE_SCATTER, CollectiveKind.ALL_GATHER}
)


# ---------------------------------------------------------------------- geometry
def hamiltonian_cycle(M: np.ndarray) -> np.ndarray | None:
    """The members of member matrix ``M`` (rows = y, columns = x, >= 2 x 2) in the order of a
    cycle through grid neighbours, or None when both sides are odd (no such cycle exists).

    With an even number of rows: along row 0, then a snake over columns 1.. of rows 1..H-1
    (ending at column 1 of the last row, which runs right to left because H is even), then
    back up column 0. With an odd number of rows and an even number of columns, the same on
    the transpose."""
    H, W = M.shape
    if H % 2 and W % 2:
        return None
    if H % 2:
        return hamiltonian_cycle(M.T)
    order = list(M[0])
    for y in range(1, H):
        row = M[y, 1:]
        order += list(row[::-1] if y % 2 else row)
    order += list(M[H - 1 : 0 : -1, 0])
    return np.array(order, dtype=np.int64)


def _links_between(f: Fabric, pairs: list[tuple[int, int]]) -> np.ndarray:
    return np.array([f.link_id[int(a), int(b)] for a, b in pairs], dtype=np.int64)


def _cycle_links(f: Fabric, cycle: np.ndarray) -> np.ndarray:
    """Both directions of every link of the cycle."""
    nxt = np.roll(cycle, -1)
    return _links_between(
        f, list(zip(cycle, nxt, strict=True)) + list(zip(nxt, cycle, strict=True))
    )


def _rectangle_links(f: Fabric, M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Directed links between horizontal neighbours of ``M``, and between vertical ones."""
    h = [(a, b) for row in M for a, b in zip(row, row[1:], strict=False)]
    v = [(a, b) for col in M.T for a, b in zip(col, col[1:], strict=False)]
    return tuple(_links_between(f, p + [(b, a) for a, b in p]) for p in (h, v))


def _steps_factor(op: CollectiveKind) -> int:
    """Ring passes of the op: All-Reduce = Reduce-Scatter + All-Gather."""
    return 2 if op == CollectiveKind.ALL_REDUCE else 1


def corner_bound(fabric: Fabric, request: CollectiveRequest, bandwidth: float) -> float:
    """Seconds a corner NPU needs to send its share on its two links of ``bandwidth``:
    bus_factor x D / (2B) (2(N-1)/N x D / (2B) for All-Reduce)."""
    n = len(request.group)
    return bus_factor(request.op, n) * request.size_bytes / (2 * bandwidth)


# ---------------------------------------------------------------------- mesh-rings
def _rings_applies(f: Fabric, req: CollectiveRequest) -> bool:
    """Rectangles with a Hamiltonian cycle, except squares: there mesh-2d-dual reaches the
    same two-link bound in far fewer steps (2(W-1) + 2(H-1) against 2(N-1)), so the rings are
    never faster, and on a 32 x 32 mesh they would cost ~8 million transfers to simulate."""
    if f.routing != "xy":
        return False
    M = rectangle(f, req.group)
    return M is not None and M.shape[0] != M.shape[1] and hamiltonian_cycle(M) is not None


def _rings_bound(f: Fabric, req: CollectiveRequest) -> float:
    """Each ring carries D/2: every cycle link carries bus_factor x D/2 per direction."""
    cycle = hamiltonian_cycle(rectangle(f, req.group))
    return corner_bound(f, req, float(f.bandwidth[_cycle_links(f, cycle)].min()))


def _build_rings(sched: Schedule, plan: Plan, chunks: int) -> None:
    """Per chunk, the cycle one way and the reversed cycle the other, D/2 each."""
    req = plan.request
    cycle = hamiltonian_cycle(rectangle(sched.fabric, req.group))
    n = len(cycle)
    M = np.stack([cycle, cycle[::-1]])
    steps = _steps_factor(req.op) * (n - 1)
    prev = None
    for _c in range(chunks):
        _, prev = rings(sched, M, steps, req.size_bytes / chunks / (2 * n), plan.index, None, prev)


# ---------------------------------------------------------------------- mesh-2d-dual
def dual_loads(M_shape: tuple[int, int], a: float) -> tuple[float, float]:
    """Bytes per byte of the request on each directed horizontal and vertical link of an
    H x W rectangle, per ring pass (x2 for All-Reduce), when a fraction ``a`` of the data goes
    rows first and 1 - a columns first. A folded ring of n puts one hop on every directed link
    of its line per step, so a pass over n members of S bytes loads each link (n-1)/n x S."""
    H, W = M_shape
    h = (W - 1) / W * (a + (1 - a) / H)
    v = (H - 1) / H * (a / W + (1 - a))
    return h, v


def dual_fraction(M_shape: tuple[int, int], bw_h: float = 1.0, bw_v: float = 1.0) -> float:
    """The rows-first fraction that gives horizontal and vertical links equal time (the
    loads are linear in a; clipped to [0, 1])."""
    h0, v0 = (x / b for x, b in zip(dual_loads(M_shape, 0.0), (bw_h, bw_v), strict=True))
    h1, v1 = (x / b for x, b in zip(dual_loads(M_shape, 1.0), (bw_h, bw_v), strict=True))
    denom = (h1 - h0) - (v1 - v0)
    return float(np.clip((v0 - h0) / denom, 0.0, 1.0)) if denom else 0.5


def _dual_setup(f: Fabric, req: CollectiveRequest) -> tuple[np.ndarray, float, float, float]:
    """Member matrix, horizontal and vertical link bandwidth (slowest), rows-first fraction."""
    M = rectangle(f, req.group)
    lh, lv = _rectangle_links(f, M)
    bw_h, bw_v = float(f.bandwidth[lh].min()), float(f.bandwidth[lv].min())
    return M, bw_h, bw_v, dual_fraction(M.shape, bw_h, bw_v)


def _dual_applies(f: Fabric, req: CollectiveRequest) -> bool:
    """Squares (at the bound) and odd x odd rectangles (no Hamiltonian cycle for
    mesh-rings); see the module docstring."""
    if f.routing != "xy":
        return False
    M = rectangle(f, req.group)
    return M is not None and (M.shape[0] == M.shape[1] or hamiltonian_cycle(M) is None)


def _dual_bound(f: Fabric, req: CollectiveRequest) -> float:
    """The busiest directed link's bytes over its bandwidth at the chosen fraction; with
    equal link bandwidths this is the corner bound."""
    M, bw_h, bw_v, a = _dual_setup(f, req)
    h, v = dual_loads(M.shape, a)
    return _steps_factor(req.op) * req.size_bytes * max(h / bw_h, v / bw_v)


def _two_d(
    sched: Schedule, M: np.ndarray, op: CollectiveKind, size: float, r: int, prev: tuple | None
) -> tuple:
    """One chunk of the 2D algorithm on member matrix ``M`` (R x K, folded orders), its first
    pass along the rows of M: rows Reduce-Scatter, columns All-Reduce, rows All-Gather (the
    single passes for Reduce-Scatter and All-Gather). ``prev``: the previous chunk's per-pass
    step ids. Returns this chunk's."""
    R, K = M.shape
    p = prev or (None, None, None)
    if op == CollectiveKind.ALL_REDUCE:
        e1, s1 = rings(sched, M, K - 1, size / K, r, None, p[0])
        e2, s2 = rings(sched, M.T, 2 * (R - 1), size / (K * R), r, e1.T, p[1])
        _, s3 = rings(sched, M, K - 1, size / K, r, e2.T, p[2])
        return s1, s2, s3
    if op == CollectiveKind.REDUCE_SCATTER:
        e1, s1 = rings(sched, M, K - 1, size / K, r, None, p[0])
        _, s2 = rings(sched, M.T, R - 1, size / (K * R), r, e1.T, p[1])
        return s1, s2, None
    e1, s1 = rings(sched, M.T, R - 1, size / (K * R), r, None, p[0])  # All-Gather
    _, s2 = rings(sched, M, K - 1, size / K, r, e1.T, p[1])
    return s1, s2, None


def _build_dual(sched: Schedule, plan: Plan, chunks: int) -> None:
    """Per chunk, a x D rows first and (1 - a) x D columns first, concurrently."""
    req = plan.request
    M, _, _, a = _dual_setup(sched.fabric, req)
    H, W = M.shape
    M = M[folded(H)][:, folded(W)]  # rows and columns stay rows and columns
    Dc = req.size_bytes / chunks
    halves = [(M, a * Dc), (M.T, (1 - a) * Dc)]
    prev: list = [None, None]
    for _c in range(chunks):
        for i, (Mi, size) in enumerate(halves):
            if size > 0:
                prev[i] = _two_d(sched, Mi, req.op, size, plan.index, prev[i])


# ---------------------------------------------------------------------- registry
register(
    Algorithm(
        "mesh-rings",
        "two rings in opposite directions over a Hamiltonian cycle of a mesh rectangle with "
        "an even side, D/2 each",
        _OPS,
        _rings_applies,
        _build_rings,
        bound=_rings_bound,
        preference=6,
    )
)
register(
    Algorithm(
        "mesh-2d-dual",
        "the 2D algorithm rows first and columns first at once, the data split to load "
        "every link equally (square or odd x odd rectangle of a mesh)",
        _OPS,
        _dual_applies,
        _build_dual,
        bound=_dual_bound,
        preference=5,
    )
)
