"""3D-parallel strategies and the paper's placement of workers on NPUs.

Workers are numbered MP first, then PP, then DP: worker w = mp + MP * (pp + PP * dp), and
worker w runs on NPU w (paper §5.3: "places workers MP-consecutive, then PP,
then DP"). NPU ids are consecutive under an L1 switch on FRED and serpentine on the mesh
(generators.MESH_NUMBERING: consecutive ids are grid neighbours), so MP groups are the tightest
and DP groups the most spread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.errors import InputError
from fredfab.model.system.algorithms import CollectiveRequest
from fredfab.model.toml_fields import check_int


@dataclass(frozen=True)
class Strategy:
    mp: int = 1
    dp: int = 1
    pp: int = 1

    def __post_init__(self) -> None:
        for k in ("mp", "dp", "pp"):
            check_int(getattr(self, k), f"strategy: {k.upper()}", lo=1)

    @classmethod
    def parse(cls, text: str) -> Strategy:
        """``MP2-DP5-PP2`` (any order, missing dimensions are 1, case-insensitive)."""
        parts = [p for p in re.split(r"[-_,x ]+", text.strip()) if p]
        vals: dict[str, int] = {}
        for p in parts:
            m = re.fullmatch(r"(MP|DP|PP)(\d+)", p, flags=re.IGNORECASE)
            if not m:
                raise InputError(
                    f"strategy {text!r}: {p!r} is not MPn, DPn or PPn (e.g. MP2-DP5-PP2)"
                )
            key = m[1].lower()
            if key in vals:
                raise InputError(f"strategy {text!r} gives {key.upper()} twice")
            vals[key] = int(m[2])
        if not vals:
            raise InputError(f"strategy {text!r} is empty; e.g. MP2-DP5-PP2")
        return cls(**vals)

    @property
    def workers(self) -> int:
        return self.mp * self.dp * self.pp

    def __str__(self) -> str:
        return f"MP{self.mp}-DP{self.dp}-PP{self.pp}"

    def worker(self, mp: int, pp: int, dp: int) -> int:
        return mp + self.mp * (pp + self.pp * dp)

    def mp_groups(self) -> list[tuple[int, ...]]:
        return [
            tuple(self.worker(m, p, d) for m in range(self.mp))
            for d in range(self.dp)
            for p in range(self.pp)
        ]

    def dp_groups(self) -> list[tuple[int, ...]]:
        return [
            tuple(self.worker(m, p, d) for d in range(self.dp))
            for p in range(self.pp)
            for m in range(self.mp)
        ]

    def pp_pairs(self) -> list[tuple[int, int]]:
        """(stage p, stage p+1) worker pairs: activations flowing forward."""
        return [
            (self.worker(m, p, d), self.worker(m, p + 1, d))
            for d in range(self.dp)
            for m in range(self.mp)
            for p in range(self.pp - 1)
        ]

    def phase_requests(
        self, mp_bytes: float, dp_bytes: float, pp_bytes: float
    ) -> dict[str, list[CollectiveRequest]]:
        """The concurrent requests of each phase: MP and DP All-Reduce in every group, PP
        point-to-point between consecutive stages. Phases of size 1 are left out."""
        out: dict[str, list[CollectiveRequest]] = {}
        if self.mp > 1:
            out["MP"] = [
                CollectiveRequest(CollectiveKind.ALL_REDUCE, g, mp_bytes, label="MP")
                for g in self.mp_groups()
            ]
        if self.dp > 1:
            out["DP"] = [
                CollectiveRequest(CollectiveKind.ALL_REDUCE, g, dp_bytes, label="DP")
                for g in self.dp_groups()
            ]
        if self.pp > 1:
            out["PP"] = [
                CollectiveRequest(CollectiveKind.P2P, pair, pp_bytes, label="PP")
                for pair in self.pp_pairs()
            ]
        return out
