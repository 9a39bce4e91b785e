"""Chakra trace nodes for tests: compute and collective nodes with their dependencies."""

from fredfab.model.chakra.trace import TraceNode


def comp(i: int, dur: float = 1e-3, deps=()) -> TraceNode:
    """COMP node ``i`` of ``dur`` seconds after ``deps`` (data dependencies)."""
    return TraceNode(i, f"c{i}", "COMP", deps=tuple(deps), data_count=len(deps), duration=dur)


def coll(i: int, size: int, deps=(), comm_type: int = 0, pg: str | None = None) -> TraceNode:
    """COMM_COLL node ``i`` (All-Reduce by default) of ``size`` bytes after ``deps``."""
    return TraceNode(
        i,
        f"x{i}",
        "COMM_COLL",
        deps=tuple(deps),
        data_count=len(deps),
        comm_type=comm_type,
        size=size,
        pg_name=pg,
    )
