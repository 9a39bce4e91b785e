"""The collective algorithms by name: which apply to a request, and how each one is built.

Every algorithm is an ``Algorithm`` entry registered once (``register``) by the module that
defines it; nothing else lists algorithm names. ``candidates`` answers "which algorithms can
run this request on this fabric?"; a simulator (fredfab.sim.engines.system) picks among them,
and a user can force one by name (``lookup``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.errors import InputError
from fredfab.model.system.fabric import Fabric
from fredfab.model.system.request import CollectiveRequest, Plan
from fredfab.model.system.schedule import Schedule, TreeFlow

#: Serial steps of in-switch tree flows (each step: the flows configured at the same time).
Steps = tuple[tuple[TreeFlow, ...], ...]


@dataclass(frozen=True)
class Algorithm:
    """One collective algorithm.

    ``applies(fabric, request)`` says whether it can run the request (the op is checked
    against ``ops`` before it is called, and the group has at least two members or uses the
    I/O controllers). ``build(schedule, plan, chunks)`` adds its transfers. In-switch
    algorithms give ``steps(fabric, request)``: the tree flows the switches must be configured
    for, checked for routability before the algorithm is used. ``bound(fabric, request)``, when
    given, is a lower bound on its time in seconds from link bandwidths alone (documented next
    to the algorithm in docs/system-model.md). ``preference`` orders candidates when nothing
    else decides (lower first): the algorithm a fabric would run by default.
    """

    name: str
    summary: str
    ops: frozenset[CollectiveKind]
    applies: Callable[[Fabric, CollectiveRequest], bool]
    build: Callable[[Schedule, Plan, int], None]
    steps: Callable[[Fabric, CollectiveRequest], Steps] | None = None
    #: In-switch steps that run at once, time-multiplexed at packet granularity.
    multiplexed: bool = False
    bound: Callable[[Fabric, CollectiveRequest], float] | None = None
    preference: int = 100
    #: Runs only when named (``--algorithm``, an ASTRA-sim system file), never a candidate
    #: of the default choice: e.g. a per-dimension combination a system file configures.
    named_only: bool = False

    @property
    def in_switch(self) -> bool:
        return self.steps is not None

    def plan(self, fabric: Fabric, request: CollectiveRequest, index: int = 0) -> Plan:
        steps = self.steps(fabric, request) if self.steps is not None else ()
        return Plan(index, request, self.name, steps, multiplexed=self.multiplexed)


_REGISTRY: dict[str, Algorithm] = {}


def register(algorithm: Algorithm) -> Algorithm:
    """Add ``algorithm``; its name must be new."""
    if algorithm.name in _REGISTRY:
        raise ValueError(f"algorithm {algorithm.name!r} is registered twice")
    _REGISTRY[algorithm.name] = algorithm
    return algorithm


def algorithms() -> tuple[Algorithm, ...]:
    """Every registered algorithm, by preference then name."""
    return tuple(sorted(_REGISTRY.values(), key=lambda a: (a.preference, a.name)))


def lookup(name: str) -> Algorithm:
    """The algorithm called ``name``; a ValueError naming the known ones otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(a.name for a in algorithms())
        raise InputError(f"algorithm {name!r} unknown; use one of {known}") from None


def candidates(
    fabric: Fabric, request: CollectiveRequest, endpoint: bool = False
) -> list[Algorithm]:
    """The algorithms that can run ``request`` on ``fabric``, by preference then name
    (``endpoint`` leaves out the in-switch ones)."""
    return [
        a
        for a in algorithms()
        if request.op in a.ops
        and not (endpoint and a.in_switch)
        and not a.named_only
        and a.applies(fabric, request)
    ]


def registered(name: str) -> bool:
    """True when an algorithm called ``name`` is registered."""
    return name in _REGISTRY
