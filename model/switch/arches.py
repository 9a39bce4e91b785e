"""The switch architectures by name, and the one way to build a switch's graph.

Every architecture is a ``SwitchGraph`` (model/switch/graph.py) built by its own module; this
registry is the only place that knows them all, so that model/switch/graph.py (the vocabulary)
does not import the architectures built from it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from fredfab.model.errors import InputError
from fredfab.model.switch.graph import SwitchGraph
from fredfab.model.switch.topology import Topology
from fredfab.model.switch.xbar_topology import XbarTopology

#: Architecture name -> builder (ports, m) -> its (cached) graph. "clos" is the paper's
#: recursive Fred_m(P); "xbar" the crossbar with a reduction tree, which has no m.
ARCHES: Mapping[str, Callable[[int, int | None], SwitchGraph]] = MappingProxyType(
    {
        "clos": lambda ports, m: Topology.build(ports, m),
        "xbar": lambda ports, m: XbarTopology.build(ports),
    }
)


def build_topology(ports: int, m: int | None = 3, arch: str = "clos") -> SwitchGraph:
    """The (cached) interconnect graph of a switch: Fred_m(ports) or the crossbar."""
    try:
        builder = ARCHES[arch]
    except (KeyError, TypeError):
        raise InputError(
            f"arch {arch!r} is not supported; use one of {', '.join(ARCHES)}"
        ) from None
    return builder(ports, m)
