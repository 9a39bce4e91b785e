"""The Fred_m(P) interconnect as data: the one description of a switch's wiring.

Fred_m(P) is a recursive (m, n=2, r) Clos network (paper §4, Fig. 7):

* P even, P = 2r: r input uSwitches (2 inputs, m outputs), m middle copies of Fred_m(r),
  r output uSwitches (m inputs, 2 outputs).
* P odd, P = 2r + 1: the same on ports 0..2r-1, middles are Fred_m(r + 1), and the last
  port 2r reaches port r of every middle through a 1:m demux, and leaves through an m:1 mux
  (Chang and Melhem's arbitrary-size Benes construction).
* Wiring: ports 2k and 2k+1 share input uSwitch k and output uSwitch k; output j of input
  uSwitch k drives port k of middle j; port k of middle j drives input j of output uSwitch k.
* Base cases. Fred_m(2) is one 2x2 RD-uSwitch: each output selects nothing, either input or
  their sum, which covers every flow set on two ports. Fred_m(3) is the odd construction
  with r = 1 but only two middle Fred_m(2) copies whatever m is: its conflict graph has at
  most two edges (one per 2-port uSwitch; port 2 conflicts with nobody) and so is always
  2-colourable; more middles would add hardware and no routability. The exhaustive test
  in tests/model/switch/test_topology.py routes every valid flow set on 2 and 3 ports.

Two views of the same network are built together:

* ``Subnet``: the recursive structure (which nodes form the input stage, output stage,
  demux, mux and middles of each level), used by the router.
* ``Topology.nodes`` / ``Topology.links``: the flat graph of uSwitches and point-to-point
  links in topological order, used by the functional model, the RTL generator and the
  manifest.

A uSwitch is configured by choosing, for each of its outputs, a *source*: nothing, one of
its inputs, or, for reducing kinds, the sum of its two inputs (model/switch/node.py names the
codes). See model/switch/config.py for what each kind may do.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from fredfab.model.errors import InputError
from fredfab.model.switch.graph import (  # noqa: F401  (re-exported: the Clos vocabulary)
    BOUNDARY,
    NONE,
    REDUCING,
    SUM_OPERANDS,
    Endpoint,
    Kind,
    Link,
    Node,
    Source,
    SourceKind,
    SwitchGraph,
)


@dataclass
class Subnet:
    """One level of the recursion: Fred_m(ports) and where its parts sit in the flat graph."""

    ports: int
    name: str
    base: int | None = None  # Fred_m(2): the single RD node
    ins: list[int] = field(default_factory=list)  # input uSwitch k (ports 2k, 2k+1)
    outs: list[int] = field(default_factory=list)  # output uSwitch k (ports 2k, 2k+1)
    demux: int | None = None  # odd ports: demux of the last input port
    mux: int | None = None  # odd ports: mux of the last output port
    middles: list[Subnet] = field(default_factory=list)

    @property
    def r(self) -> int:
        """Number of 2-port input (and output) uSwitches."""
        return self.ports // 2

    @property
    def odd(self) -> bool:
        return self.ports % 2 == 1


class Topology(SwitchGraph):
    """Fred_m(ports), flattened. Build with ``Topology.build(ports, m)`` (cached)."""

    arch = "clos"

    def __init__(self, ports: int, m: int) -> None:
        if not isinstance(ports, int) or ports < 2:
            raise InputError(f"Fred_m(P) needs P >= 2 ports, got {ports!r}")
        if not isinstance(m, int) or m < 2:
            raise InputError(f"Fred_m(P) needs m >= 2 middle subnetworks, got {m!r}")
        super().__init__(ports)
        self.m = m
        # The recursion; its wiring is turned into links below.
        self.root = self._build(ports, "", 0)
        self.inputs = [self._sub_input(self.root, p) for p in range(ports)]
        self.outputs = [self._sub_output(self.root, p) for p in range(ports)]
        _renumber_subnet(self.root, self._finalize())

    @staticmethod
    @functools.cache
    def build(ports: int, m: int) -> Topology:
        """The (shared, read-only) topology of Fred_m(ports)."""
        return Topology(ports, m)

    # -- construction -------------------------------------------------------------------

    def _build(self, ports: int, prefix: str, stage: int) -> Subnet:
        sub = Subnet(ports=ports, name=prefix.rstrip(".") or "top")
        if ports == 2:
            sub.base = self._add(f"{prefix}rd", Kind.RD, 2, 2, stage)
            return sub
        r = ports // 2
        n_mid = 2 if ports == 3 else self.m  # see module docstring: Fred_m(3)
        mid_ports = r + 1 if ports % 2 else r
        sub.ins = [self._add(f"{prefix}in{k}", Kind.R, 2, n_mid, stage) for k in range(r)]
        if ports % 2:
            sub.demux = self._add(f"{prefix}demux", Kind.DEMUX, 1, n_mid, stage)
        sub.middles = [self._build(mid_ports, f"{prefix}m{j}.", stage + 1) for j in range(n_mid)]
        out_stage = stage + 1 + stages_of(mid_ports)
        sub.outs = [self._add(f"{prefix}out{k}", Kind.D, n_mid, 2, out_stage) for k in range(r)]
        if ports % 2:
            sub.mux = self._add(f"{prefix}mux", Kind.MUX, n_mid, 1, out_stage)
        # Clos wiring between the outer stages and the middles.
        for j, mid in enumerate(sub.middles):
            for k in range(r):
                self._connect(Endpoint(sub.ins[k], j), self._sub_input(mid, k))
                self._connect(self._sub_output(mid, k), Endpoint(sub.outs[k], j))
            if ports % 2:
                self._connect(Endpoint(sub.demux, j), self._sub_input(mid, r))
                self._connect(self._sub_output(mid, r), Endpoint(sub.mux, j))
        return sub

    @staticmethod
    def _sub_input(sub: Subnet, port: int) -> Endpoint:
        """The node input that external input ``port`` of ``sub`` drives."""
        if sub.base is not None:
            return Endpoint(sub.base, port)
        if sub.odd and port == sub.ports - 1:
            return Endpoint(sub.demux, 0)
        return Endpoint(sub.ins[port // 2], port % 2)

    @staticmethod
    def _sub_output(sub: Subnet, port: int) -> Endpoint:
        """The node output that drives external output ``port`` of ``sub``."""
        if sub.base is not None:
            return Endpoint(sub.base, port)
        if sub.odd and port == sub.ports - 1:
            return Endpoint(sub.mux, 0)
        return Endpoint(sub.outs[port // 2], port % 2)


def _renumber_subnet(sub: Subnet, renum: dict[int, int]) -> None:
    if sub.base is not None:
        sub.base = renum[sub.base]
    sub.ins = [renum[i] for i in sub.ins]
    sub.outs = [renum[i] for i in sub.outs]
    if sub.demux is not None:
        sub.demux = renum[sub.demux]
        sub.mux = renum[sub.mux]
    for mid in sub.middles:
        _renumber_subnet(mid, renum)


@functools.cache
def stages_of(ports: int) -> int:
    """Number of uSwitch columns of Fred_m(ports); m does not change it."""
    if ports == 2:
        return 1
    return 2 + stages_of(ports // 2 + ports % 2)
