"""The names of collective kinds, once: what files, the command line and every model use.

A StrEnum, so a member is its string: ``CollectiveKind.ALL_REDUCE == "all-reduce"``, it
formats, hashes and serialises (JSON, TOML) as that string, and files and commands keep
writing ``all-reduce``.

Three vocabularies share these names: the collectives a wafer runs (SYSTEM_OPS, a
CollectiveRequest's op), the FRED flows one switch carries (FLOW_KINDS, Flow.kind: a flow's
shape, many-to-many, many-to-one, one-to-many, one-to-one) and the golden model's collectives
(model/collectives.py, which adds ``gather``).
"""

from __future__ import annotations

from enum import StrEnum


class CollectiveKind(StrEnum):
    ALL_REDUCE = "all-reduce"
    REDUCE_SCATTER = "reduce-scatter"
    ALL_GATHER = "all-gather"
    REDUCE = "reduce"
    BROADCAST = "broadcast"
    MULTICAST = "multicast"
    GATHER = "gather"
    ALL_TO_ALL = "all-to-all"
    UNICAST = "unicast"
    #: Point-to-point between two NPUs (a request; its flow is a unicast).
    P2P = "p2p"
    #: Weight streaming: off-wafer memory to every group member through the I/O controllers.
    IO_BROADCAST = "io-broadcast"
    #: Weight streaming: gradients summed over the group, delivered to the I/O controllers.
    IO_REDUCE = "io-reduce"

    @property
    def uses_io(self) -> bool:
        """True for the I/O patterns (data from or to off-wafer memory)."""
        return self in (CollectiveKind.IO_BROADCAST, CollectiveKind.IO_REDUCE)

    def bus_factor(self, n: int) -> float:
        """Bytes each of ``n`` NPUs sends (and receives) per byte of the request under the
        endpoint (ring) algorithms, NCCL's "bus bandwidth" factor: per-NPU effective
        bandwidth is factor * size / time. All-Reduce 2(N-1)/N; Reduce-Scatter, All-Gather,
        All-to-All (N-1)/N; Reduce, Broadcast, point-to-point and the I/O patterns 1."""
        if n <= 1:
            return 0.0
        if self == CollectiveKind.ALL_REDUCE:
            return 2 * (n - 1) / n
        if self in (
            CollectiveKind.REDUCE_SCATTER,
            CollectiveKind.ALL_GATHER,
            CollectiveKind.ALL_TO_ALL,
        ):
            return (n - 1) / n
        return 1.0


#: The collectives a CollectiveRequest runs on a wafer fabric, in the order the CLI lists them.
SYSTEM_OPS = (
    CollectiveKind.ALL_REDUCE,
    CollectiveKind.REDUCE_SCATTER,
    CollectiveKind.ALL_GATHER,
    CollectiveKind.REDUCE,
    CollectiveKind.BROADCAST,
    CollectiveKind.ALL_TO_ALL,
    CollectiveKind.P2P,
    CollectiveKind.IO_BROADCAST,
    CollectiveKind.IO_REDUCE,
)
#: The shapes of a FRED flow (Flow.kind); a switch timing card gives a throughput for each.
FLOW_KINDS = (
    CollectiveKind.ALL_REDUCE,
    CollectiveKind.REDUCE,
    CollectiveKind.MULTICAST,
    CollectiveKind.UNICAST,
)
#: The collectives a layer needs under model parallelism (workload files' mp_comm op).
MP_OPS = (
    CollectiveKind.ALL_REDUCE,
    CollectiveKind.ALL_GATHER,
    CollectiveKind.REDUCE_SCATTER,
    CollectiveKind.ALL_TO_ALL,
)


def flow_kind(sources: int, sinks: int) -> CollectiveKind:
    """The kind of a flow from ``sources`` input ports to ``sinks`` output ports."""
    if sources == 1:
        return CollectiveKind.UNICAST if sinks == 1 else CollectiveKind.MULTICAST
    return CollectiveKind.REDUCE if sinks == 1 else CollectiveKind.ALL_REDUCE
