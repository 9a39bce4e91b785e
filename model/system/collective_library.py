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
           (base_latency + steps(op, N) x step_latency + network_time / bandwidth_fraction)

The ideal library (``IDEAL``: no fixed cost, one protocol at full bandwidth and no latency)
leaves the network's time unchanged; every fabric has it unless its file says otherwise
(the ``[collectives]`` table, fredfab.model.system.loader). The wafer fabrics keep it: the
paper gives no software cost for them (docs/training-model.md, "What the calibration means
for FRED").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.errors import InputError
from fredfab.model.toml_fields import check_number

#: Protocols a library may list (NCCL has three).
MAX_PROTOCOLS = 8


@dataclass(frozen=True)
class Protocol:
    name: str
    base_latency: float  # seconds
    step_latency: float  # seconds per dependent step
    bandwidth_fraction: float  # share of the links' rate its data format leaves

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
        return self.fixed_cost == 0 and all(
            p.base_latency == 0 and p.step_latency == 0 and p.bandwidth_fraction == 1
            for p in self.protocols
        )

    def time(self, op: str, ranks: int, network_time: float) -> float:
        """Seconds of a collective ``op`` over groups of ``ranks`` whose data moves in
        ``network_time`` seconds at the links' rate (0 for a collective that moves nothing:
        it costs nothing)."""
        if network_time <= 0 or (ranks <= 1 and not CollectiveKind(op).uses_io):
            return max(network_time, 0.0)
        return self.fixed_cost + min(self.protocol_times(op, ranks, network_time))

    def protocol_times(self, op: str, ranks: int, network_time: float) -> list[float]:
        """Per protocol, its time without the fixed cost."""
        steps = dependent_steps(op, ranks)
        return [
            p.base_latency + steps * p.step_latency + network_time / p.bandwidth_fraction
            for p in self.protocols
        ]

    def best(self, op: str, ranks: int, network_time: float) -> Protocol:
        """The protocol the library picks."""
        times = self.protocol_times(op, ranks, network_time)
        return self.protocols[min(range(len(times)), key=times.__getitem__)]

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "fixed_cost_us": self.fixed_cost * 1e6,
            "protocols": [
                {
                    "name": p.name,
                    "base_latency_us": p.base_latency * 1e6,
                    "step_latency_us": p.step_latency * 1e6,
                    "bandwidth_fraction": p.bandwidth_fraction,
                }
                for p in self.protocols
            ],
            "source": self.source,
        }


IDEAL = CollectiveLibrary()


def library(
    name: str, fixed_cost: float, protocols: Sequence[Protocol], source: str = ""
) -> CollectiveLibrary:
    return CollectiveLibrary(name, fixed_cost, tuple(protocols), source)
