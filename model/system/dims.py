"""ASTRA-sim's multi-dimensional topologies: the dimensions, their NPU addresses, links and routes.

ASTRA-sim's analytical network backend (github.com/astra-sim/astra-network-analytical,
congestion_aware/multi-dim-topology/MultiDimTopology.cc) describes a network as a list of
dimensions, each a ``Ring``, ``FullyConnected`` or ``Switch`` of ``npus_count`` NPUs with its
own link bandwidth and latency. Rings with wrap links, 2D/3D tori (``[Ring, Ring, Ring]``),
fully connected groups, a single switch and their compositions are all of this form.

* NPU ids are mixed radix, dimension 0 fastest: NPU ``u`` has coordinate
  ``(u // stride[d]) % size[d]`` in dimension d, ``stride[d] = prod(size[:d])``. The NPUs that
  differ only in coordinate d form one *group* of dimension d (``size[d]`` NPUs).
* Ring: each group is a ring in coordinate order with links both ways (ASTRA-sim's
  basic-topology Ring is bidirectional by default). A 2-NPU ring is one link each way:
  ASTRA-sim's ``Device::connect`` keeps one link per NPU pair.
* FullyConnected: a direct link both ways between every two NPUs of a group.
* Switch: one switch node per group, linked both ways to each of its NPUs.
* Routing is dimension order, dimension 0 first (MultiDimTopology::route): a Ring dimension
  takes the shorter way round (clockwise, towards higher coordinates, on a tie, as
  Ring::route), FullyConnected its direct link, Switch the two links through the group's
  switch.

ASTRA-sim's switch is an ideal node: no pipeline latency and no throughput limit beyond its
links, so the fabric does not apply a FRED switch timing card to these switches.

Node ids: the NPUs, then the switches dimension by dimension, group by group (group index:
the NPU's id with coordinate d removed, in mixed radix).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from fredfab.model.system.elements import FabricError
from fredfab.model.system.units import GIB, NS
from fredfab.model.toml_fields import check_choice, check_int, check_number

RING = "Ring"
FULLY_CONNECTED = "FullyConnected"
SWITCH = "Switch"
#: Dimension kinds, spelt as in ASTRA-sim's network files.
DIM_KINDS = (RING, FULLY_CONNECTED, SWITCH)
#: The routing discipline name of these fabrics (fabric.Fabric).
DIMS_ROUTING = "dims"
#: Dimensions per topology: 2^12 = 4096 = fabric.MAX_NPUS, so more dims of >= 2 NPUs cannot fit.
MAX_DIMS = 12
#: Directed links per topology. A FullyConnected dimension has k - 1 links per NPU, so its
#: size, not the NPU count, bounds the graph: this admits a full graph of 64 NPUs in every
#: group of a 4096-NPU topology (258,048 links) and keeps any build to seconds.
MAX_LINKS = 2**18
#: Default link of the generators: ASTRA-sim's sample network (inputs/network/analytical/Ring.yml
#: of github.com/astra-sim/astra-sim), 50 GB/s per direction in its units (GB = 2^30 bytes,
#: see astra_yaml) and 500 ns.
SAMPLE_BANDWIDTH = 50 * GIB
SAMPLE_LATENCY = 500 * NS
#: Short names of the kinds in generated fabric names ("dims-R4xFC8xSW4").
_ABBR = {RING: "R", FULLY_CONNECTED: "FC", SWITCH: "SW"}


@dataclass(frozen=True)
class Dim:
    """One dimension: ``size`` NPUs per group joined as ``kind``; every link carries
    ``bandwidth`` bytes/s per direction and takes ``latency`` seconds."""

    kind: str
    size: int
    bandwidth: float
    latency: float

    def __post_init__(self) -> None:
        check_choice(self.kind, "dimension topology", DIM_KINDS, error=FabricError)
        # ASTRA-sim rejects npus_count <= 1 (NetworkParser::check_validity).
        check_int(self.size, "dimension npus_count", lo=2, error=FabricError)
        check_number(
            self.bandwidth, "dimension bandwidth (bytes/s)", lo=0, lo_open=True, error=FabricError
        )
        check_number(self.latency, "dimension latency (s)", lo=0, error=FabricError)

    @property
    def out_links(self) -> int:
        """Links leaving each NPU in this dimension (per group)."""
        if self.kind == RING:
            return 2 if self.size > 2 else 1
        if self.kind == FULLY_CONNECTED:
            return self.size - 1
        return 1

    @property
    def label(self) -> str:
        return f"{_ABBR[self.kind]}{self.size}"


@dataclass(frozen=True)
class Dims:
    """The dimensions of a topology, dimension 0 first (fastest-varying NPU coordinate)."""

    dims: tuple[Dim, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "dims", tuple(self.dims))
        if not 1 <= len(self.dims) <= MAX_DIMS:
            raise FabricError(f"a topology has 1 to {MAX_DIMS} dimensions, got {len(self.dims)}")
        if not all(isinstance(d, Dim) for d in self.dims):
            raise FabricError(f"a topology is a list of Dim, got {list(self.dims)!r}")

    def __len__(self) -> int:
        return len(self.dims)

    @cached_property
    def sizes(self) -> tuple[int, ...]:
        return tuple(d.size for d in self.dims)

    @cached_property
    def strides(self) -> tuple[int, ...]:
        return tuple(math.prod(self.sizes[:d]) for d in range(len(self.dims)))

    @property
    def num_npus(self) -> int:
        return math.prod(self.sizes)

    @cached_property
    def switch_base(self) -> tuple[int | None, ...]:
        """Per dimension, the node id of its first switch (None: not a Switch dimension)."""
        out: list[int | None] = []
        nxt = self.num_npus
        for d in self.dims:
            if d.kind == SWITCH:
                out.append(nxt)
                nxt += self.num_npus // d.size
            else:
                out.append(None)
        return tuple(out)

    @property
    def num_links(self) -> int:
        """Directed links of the graph."""
        n = self.num_npus
        return sum(n * (d.out_links if d.kind != SWITCH else 2) for d in self.dims)

    @property
    def num_switches(self) -> int:
        return sum(self.num_npus // d.size for d in self.dims if d.kind == SWITCH)

    @property
    def label(self) -> str:
        return "x".join(d.label for d in self.dims)

    # ------------------------------------------------------------------ addresses
    def coords(self, npus: Sequence[int] | np.ndarray) -> np.ndarray:
        """Coordinates of NPU ids, shape (len(npus), dims)."""
        u = np.asarray(npus, dtype=np.int64)[:, None]
        return (u // np.array(self.strides)) % np.array(self.sizes)

    def npu(self, coords: Sequence[int] | np.ndarray) -> np.ndarray | int:
        """NPU id(s) of coordinates (the last axis indexes the dimensions)."""
        c = np.asarray(coords, dtype=np.int64)
        ids = c @ np.array(self.strides, dtype=np.int64)
        return int(ids) if ids.ndim == 0 else ids

    def group(self, u: int, d: int) -> int:
        """Index of the dimension-``d`` group of NPU ``u`` among that dimension's groups."""
        s, k = self.strides[d], self.sizes[d]
        return (u // (s * k)) * s + u % s

    def switch_of(self, u: int, d: int) -> int:
        """Node id of the switch of NPU ``u``'s group in Switch dimension ``d``."""
        base = self.switch_base[d]
        if base is None:
            raise FabricError(f"dimension {d} is a {self.dims[d].kind}, not a Switch")
        return base + self.group(u, d)

    # ------------------------------------------------------------------ graph and routes
    def link_pairs(self) -> list[tuple[int, int, float, float]]:
        """Every physical link once, as (a, b, bandwidth, latency) (both directions exist)."""
        pairs: list[tuple[int, int, float, float]] = []
        n = self.num_npus
        for d, dim in enumerate(self.dims):
            s, k = self.strides[d], dim.size
            base = np.arange(n)[(np.arange(n) // s) % k == 0]  # coordinate d = 0
            bw, lat = dim.bandwidth, dim.latency
            for b in base.tolist():
                members = [b + i * s for i in range(k)]
                if dim.kind == RING:
                    hops = k if k > 2 else 1
                    pairs += [(members[i], members[(i + 1) % k], bw, lat) for i in range(hops)]
                elif dim.kind == FULLY_CONNECTED:
                    pairs += [
                        (members[i], members[j], bw, lat) for i in range(k) for j in range(i + 1, k)
                    ]
                else:
                    sw = self.switch_of(b, d)
                    pairs += [(m, sw, bw, lat) for m in members]
        return pairs

    def path(self, src: int, dst: int) -> list[int]:
        """Node ids from NPU ``src`` to NPU ``dst``, dimension 0 first."""
        path = [src]
        cur = src
        for d, dim in enumerate(self.dims):
            s, k = self.strides[d], dim.size
            a, b = (cur // s) % k, (dst // s) % k
            if a == b:
                continue
            base = cur - a * s
            if dim.kind == RING:
                ahead = (b - a) % k
                step = -1 if k - ahead < ahead else 1
                x = a
                while x != b:
                    x = (x + step) % k
                    path.append(base + x * s)
            elif dim.kind == FULLY_CONNECTED:
                path.append(base + b * s)
            else:
                path += [self.switch_of(cur, d), base + b * s]
            cur = base + b * s
        return path
