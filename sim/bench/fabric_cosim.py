"""Fabric co-simulation speed: cocotb cycles per second of a whole fabric of FRED switches
(hw/fabric.py) and the time to generate and build it, on Icarus and Verilator.

Each row runs the fabric's All-Reduce over every NPU and the MP and DP phases of a strategy
under random idles at the inputs and random backpressure at the outputs. ``generate_s`` is
the Verilog generation and ``build_s`` the simulator build of this run (0 when the cache
already held them: delete build/cosim/rtl/fabric_* and build/cosim/*/fabric_* for cold
figures). ``--quick`` runs the small tree only.
"""

from __future__ import annotations

import time

from fredfab.hw.fabric_params import FabricParams
from fredfab.model.system.placement import Strategy
from fredfab.sim.verify import cosim
from fredfab.sim.verify.fabric_scenarios import FabricScenarioBuilder, collective_op, strategy_ops

NAME = "fabric_cosim"
#: (fabric, strategy, simulators, flits per sender and phase); FRED-D on Verilator only.
VARIANTS = [
    ("tree:2x2", "MP2-DP2", ("icarus", "verilator"), 200),
    ("fred-d", "MP4-DP5", ("verilator",), 200),
]


def run(quick: bool = False) -> list[dict]:
    rows = []
    for spec, strategy, sims, flits in VARIANTS[:1] if quick else VARIANTS:
        params = FabricParams(spec, lanes=1, dtype="int16", link_delay=1)
        t0 = time.perf_counter()
        cosim.rtl(params, cosim.DEFAULT_ROOT)
        generate_s = time.perf_counter() - t0
        npus = params.fabric.npus
        ops = [collective_op("all-reduce", npus), *strategy_ops(Strategy.parse(strategy))]
        for sim in sims:
            b = FabricScenarioBuilder(params, 7)
            sc = b.scenario("speed", ops, flits if not quick else 50, "random", "random", 7)
            build = cosim.build(params, sim)
            res = cosim.run(params, sim, [sc], label="speed")
            rep = res.scenarios[0]
            rows.append(
                {
                    "sim": sim,
                    "fabric": params.fabric.name,
                    "switches": len(params.wiring.switches),
                    "npu_ports": len(npus),
                    "passed": rep.passed,
                    "cycles": rep.cycles,
                    "flits_out": rep.out_flits,
                    "wall_s": res.wall_seconds,
                    "cycles_per_s": rep.cycles / rep.wall_seconds if rep.wall_seconds else None,
                    "generate_s": generate_s,
                    "build_s": build.seconds,
                }
            )
            generate_s = 0.0
    return rows
