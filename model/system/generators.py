"""Parameterised fabrics: W x H meshes and FRED switch trees of any depth and radix.

Defaults are the paper's wafer (paper §6 and §7.1-7.2) where it gives a number, and a
documented assumption where it does not.
"""

from __future__ import annotations

from collections.abc import Sequence

from fredfab.model.system.elements import (
    MAX_IO_CONTROLLERS,
    MAX_NPUS,
    MAX_TREE_LEVELS,
    FabricError,
    Node,
    build_links,
    check_counts,
)
from fredfab.model.system.fabric import SWITCH_M, Fabric
from fredfab.model.system.switch_timing import SwitchTiming
from fredfab.model.system.units import GB, NS
from fredfab.model.toml_fields import check_choice, check_int

#: Mesh NPU-NPU link, per direction: 3 TB/s of NPU send bandwidth over 4 links (paper §7.2).
MESH_LINK_BW = 750 * GB
#: NPU-L1 link of FRED, per direction: the NPU's 3 TB/s send / 3 TB/s receive (paper §6.1).
NPU_LINK_BW = 3000 * GB
#: I/O controller to off-wafer memory, 128 GB/s each (paper §6.1); taken per direction.
IO_BW = 128 * GB
#: On-wafer link latency per hop. Assumption: the paper gives none. Die-to-die PHYs on an
#: interposer take a few ns; 10 ns covers PHY pair, a few cm of wafer wire and port logic.
LINK_LATENCY = 10 * NS
#: Latency of an I/O controller link. Assumption: off-wafer memory controller and its
#: SerDes, ~100 ns (order of a DRAM access); only matters for tiny transfers.
IO_LATENCY = 100 * NS


#: Mesh NPU numberings (generators.mesh, the [mesh] table's ``numbering``).
MESH_NUMBERINGS = ("serpentine", "row-major")
#: The default numbering. Serpentine (boustrophedon: even rows left to right, odd rows right
#: to left) makes consecutive NPU ids physical neighbours everywhere, also across row ends,
#: so the paper's placement (MP groups and pipeline stages on consecutive ids, placement.py)
#: keeps each MP pair one hop apart. Row-major would put pairs such as (W-1, W) at opposite
#: ends of two rows, sharing the row's links with the pairs in between.
MESH_NUMBERING = "serpentine"


def mesh_position(u: int, width: int, numbering: str = MESH_NUMBERING) -> tuple[int, int]:
    """Grid position (x, y) of NPU id ``u`` in a mesh ``width`` NPUs wide."""
    y, i = divmod(u, width)
    if numbering == "serpentine" and y % 2:
        return width - 1 - i, y
    return i, y


def mesh(
    width: int,
    height: int,
    *,
    link_bandwidth: float = MESH_LINK_BW,
    link_latency: float = LINK_LATENCY,
    io_controllers: int | None = None,
    io_bandwidth: float = IO_BW,
    io_latency: float = IO_LATENCY,
    numbering: str = MESH_NUMBERING,
    name: str | None = None,
    description: str = "",
) -> Fabric:
    """A W x H mesh of NPUs, X-Y routed.

    ``numbering`` maps NPU ids onto the grid: "serpentine" (the default, see MESH_NUMBERING:
    row y holds ids W*y .. W*y + W-1, left to right on even rows and right to left on odd
    ones) or "row-major" (id = x + W*y). Coordinates are the same either way: ``grid[x, y]``
    and each node's x, y say where an id sits.

    I/O controllers sit on the edge NPUs: by default one per outer side of a boundary NPU,
    2(W + H) in all (18 for the paper's 5 x 4 wafer; a corner NPU gets two). Another count
    is spread round-robin over those sides.
    """
    width = check_int(width, "mesh width", lo=1, hi=MAX_NPUS, error=FabricError)
    height = check_int(height, "mesh height", lo=1, hi=MAX_NPUS, error=FabricError)
    check_choice(numbering, "mesh numbering", MESH_NUMBERINGS, error=FabricError)
    if io_controllers is not None:
        io_controllers = _io_count(io_controllers)
    n = width * height
    check_counts(n, 0, 0, f"mesh {width} x {height}")
    pos = [mesh_position(u, width, numbering) for u in range(n)]
    at = {p: u for u, p in enumerate(pos)}
    nodes = [Node(u, f"npu{u}", "npu", x=x, y=y) for u, (x, y) in enumerate(pos)]
    pairs = []
    for y in range(height):
        for x in range(width):
            if x + 1 < width:
                pairs.append((at[x, y], at[x + 1, y], link_bandwidth, link_latency))
            if y + 1 < height:
                pairs.append((at[x, y], at[x, y + 1], link_bandwidth, link_latency))
    # Outer sides: top row, right column, bottom row (right to left), left column (bottom up).
    sides = [at[x, 0] for x in range(width)]
    sides += [at[width - 1, y] for y in range(height)]
    sides += [at[x, height - 1] for x in reversed(range(width))]
    sides += [at[0, y] for y in reversed(range(height))]
    k = len(sides) if io_controllers is None else io_controllers
    check_counts(n, k, 0, f"mesh {width} x {height}")
    for i in range(k):
        nodes.append(Node(n + i, f"io{i}", "io"))
        pairs.append((n + i, sides[i % len(sides)], io_bandwidth, io_latency))
    return Fabric(
        name or f"mesh-{width}x{height}",
        nodes,
        build_links(pairs),
        "xy",
        description=description or f"{width} x {height} 2D mesh, X-Y routing",
    )


