"""A configurable node of a switch interconnect, and the source codes of its outputs.

A node is configured by choosing, for each of its outputs, a *source*: nothing, one of its
inputs, or (for reducing kinds, which contain an adder) the sum of inputs 0 and 1. In the
configuration a source is a small integer, the *source code*:

============  ==================  ==========================================
source        code                named
============  ==================  ==========================================
nothing       0                   ``NONE``
input i       1 + i               ``node.source_input(i)``
sum           1 + n_in            ``node.source_sum()`` (reducing kinds only)
============  ==================  ==========================================

This table is stated here only: routers ask the node for codes by name, and every reader
of a code (functional model, exhaustive search, CLI, RTL) asks ``node.decode(code)`` what
it means. ``Node.code_bits`` is the width of one output's code in the configuration bit
vector (model/switch/config_layout.py places the fields).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property


class Kind(StrEnum):
    """Node kinds. R reduces, D multicasts, RD does both (the Clos uSwitches); ART is a
    node of the crossbar's segmented reduction tree; FORK multicasts one input."""

    R = "R"  # Clos input stage: 2 in, m out; pass each input, or add both into one output
    D = "D"  # Clos output stage: m in, 2 out; route, or copy one input to both outputs
    RD = "RD"  # Fred_m(2): 2 in, 2 out; reduce and/or multicast
    DEMUX = "DEMUX"  # 1 in, n out; feeds at most one output
    MUX = "MUX"  # n in, 1 out
    ART = "ART"  # reduction-tree node: 4 in, 4 out, adds inputs 0 and 1
    FORK = "FORK"  # 1 in, n out; multicast


#: Kinds that contain an adder (their sum source exists).
REDUCING = frozenset({Kind.R, Kind.RD, Kind.ART})

#: Source code meaning "this output carries nothing" (the same for every node).
NONE = 0

#: The inputs the sum adds (first and second operand); the sum consumes both together.
SUM_OPERANDS = (0, 1)
#: Code of input i is INPUT_OFFSET + i; the sum's code is n_in + SUM_OFFSET (after the inputs).
INPUT_OFFSET = 1
SUM_OFFSET = 1


class SourceKind(StrEnum):
    """What a node output carries."""

    NONE = "none"
    INPUT = "input"
    SUM = "sum"  # the SUM_OPERANDS inputs added lane by lane


@dataclass(frozen=True)
class Source:
    """A decoded source code: ``kind``, and for ``INPUT`` the node input it comes from."""

    kind: SourceKind
    input: int | None = None

    def __post_init__(self) -> None:
        if (self.kind is SourceKind.INPUT) != (self.input is not None):
            raise ValueError(f"a {self.kind} source takes an input index only if it is 'input'")

    def __str__(self) -> str:
        return f"in{self.input}" if self.kind is SourceKind.INPUT else self.kind.value


@dataclass(frozen=True)
class Node:
    """One uSwitch (or mux/demux) of the flattened network."""

    index: int  # position in SwitchGraph.nodes (topological order)
    name: str  # hierarchical: "m1.m0.in2" = input uSwitch 2 of middle 0 of middle 1
    kind: Kind
    n_in: int
    n_out: int
    stage: int  # column of the network, 0 = the inputs' side
    registered: bool = True  # the RTL puts register slices on this node's outputs

    @property
    def reducing(self) -> bool:
        """Whether the node has an adder (and so a sum source)."""
        return self.kind in REDUCING

    # -- source codes (the table in the module docstring) --------------------------------

    def source_input(self, i: int) -> int:
        """The code of "input ``i``"."""
        if not 0 <= i < self.n_in:
            raise ValueError(f"{self.name} ({self.kind}) has inputs 0..{self.n_in - 1}, not {i}")
        return INPUT_OFFSET + i

    def source_sum(self) -> int:
        """The code of "the sum of inputs 0 and 1" (reducing kinds only)."""
        if not self.reducing:
            raise ValueError(f"{self.name} ({self.kind}) has no adder, so no sum source")
        return self.n_in + SUM_OFFSET

    @property
    def sum_code(self) -> int | None:
        """``source_sum()``, or None for kinds without an adder."""
        return self.source_sum() if self.reducing else None

    @property
    def n_sources(self) -> int:
        """Number of source codes an output can take (NONE, each input, the sum if reducing)."""
        return len(self._sources)

    @cached_property
    def _sources(self) -> tuple[Source, ...]:
        # Indexed by code; decode is on the functional model's and the search's inner loops.
        sources = [Source(SourceKind.NONE)]
        sources += [Source(SourceKind.INPUT, i) for i in range(self.n_in)]
        if self.reducing:
            sources.append(Source(SourceKind.SUM))
        return tuple(sources)

    def decode(self, code: int) -> Source:
        """What source code ``code`` means on this node; ValueError if it means nothing."""
        if not 0 <= code < len(self._sources):
            raise ValueError(
                f"{self.name} ({self.kind}): code {code} not in 0..{len(self._sources) - 1}"
            )
        return self._sources[code]

    def encode(self, source: Source) -> int:
        """The code of ``source`` on this node (the inverse of ``decode``)."""
        if source.kind is SourceKind.NONE:
            return NONE
        if source.kind is SourceKind.SUM:
            return self.source_sum()
        return self.source_input(source.input)

    @property
    def code_bits(self) -> int:
        """Bits of one output's source code in the configuration encoding."""
        return max(1, (self.n_sources - 1).bit_length())
