"""The functional FRED switch: route a step's flows, then move the data through the network.

This is the Python model the RTL is checked against: for each step of a collective's
schedule it routes the step's concurrent flows (model/switch/router.py), propagates the input
chunks through every configured uSwitch with the golden hardware adder (model/switch/network.py)
and reports what each output port received and the reduction tree each flow used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from fredfab.model.collectives import Collective, order_from_trees, run_schedule
from fredfab.model.dtypes import ElementType
from fredfab.model.golden import Tree, add
from fredfab.model.switch.flow import Flow
from fredfab.model.switch.network import run
from fredfab.model.switch.router import Routing, route


@dataclass(frozen=True)
class FunctionalSwitch:
    """Fred_m(ports) (or the crossbar switch, arch "xbar") carrying elements of type ``et``."""

    ports: int
    m: int
    et: ElementType
    backtrack: bool = True
    arch: str = "clos"

    def route(self, flows: Sequence[Flow]) -> Routing:
        return route(flows, self.ports, self.m, self.backtrack, self.arch)

    def forward(self, routing: Routing, data: Mapping[int, np.ndarray]) -> list[np.ndarray | None]:
        """Per output port: what arrives (None where nothing does) for per-input-port data."""
        return run(routing.config, data, lambda a, b: add(a, b, self.et))

    def execute_step(
        self, flows: Sequence[Flow], data: Mapping[int, np.ndarray]
    ) -> tuple[dict[int, np.ndarray], dict[Flow, Tree]]:
        """Route ``flows`` and run ``data``; the executor interface of ``run_schedule``."""
        routing = self.route(flows)
        outs = self.forward(routing, data)
        received = {p: outs[p] for f in routing.flows for p in f.ops}
        return received, dict(zip(routing.flows, routing.trees, strict=True))

    def run_collective(
        self, collective: Collective, inputs: Mapping[int, np.ndarray]
    ) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
        """(what the switch delivers, what the golden model expects in the same order)."""
        outputs, trees = run_schedule(collective, inputs, self.et, self.execute_step)
        expected = collective.expected(inputs, self.et, order_from_trees(trees))
        return outputs, expected
