"""Random and exhaustive flow sets, for tests, benches and co-simulation traffic."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from fredfab.model.errors import InputError
from fredfab.model.switch.flow import Flow


def random_flow_set(
    rng: np.random.Generator,
    ports: int,
    n_flows: int | None = None,
    use_fraction: float | None = None,
) -> list[Flow]:
    """A random set of concurrent flows on ``ports`` ports.

    Each flow gets a random, non-empty share of a random subset of the input ports and of
    the output ports, so kinds (unicast, multicast, reduce, All-Reduce) and sizes mix.
    ``n_flows`` defaults to a random count in 1..ports; ``use_fraction`` (default random) is
    the share of ports that take part.
    """
    if ports < 1:
        raise InputError(f"ports must be >= 1, got {ports}")
    if n_flows is None:
        n_flows = int(rng.integers(1, ports + 1))
    if not 1 <= n_flows <= ports:
        raise InputError(f"n_flows must be in 1..{ports}, got {n_flows}")
    frac = rng.uniform(0.3, 1.0) if use_fraction is None else use_fraction
    n_used = max(n_flows, round(frac * ports))
    ins = _split(rng, rng.permutation(ports)[:n_used], n_flows)
    outs = _split(rng, rng.permutation(ports)[:n_used], n_flows)
    return [Flow(a.tolist(), b.tolist()) for a, b in zip(ins, outs, strict=True)]


def _split(rng: np.random.Generator, items: np.ndarray, parts: int) -> list[np.ndarray]:
    """Split ``items`` into ``parts`` non-empty groups at random cut points."""
    cuts = np.sort(rng.choice(np.arange(1, len(items)), size=parts - 1, replace=False))
    return np.split(items, cuts)


def all_flow_sets(ports: int) -> Iterator[list[Flow]]:
    """Every non-empty set of concurrent flows on ``ports`` ports (exponential: small P only)."""
    for in_blocks in _partial_partitions(list(range(ports))):
        for out_blocks in _disjoint_sequences(list(range(ports)), len(in_blocks)):
            yield [Flow(a, b) for a, b in zip(in_blocks, out_blocks, strict=True)]


def _partial_partitions(items: list[int]) -> Iterator[list[list[int]]]:
    """Partitions of every non-empty subset of ``items`` into blocks (canonical order)."""

    def rec(i: int, blocks: list[list[int]]) -> Iterator[list[list[int]]]:
        if i == len(items):
            if blocks:
                yield [b[:] for b in blocks]
            return
        yield from rec(i + 1, blocks)  # item unused
        for b in blocks:
            b.append(items[i])
            yield from rec(i + 1, blocks)
            b.pop()
        blocks.append([items[i]])
        yield from rec(i + 1, blocks)
        blocks.pop()

    yield from rec(0, [])


def _disjoint_sequences(items: list[int], k: int) -> Iterator[list[list[int]]]:
    """Ordered sequences of ``k`` disjoint non-empty subsets of ``items``."""

    # Assign each item to one of the k blocks or to none; keep assignments with no empty block.
    def rec(i: int, blocks: list[list[int]]) -> Iterator[list[list[int]]]:
        if i == len(items):
            if all(blocks):
                yield [b[:] for b in blocks]
            return
        yield from rec(i + 1, blocks)
        for b in blocks:
            b.append(items[i])
            yield from rec(i + 1, blocks)
            b.pop()

    yield from rec(0, [[] for _ in range(k)])
