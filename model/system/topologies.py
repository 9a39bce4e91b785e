"""ASTRA-sim's multi-dimensional topologies as fabrics (routing ``dims``): the fabric of a
fredfab.model.system.dims.Dims, and generators for rings, tori, fully connected groups and a
single switch (docs/astra-sim.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from fredfab.model.system.dims import (
    DIMS_ROUTING,
    FULLY_CONNECTED,
    MAX_LINKS,
    RING,
    SAMPLE_BANDWIDTH,
    SAMPLE_LATENCY,
    SWITCH,
    Dim,
    Dims,
)
from fredfab.model.system.elements import FabricError, Node, build_links, check_counts
from fredfab.model.system.fabric import Fabric


def dims_fabric(
    dims: Sequence[Dim] | Dims,
    *,
    name: str | None = None,
    description: str = "",
) -> Fabric:
    """The fabric of an ASTRA-sim multi-dimensional topology (routing ``dims``)."""
    shape = dims if isinstance(dims, Dims) else Dims(tuple(dims))
    where = f"topology {shape.label}"
    # Bound the sizes before building anything (a typo must not build for hours).
    check_counts(shape.num_npus, 0, shape.num_switches, where)
    if shape.num_links > MAX_LINKS:
        raise FabricError(
            f"{where}: {shape.num_links} directed links; a topology has at most {MAX_LINKS} "
            "(FullyConnected dimensions grow as the square of their size)"
        )
    n = shape.num_npus
    nodes = [Node(i, f"npu{i}", "npu") for i in range(n)]
    for d, dim in enumerate(shape.dims):
        if dim.kind == SWITCH:
            base = shape.switch_base[d]
            nodes += [Node(base + g, f"sw{d}.{g}", "switch") for g in range(n // dim.size)]
    return Fabric(
        name or f"dims-{shape.label}",
        nodes,
        build_links(shape.link_pairs()),
        DIMS_ROUTING,
        dims=shape,
        description=description or f"ASTRA-sim topology {shape.label} ({n} NPUs)",
    )


# ---------------------------------------------------------------------- generators
def ring(
    npus: int,
    bandwidth: float = SAMPLE_BANDWIDTH,
    latency: float = SAMPLE_LATENCY,
    *,
    name: str | None = None,
) -> Fabric:
    """A bidirectional ring of ``npus`` NPUs."""
    return dims_fabric([Dim(RING, npus, bandwidth, latency)], name=name)


def torus(
    sizes: Sequence[int],
    bandwidth: float | Sequence[float] = SAMPLE_BANDWIDTH,
    latency: float | Sequence[float] = SAMPLE_LATENCY,
    *,
    name: str | None = None,
) -> Fabric:
    """A torus (a Ring per dimension; 2D for two sizes, 3D for three)."""
    return dims_fabric(_same_kind(RING, sizes, bandwidth, latency), name=name)


def fully_connected(
    npus: int,
    bandwidth: float = SAMPLE_BANDWIDTH,
    latency: float = SAMPLE_LATENCY,
    *,
    name: str | None = None,
) -> Fabric:
    """``npus`` NPUs with a direct link between every two."""
    return dims_fabric([Dim(FULLY_CONNECTED, npus, bandwidth, latency)], name=name)


def single_switch(
    npus: int,
    bandwidth: float = SAMPLE_BANDWIDTH,
    latency: float = SAMPLE_LATENCY,
    *,
    name: str | None = None,
) -> Fabric:
    """``npus`` NPUs on one switch."""
    return dims_fabric([Dim(SWITCH, npus, bandwidth, latency)], name=name)


def _same_kind(
    kind: str,
    sizes: Sequence[int],
    bandwidth: float | Sequence[float],
    latency: float | Sequence[float],
) -> list[Dim]:
    n = len(sizes)
    bws = [bandwidth] * n if isinstance(bandwidth, int | float) else list(bandwidth)
    lats = [latency] * n if isinstance(latency, int | float) else list(latency)
    if len(bws) != n or len(lats) != n:
        raise FabricError(f"give one bandwidth and one latency per dimension ({n})")
    return [Dim(kind, k, b, lt) for k, b, lt in zip(sizes, bws, lats, strict=True)]
