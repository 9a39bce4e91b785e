"""What the software that runs collectives adds to the network's time: a per-collective fixed
cost and a choice of protocols, as a collective library such as NCCL has.

The network simulator (fredfab.sim.engines.system) times the data's movement over the links.
A library adds, per collective (NCCL's cost model, NVIDIA/nccl src/graph/tuning.cc, has the
same three terms): a fixed cost (kernel launch and synchronisation: ``fixed_cost``), and for
the protocol it picks, a base latency, a latency per dependent step of the algorithm (a ring
All-Reduce over N ranks has 2(N-1)) and the share of the link bandwidth its data format
leaves (NCCL's LL protocol sends 8-byte lines with a 4-byte flag; Simple sends whole
buffers). The library picks the protocol that is fastest for each collective::

    time = fixed_cost + min over protocols of
           (base_latency + steps(op, N) x step_latency + data_time)
    data_time = network_time / bandwidth_fraction

A protocol may also run on fewer channels for small messages (``channels``, a ChannelRule:
fredfab.model.system.channel_rule) and have a cap on its bus bandwidth
(``max_bus_bandwidth``, NCCL's llMaxBws for LL); then its bandwidth depends on the
collective's message size (``size_bytes``, the bytes of CollectiveRequest.size_bytes)::

    data_time = max(network_time / (bandwidth_fraction x active / channels),
                    bus_factor(op, N) x size_bytes / max_bus_bandwidth)

``bandwidth_fraction`` is then the share with all channels running. A protocol without
either keeps the first form exactly.

The ideal library (``IDEAL``: no fixed cost, one protocol at full bandwidth and no latency)
leaves the network's time unchanged; every fabric has it unless its file says otherwise
(the ``[collectives]`` table, fredfab.model.system.loader). The wafer fabrics keep it: the
paper gives no software cost for them (docs/training-model.md, "What the calibration means
for FRED").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.errors import InputError
from fredfab.model.system.channel_rule import ChannelRule
from fredfab.model.system.units import GB
from fredfab.model.toml_fields import check_number

#: Protocols a library may list (NCCL has three).
MAX_PROTOCOLS = 8


@dataclass(frozen=True)
class Protocol:
    name: str
    base_latency: float  # seconds
    step_latency: float  # seconds per dependent step
    bandwidth_fraction: float  # share of the links' rate its data format leaves (all channels)
    channels: ChannelRule | None = None  # fewer channels for small messages (None: always all)
    max_bus_bandwidth: float = math.inf  # bytes/s of bus bandwidth it never exceeds

    def __post_init__(self) -> None:
        check_number(self.base_latency, f"protocol {self.name}: base latency", lo=0)
        check_number(self.step_latency, f"protocol {self.name}: step latency", lo=0)
        check_number(
            self.bandwidth_fraction,
            f"protocol {self.name}: bandwidth fraction",
            lo=0,
            hi=1,
            lo_open=True,
        )
        if self.max_bus_bandwidth != math.inf:
            check_number(
                self.max_bus_bandwidth,
                f"protocol {self.name}: max bus bandwidth",
                lo=0,
                lo_open=True,
            )

    @property
    def ideal(self) -> bool:
        return (
            self.base_latency == 0
            and self.step_latency == 0
            and self.bandwidth_fraction == 1
            and self.channels is None
            and self.max_bus_bandwidth == math.inf
        )

    def data_time(self, op: str, ranks: int, network_time: float, size_bytes: float) -> float:
        """Seconds the protocol takes to move data that the links move in ``network_time``:
        a collective ``op`` of ``size_bytes`` over ``ranks`` ranks."""
        if self.channels is None and self.max_bus_bandwidth == math.inf:
            return network_time / self.bandwidth_fraction
        share = 1.0 if self.channels is None else self.channels.share(size_bytes, ranks)
        t = network_time / (self.bandwidth_fraction * share)
        if self.max_bus_bandwidth != math.inf:
            t = max(t, CollectiveKind(op).bus_factor(ranks) * size_bytes / self.max_bus_bandwidth)
        return t

    def to_dict(self) -> dict:
        d: dict = {
            "name": self.name,
            "base_latency_us": self.base_latency * 1e6,
            "step_latency_us": self.step_latency * 1e6,
            "bandwidth_fraction": self.bandwidth_fraction,
        }
        if self.channels is not None:
            d["channels"] = self.channels.channels
            d["channel_threshold_bytes_per_rank"] = self.channels.threshold_bytes_per_rank
        if self.max_bus_bandwidth != math.inf:
            d["max_bus_GBps"] = self.max_bus_bandwidth / GB
        return d


def dependent_steps(op: str, n: int) -> int:
    """Steps one after the other of the ring algorithm over ``n`` ranks (NCCL's nsteps):
    All-Reduce 2(n-1), Reduce-Scatter and All-Gather n-1, others (point-to-point,
    Broadcast, Reduce, All-to-All, I/O) n-1 at least 1."""
    if n <= 1:
        return 0
    if CollectiveKind(op) == CollectiveKind.ALL_REDUCE:
        return 2 * (n - 1)
    return max(n - 1, 1)


@dataclass(frozen=True)
class CollectiveLibrary:
    name: str = "ideal"
    fixed_cost: float = 0.0  # seconds per collective
    protocols: tuple[Protocol, ...] = (Protocol("ideal", 0.0, 0.0, 1.0),)
    source: str = ""

    def __post_init__(self) -> None:
        check_number(self.fixed_cost, f"library {self.name}: fixed cost", lo=0)
        if not 1 <= len(self.protocols) <= MAX_PROTOCOLS:
            raise InputError(
                f"library {self.name}: 1 to {MAX_PROTOCOLS} protocols, got {len(self.protocols)}"
            )

    @property
    def ideal(self) -> bool:
        return self.fixed_cost == 0 and all(p.ideal for p in self.protocols)

    def time(self, op: str, ranks: int, network_time: float, size_bytes: float) -> float:
        """Seconds of a collective ``op`` of ``size_bytes`` (CollectiveRequest.size_bytes)
        over groups of ``ranks`` whose data moves in ``network_time`` seconds at the links'
        rate (0 for a collective that moves nothing: it costs nothing)."""
        if network_time <= 0 or (ranks <= 1 and not CollectiveKind(op).uses_io):
            return max(network_time, 0.0)
        return self.fixed_cost + min(self.protocol_times(op, ranks, network_time, size_bytes))

    def protocol_times(
        self, op: str, ranks: int, network_time: float, size_bytes: float
    ) -> list[float]:
        """Per protocol, its time without the fixed cost."""
        steps = dependent_steps(op, ranks)
        return [
            p.base_latency
            + steps * p.step_latency
            + p.data_time(op, ranks, network_time, size_bytes)
            for p in self.protocols
        ]

    def best(self, op: str, ranks: int, network_time: float, size_bytes: float) -> Protocol:
        """The protocol the library picks."""
        times = self.protocol_times(op, ranks, network_time, size_bytes)
        return self.protocols[min(range(len(times)), key=times.__getitem__)]

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "fixed_cost_us": self.fixed_cost * 1e6,
            "protocols": [p.to_dict() for p in self.protocols],
            "source": self.source,
        }


IDEAL = CollectiveLibrary()


def library(
    name: str, fixed_cost: float, protocols: Sequence[Protocol], source: str = ""
) -> CollectiveLibrary:
    return CollectiveLibrary(name, fixed_cost, tuple(protocols), source)
