"""3D-parallel layouts: which NPU runs which worker, the groups, and the layer split.

A worker is (mp, pp, dp). The placement names the dimensions innermost first: the paper's
``mp-pp-dp`` (paper §5.3: MP consecutive, then PP, then DP) puts worker (m, p, d) on NPU
m + MP (p + PP d), the numbering fredfab.model.system.placement.Strategy uses. Other orders
(e.g. ``dp-mp-pp``) are there to ask what the placement is worth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fredfab.model.errors import InputError
from fredfab.model.system.placement import Strategy
from fredfab.model.training.config import parse_placement
from fredfab.model.training.workload import Workload


@dataclass(frozen=True)
class Layout:
    strategy: Strategy
    placement: str = "mp-pp-dp"

    def __post_init__(self) -> None:
        order = parse_placement(self.placement)
        s = self.strategy
        size = {"mp": s.mp, "pp": s.pp, "dp": s.dp}
        grid = np.zeros((s.mp, s.pp, s.dp), dtype=np.int64)
        scale = 1
        for d in order:
            shape = [1, 1, 1]
            shape[("mp", "pp", "dp").index(d)] = size[d]
            grid += np.arange(size[d]).reshape(shape) * scale
            scale *= size[d]
        object.__setattr__(self, "_grid", grid)

    def npu(self, mp: int, pp: int, dp: int) -> int:
        return int(self._grid[mp, pp, dp])

    def mp_groups(self, pp: int) -> tuple[tuple[int, ...], ...]:
        """The MP groups of stage ``pp`` (one per DP replica)."""
        return _groups(self._grid[:, pp, :].T)

    def dp_groups(self, pp: int) -> tuple[tuple[int, ...], ...]:
        """The DP groups of stage ``pp`` (one per MP rank)."""
        return _groups(self._grid[:, pp, :])

    def pp_pairs(self, src: int, dst: int) -> tuple[tuple[int, int], ...]:
        """(NPU of stage src, NPU of stage dst) for every MP rank and DP replica."""
        a = self._grid[:, src, :].T.reshape(-1)  # DP replica outer, MP rank inner
        b = self._grid[:, dst, :].T.reshape(-1)
        return tuple(zip(a.tolist(), b.tolist(), strict=True))


def _groups(rows: np.ndarray) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(r) for r in rows.tolist())


@dataclass(frozen=True)
class MPSplit:
    """How the MP ranks share a model's split layers.

    A transformer splits by attention heads (Megatron: each rank owns whole heads and the
    matching columns of the MLP and vocabulary). When MP does not divide the heads, ranks get
    ceil(heads / MP) or floor(heads / MP) of them; the slowest rank, with the ceiling, sets
    the time of every split layer and its memory the footprint. Assumption: the MLP and the
    vocabulary follow the heads' proportion (the rank with the most heads owns that share of
    every split layer), an upper bound since they could be split more finely. ``units`` None
    means the split layers divide evenly at any MP (explicit layer lists)."""

    mp: int
    units: int | None = None

    def __post_init__(self) -> None:
        if self.units is not None and self.mp > self.units:
            raise InputError(f"MP {self.mp} exceeds the {self.units} heads (a rank would get none)")

    @property
    def even(self) -> bool:
        return self.units is None or self.units % self.mp == 0

    @property
    def largest(self) -> int:
        """Heads of the slowest rank."""
        return self.units if self.units is None else math.ceil(self.units / self.mp)

    @property
    def divisor(self) -> float:
        """A split layer's work divided by this is the slowest rank's share (MP when even)."""
        if self.even:
            return self.mp
        return self.units / self.largest

    def note(self) -> str:
        """One line for the output when the split is uneven ("" when even)."""
        if self.even:
            return ""
        return (
            f"uneven head split: MP {self.mp} over {self.units} heads gives ranks "
            f"{self.largest} or {self.units // self.mp} heads; the ranks with {self.largest} "
            f"set the time ({self.mp / self.divisor:.3f}x an even split's share)"
        )


def mp_split(wl: Workload, mp: int) -> MPSplit:
    """The MP split of ``wl``: uneven over a transformer's heads; other workloads (ResNet
    channels, explicit layers) split evenly, and must be given an MP they allow
    (``Workload.mp_divides``, checked by the engine)."""
    heads = wl.shape.get("heads") if "heads" in wl.shape and "hidden" in wl.shape else None
    return MPSplit(mp, int(heads) if heads is not None else None)


def factorizations(n: int) -> list[Strategy]:
    """Every MP x DP x PP = n, ordered by (MP, PP)."""
    if n < 1:
        raise InputError(f"NPU count must be >= 1, got {n}")
    divs = [d for d in range(1, n + 1) if n % d == 0]
    out = []
    for mp in divs:
        for pp in divs:
            if (n // mp) % pp == 0:
                out.append(Strategy(mp=mp, dp=n // (mp * pp), pp=pp))
    return out


def split_stages(cost: np.ndarray, stages: int) -> list[tuple[int, int]]:
    """Contiguous [start, end) layer ranges for ``stages`` pipeline stages, balancing ``cost``
    (cut where the cumulative cost crosses k/stages of the total; every stage gets >= 1
    layer). Raises ValueError when there are fewer layers than stages."""
    n = len(cost)
    if stages > n:
        raise InputError(f"{stages} pipeline stages but only {n} layers")
    if stages == 1:
        return [(0, n)]
    cum = np.cumsum(cost)
    total = cum[-1]
    cuts = [0]
    for k in range(1, stages):
        c = int(np.searchsorted(cum, total * k / stages, side="left"))
        # The layer straddling the target goes to the side that balances better.
        if (
            c < n
            and c > 0
            and abs(cum[c - 1] - total * k / stages) < abs(cum[c] - total * k / stages)
        ):
            c -= 1
        c += 1
        lo = cuts[-1] + 1
        hi = n - (stages - k)
        cuts.append(min(max(c, lo), hi))
    cuts.append(n)
    return [(cuts[i], cuts[i + 1]) for i in range(stages)]
