"""The proofs' notion of a configuration and of the network's function is the model's.

``decoder.accepted_tuples`` must be exactly what ``check_node_codes`` accepts, and every
configuration the router emits must be accepted by it; ``spec.expected_outputs`` evaluated
(in the Amaranth simulator) on routed configurations must give what the functional model
(model/switch/network.py ``propagate``) computes.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from fredfab.hw.config_layout import config_data_layout
from fredfab.model.switch.arches import build_topology
from fredfab.model.switch.config import ConfigError, check_node_codes
from fredfab.model.switch.flowgen import random_flow_set
from fredfab.model.switch.network import propagate
from fredfab.model.switch.router import RouteConflict, route
from fredfab.sim.formal.blocks import block_nodes
from fredfab.sim.formal.decoder import accepted_tuples
from fredfab.sim.formal.spec import expected_outputs


@pytest.mark.parametrize("name", ["R_2x3", "D_3x2", "RD_2x2", "DEMUX_1x3", "MUX_3x1"])
def test_accepted_tuples_are_those_the_model_accepts(name):
    node = block_nodes()[name]
    accepted = set(accepted_tuples(node))
    rng = random.Random(7)
    for _ in range(200):
        codes = tuple(rng.randrange(1 << node.code_bits) for _ in range(node.n_out))
        try:
            check_node_codes(node, codes)
            ok = True
        except ConfigError:
            ok = False
        assert (codes in accepted) == ok
    assert (0,) * node.n_out in accepted  # idle is always allowed


def _routed(ports, m, seed):
    rng = np.random.default_rng(seed)
    while True:
        flows = random_flow_set(rng, ports)
        try:
            return route(flows, ports, m).config
        except RouteConflict:
            continue


@pytest.mark.parametrize(("ports", "m"), [(4, 2), (5, 3)])
def test_spec_computes_the_models_function_on_routed_configurations(ports, m):
    topo = build_topology(ports, m, "clos")
    layout = config_data_layout(topo.config_layout)
    width = 16
    top = Module()
    word = Signal(layout.size)
    data = [Signal(width, name=f"d{p}") for p in range(ports)]
    want = expected_outputs(top, topo, layout(word), [(1, d) for d in data], width)
    routed = [Signal(name=f"r{q}") for q in range(ports)]
    values = [Signal(width, name=f"v{q}") for q in range(ports)]
    for q in range(ports):
        top.d.comb += [routed[q].eq(want[q].routed), values[q].eq(want[q].data)]
    cases = [_routed(ports, m, seed) for seed in range(6)]
    for config in cases:
        for node, codes in zip(topo.nodes, config.codes, strict=True):
            assert tuple(codes) in accepted_tuples(node)
    rng = random.Random(11)

    async def bench(ctx):
        for config in cases:
            inputs = {p: rng.randrange(1 << width) for p in range(ports)}
            ctx.set(word, config.to_bits())
            for p in range(ports):
                ctx.set(data[p], inputs[p])
            model = propagate(topo, config.codes, inputs, lambda a, b: (a + b) % (1 << width))
            for q in range(ports):
                if model[q] is None:
                    assert ctx.get(routed[q]) == 0
                else:
                    assert ctx.get(routed[q]) == 1 and ctx.get(values[q]) == model[q]

    sim = Simulator(top)
    sim.add_testbench(bench)
    sim.run()
