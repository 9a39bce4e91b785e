"""A collective request (what a user or the training model asks for) and its plan (how one
algorithm will run it). Shared by the algorithm registry, the algorithms and the simulators."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fredfab.model.collective_kind import SYSTEM_OPS, CollectiveKind
from fredfab.model.errors import InputError
from fredfab.model.system.schedule import TreeFlow

OPS = SYSTEM_OPS
#: Other names accepted for the collectives of OPS.
ALIASES = {
    "allreduce": CollectiveKind.ALL_REDUCE,
    "reducescatter": CollectiveKind.REDUCE_SCATTER,
    "allgather": CollectiveKind.ALL_GATHER,
    CollectiveKind.MULTICAST: CollectiveKind.BROADCAST,
    "alltoall": CollectiveKind.ALL_TO_ALL,
    "point-to-point": CollectiveKind.P2P,
    "sendrecv": CollectiveKind.P2P,
    CollectiveKind.UNICAST: CollectiveKind.P2P,
}


def normalize_op(op: str) -> CollectiveKind:
    """The collective ``op`` names (case-insensitive, aliases accepted)."""
    o = str(op).lower()
    o = ALIASES.get(o, o)
    if o not in OPS:
        raise InputError(f"collective {op!r} unknown; use one of {', '.join(OPS)} (or multicast)")
    return CollectiveKind(o)


def bus_factor(op: str, n: int) -> float:
    """NCCL's "bus bandwidth" factor of ``op`` over ``n`` NPUs (CollectiveKind.bus_factor;
    ``op`` may be an alias)."""
    return normalize_op(op).bus_factor(n)


@dataclass(frozen=True)
class CollectiveRequest:
    """One collective over ``group`` (NPU ids, in ring order) of ``size_bytes`` per NPU.

    ``root`` is the destination of Reduce and the source of Broadcast (default group[0]).
    A point-to-point request has ``group = (src, dst)``. ``size_bytes`` is the data each
    member contributes (All-Reduce, Reduce-Scatter, Reduce), holds at the end (All-Gather,
    Broadcast) or sends in all (All-to-All); for the I/O patterns, the bytes streamed.
    """

    op: str
    group: tuple[int, ...]
    size_bytes: float
    root: int | None = None
    label: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", normalize_op(self.op))
        object.__setattr__(self, "group", tuple(int(u) for u in self.group))
        if not (self.size_bytes >= 0 and np.isfinite(self.size_bytes)):
            raise InputError(f"size must be a finite number of bytes >= 0, got {self.size_bytes}")
        object.__setattr__(self, "size_bytes", float(self.size_bytes))
        if not self.group:
            raise InputError(f"{self.op}: the group is empty")
        if len(set(self.group)) != len(self.group):
            raise InputError(f"{self.op}: the group names an NPU twice")
        if self.op == CollectiveKind.P2P and len(self.group) != 2:
            raise InputError(f"p2p needs group = (src, dst), got {len(self.group)} NPUs")
        if self.root is not None:
            if self.op not in (CollectiveKind.REDUCE, CollectiveKind.BROADCAST):
                raise InputError(f"{self.op} takes no root")
            if self.root not in self.group:
                raise InputError(f"root {self.root} is not in the group")

    @property
    def root_npu(self) -> int:
        return self.group[0] if self.root is None else self.root


@dataclass(frozen=True)
class Plan:
    """How one request will run: algorithm name and, for in-switch ones, its switch phases."""

    index: int
    request: CollectiveRequest
    algorithm: str
    #: In-switch serial steps; each a tuple of tree flows configured at the same time.
    steps: tuple[tuple[TreeFlow, ...], ...] = ()
    #: True when ``steps`` run at once, time-multiplexed at packet granularity (several
    #: multicasts into the same output ports cannot share one circuit configuration).
    multiplexed: bool = False
    notes: tuple[str, ...] = field(default=())