def fred_tree(
    radix: Sequence[int],
    bandwidth: Sequence[float],
    *,
    latency: float | Sequence[float] = LINK_LATENCY,
    io_controllers: int = 0,
    io_bandwidth: float = IO_BW,
    io_latency: float = IO_LATENCY,
    in_switch: bool = True,
    switch_m: int = SWITCH_M,
    timing: SwitchTiming | None = None,
    name: str | None = None,
    description: str = "",
) -> Fabric:
    """A tree of FRED switches.

    ``radix[0]`` NPUs hang off each L1 switch, ``radix[1]`` L1 switches off each L2 switch,
    and so on; the last level has one root switch, so there are prod(radix) NPUs.
    ``bandwidth[i]`` is the per-direction bandwidth of each link between level i and i+1
    (level 0 = NPUs): for FRED, [3 TB/s NPU-L1, 1.5 or 12 TB/s per L1 switch to L2].
    ``latency`` likewise (one number for all levels). I/O controllers are spread
    round-robin over the L1 switches.
    """
    if not 1 <= len(radix) <= MAX_TREE_LEVELS:
        raise FabricError(
            f"tree radix needs 1 to {MAX_TREE_LEVELS} levels, got {len(radix)}: {list(radix)}"
        )
    radix = [
        check_int(r, f"tree radix[{i}]", lo=1, hi=MAX_NPUS, error=FabricError)
        for i, r in enumerate(radix)
    ]
    io_controllers = _io_count(io_controllers)
    if len(bandwidth) != len(radix):
        raise FabricError(
            f"tree needs one bandwidth per level ({len(radix)}), got {len(bandwidth)}"
        )
    lats = [float(latency)] * len(radix) if isinstance(latency, int | float) else list(latency)
    if len(lats) != len(radix):
        raise FabricError(f"tree needs one latency per level ({len(radix)}), got {len(lats)}")
    # Switch counts per level: level l (1-based) has prod(radix[l:]) switches.
    counts = []
    for lvl in range(1, len(radix) + 1):
        c = 1
        for r in radix[lvl:]:
            c *= r
        counts.append(c)
    n_npu = radix[0] * counts[0]
    check_counts(n_npu, io_controllers, sum(counts), f"tree radix {radix}")
    nodes = [Node(i, f"npu{i}", "npu") for i in range(n_npu)]
    n_io = io_controllers
    nodes += [Node(n_npu + i, f"io{i}", "io") for i in range(n_io)]
    first_sw: list[int] = []
    nxt = n_npu + n_io
    for lvl, c in enumerate(counts, start=1):
        first_sw.append(nxt)
        for j in range(c):
            nodes.append(Node(nxt + j, f"L{lvl}.{j}" if c > 1 else f"L{lvl}", "switch", level=lvl))
        nxt += c
    pairs = []
    for i in range(n_npu):
        pairs.append((i, first_sw[0] + i // radix[0], bandwidth[0], lats[0]))
    for i in range(n_io):
        pairs.append((n_npu + i, first_sw[0] + i % counts[0], io_bandwidth, io_latency))
    for lvl in range(1, len(radix)):
        for j in range(counts[lvl - 1]):
            pairs.append(
                (first_sw[lvl - 1] + j, first_sw[lvl] + j // radix[lvl], bandwidth[lvl], lats[lvl])
            )
    shape = "x".join(str(r) for r in radix)
    return Fabric(
        name or f"fred-tree-{shape}",
        nodes,
        build_links(pairs),
        "tree",
        in_switch=in_switch,
        switch_m=switch_m,
        timing=timing,
        description=description
        or f"FRED tree {shape} ({n_npu} NPUs), in-switch collectives "
        + ("on" if in_switch else "off"),
    )


def _io_count(n: int) -> int:
    return check_int(n, "io_controllers", lo=0, hi=MAX_IO_CONTROLLERS, error=FabricError)
