"""A Chakra job as data: per rank, a DAG of nodes; the programs ranks share.

Node kinds are Chakra's ``NodeType`` names without the ``_NODE`` suffix. What each kind
carries here (attribute names and types as ASTRA-sim's ETFeederNode reads them; chakra
src/feeder/et_feeder_node.cpp):

* ``COMP``: ``duration_micros``; without it, ``num_ops`` FLOPs (and ``tensor_size`` bytes)
  through the NPU roofline.
* ``MEM_LOAD`` / ``MEM_STORE``: ``tensor_size`` bytes (or ``duration_micros``).
* ``COMM_COLL``: ``comm_type`` (CollectiveCommType), ``comm_size`` bytes, the group from
  ``pg_name`` (a communicator group) or ``involved_dim`` (network dimensions), all ranks
  without either.
* ``COMM_SEND`` / ``COMM_RECV``: ``comm_size``, ``comm_src``, ``comm_dst``, ``comm_tag``.
* ``METADATA``, ``INVALID``: take no time (ASTRA-sim skips them).

``duration_seconds`` (a double) is this project's own attribute: the writer records exact
durations in it beside the whole microseconds of ``duration_micros``, and the reader
prefers it, so a round trip loses nothing; other readers ignore it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.errors import InputError

#: Chakra NodeType values (et_def.proto) by name.
NODE_TYPES = {
    "INVALID": 0,
    "METADATA": 1,
    "MEM_LOAD": 2,
    "MEM_STORE": 3,
    "COMP": 4,
    "COMM_SEND": 5,
    "COMM_RECV": 6,
    "COMM_COLL": 7,
}
NODE_KIND = {v: k for k, v in NODE_TYPES.items()}

#: Chakra CollectiveCommType values and the collective each runs here (None: refused).
#: REDUCE_SCATTER_BLOCK is Reduce-Scatter with equal blocks, which is what ours is; a
#: Barrier moves no data: its members only wait for each other.
COMM_TYPES: dict[int, tuple[str, CollectiveKind | None]] = {
    0: ("ALL_REDUCE", CollectiveKind.ALL_REDUCE),
    1: ("REDUCE", CollectiveKind.REDUCE),
    2: ("ALL_GATHER", CollectiveKind.ALL_GATHER),
    3: ("GATHER", None),
    4: ("SCATTER", None),
    5: ("BROADCAST", CollectiveKind.BROADCAST),
    6: ("ALL_TO_ALL", CollectiveKind.ALL_TO_ALL),
    7: ("REDUCE_SCATTER", CollectiveKind.REDUCE_SCATTER),
    8: ("REDUCE_SCATTER_BLOCK", CollectiveKind.REDUCE_SCATTER),
    9: ("BARRIER", None),
}
BARRIER = 9
#: Our collective kinds back to Chakra's CollectiveCommType (for the writer).
COMM_TYPE_OF = {
    CollectiveKind.ALL_REDUCE: 0,
    CollectiveKind.REDUCE: 1,
    CollectiveKind.ALL_GATHER: 2,
    CollectiveKind.BROADCAST: 5,
    CollectiveKind.ALL_TO_ALL: 6,
    CollectiveKind.REDUCE_SCATTER: 7,
}

#: The extra attribute carrying exact durations (see the module docstring).
DURATION_ATTR = "duration_seconds"


class ChakraError(InputError):
    """A trace that cannot be read or simulated; one line naming file, node and field."""


@dataclass(frozen=True, slots=True)
class TraceNode:
    """One node of a rank's DAG, as read (sizes in bytes, times in seconds)."""

    id: int
    name: str
    kind: str  # a NODE_TYPES name
    deps: tuple[int, ...] = ()  # data and control dependencies: both must finish first
    data_count: int = 0  # the first data_count of deps are data_deps, the rest ctrl_deps
    duration: float | None = None  # seconds, when the trace gives one
    comm_type: int | None = None  # Chakra CollectiveCommType of a COMM_COLL node
    size: int = 0  # comm_size (communication) or tensor_size (memory, roofline) bytes
    num_ops: int = 0  # FLOPs of a COMP node
    src: int | None = None  # comm_src of a send or receive
    dst: int | None = None  # comm_dst
    tag: int = 0  # comm_tag
    pg_name: str | None = None
    involved_dim: tuple[bool, ...] | None = None

    @property
    def collective(self) -> CollectiveKind | None:
        """The collective a COMM_COLL node runs (None for a Barrier and other nodes)."""
        return None if self.comm_type is None else COMM_TYPES[self.comm_type][1]

    def label(self) -> str:
        return f"node {self.id} {self.name!r}" if self.name else f"node {self.id}"


@dataclass(frozen=True)
class Program:
    """One rank's DAG: nodes in id order, and where each id is."""

    source: str  # the file it was read from (the first, when ranks share it)
    nodes: tuple[TraceNode, ...]
    version: str = ""
    index: dict[int, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.index:
            self.index.update({n.id: i for i, n in enumerate(self.nodes)})

    def where(self, node: TraceNode, fieldname: str) -> str:
        """``FILE: node ID 'NAME': FIELD`` for error messages."""
        return f"{self.source}: {node.label()}: {fieldname}"


@dataclass(frozen=True)
class ChakraTrace:
    """A whole job: per rank, the index of its program; communicator groups by name."""

    prefix: str
    programs: tuple[Program, ...]
    rank_program: tuple[int, ...]
    #: pg_name -> ranks (ASTRA-sim's communicator-group file); {} when none was given.
    comm_groups: dict[str, tuple[int, ...]] = field(default_factory=dict)
    #: rank -> the file it was read from.
    files: tuple[str, ...] = ()

    @property
    def num_ranks(self) -> int:
        return len(self.rank_program)

    def program(self, rank: int) -> Program:
        return self.programs[self.rank_program[rank]]

    @property
    def num_nodes(self) -> int:
        """Nodes over all ranks."""
        return sum(len(self.programs[p].nodes) for p in self.rank_program)
