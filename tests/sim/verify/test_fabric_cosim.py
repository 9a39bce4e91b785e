"""Co-simulation of a whole fabric (hw/fabric.py) with the switch's cocotb bench.

Every NPU port sends; every receiving NPU is checked flit by flit, bit-exact, against the
golden collective evaluated in the fabric's reduction order, under random idle cycles at
the inputs and random backpressure at the outputs; phases change through the fabric's
``select``. Small trees run on Icarus by default; FRED-D is -m slow.
"""

from __future__ import annotations

import json

import pytest

from fredfab.hw.fabric_params import FabricParams
from fredfab.model.system.placement import Strategy
from fredfab.sim.verify import cosim
from fredfab.sim.verify.fabric_check import cross_check
from fredfab.sim.verify.fabric_scenarios import (
    FABRIC_OPS,
    FabricScenarioBuilder,
    collective_op,
    strategy_ops,
)

ROOT = cosim.shared_build_root()


def _ops(params: FabricParams, strategies: tuple[str, ...]) -> list:
    npus = params.fabric.npus
    ops = [collective_op(name, npus, root=npus[k % len(npus)]) for k, name in enumerate(FABRIC_OPS)]
    for s in strategies:
        ops += strategy_ops(Strategy.parse(s))
    return ops


def _run(params: FabricParams, sim: str, strategies: tuple[str, ...], flits: int = 6):
    b = FabricScenarioBuilder(params, seed=3)
    ops = _ops(params, strategies)
    scenarios = [
        b.scenario("random", ops, flits, idle="random", stall="random", seed=5),
        b.scenario("stalls", ops, flits, idle="periodic", stall="stalls", seed=6),
    ]
    return cosim.run(params, sim, scenarios, label="fabric", root=ROOT), scenarios


@pytest.mark.needs("icarus")
@pytest.mark.parametrize(
    ("spec", "arch", "dtype", "delay", "strategies"),
    [
        ("tree:2x2+io1", "clos", "bf16", 1, ("MP2-DP2",)),
        ("tree:3x2", "clos", "int16", 0, ("MP3-PP2", "MP1-DP3-PP2")),
        pytest.param("tree:3x2+io1", "xbar", "fp16", 3, ("MP3-PP2",), marks=pytest.mark.slow),
        pytest.param("tree:2x2x2", "clos", "fp32", 1, ("MP2-PP2",), marks=pytest.mark.slow),
    ],
)
def test_collectives_and_phases_on_icarus(spec, arch, dtype, delay, strategies) -> None:
    p = FabricParams(spec, arch=arch, lanes=2, dtype=dtype, link_delay=delay)
    result, scenarios = _run(p, "icarus", strategies)
    assert result.passed, result.summary()
    for sc, rep in zip(scenarios, result.scenarios, strict=True):
        sent = sum(ph.sent_flits for ph in sc.phases)
        assert rep.in_flits == sent
        assert rep.out_flits == sum(ph.expected_flits for ph in sc.phases)


@pytest.mark.needs("icarus")
def test_a_wrong_expectation_fails() -> None:
    """The bench would notice a fabric that adds wrongly: one expected flit flipped."""
    p = FabricParams("tree:2x2+io1", lanes=2, dtype="bf16", link_delay=1)
    b = FabricScenarioBuilder(p, seed=3)
    sc = b.scenario("wrong", [collective_op("all-reduce", p.fabric.npus)])
    exp = sc.phases[0].expect[3]
    exp[1] = (exp[1][0] ^ 1, exp[1][1])
    result = cosim.run(p, "icarus", [sc], label="fabric_wrong", root=ROOT)
    assert not result.passed
    mm = result.scenarios[0].first_mismatch
    assert mm is not None and mm.port == 3 and mm.index == 1


@pytest.mark.needs("icarus")
def test_cycles_match_the_system_model() -> None:
    p = FabricParams("tree:3x2+io2", lanes=1, dtype="int16", link_delay=2)
    rows = cross_check(p, _ops(p, ("MP3-PP2",)), "icarus", flits=48)
    for r in rows:
        assert abs(r.error) <= 0.05, r


#: FRED-D runs on both simulators under -m slow: Verilator is the intended one, Icarus
#: needs no C++ build of the ~26 MB of Verilog (minutes on a loaded machine).
FRED_D_SIMS = [
    pytest.param("verilator", marks=pytest.mark.needs("verilator")),
    pytest.param("icarus", marks=pytest.mark.needs("icarus")),
]


@pytest.mark.slow
@pytest.mark.parametrize("sim", FRED_D_SIMS)
def test_fred_d_all_npus(sim: str) -> None:
    p = FabricParams("fred-d", lanes=1, dtype="int16", link_delay=1)
    result, _ = _run(p, sim, ("MP4-DP5", "MP2-DP5-PP2", "MP5-DP4"))
    assert result.passed, result.summary()


@pytest.mark.slow
@pytest.mark.parametrize("sim", FRED_D_SIMS)
def test_fred_d_cycles_match_the_system_model(sim: str) -> None:
    p = FabricParams("fred-d", lanes=1, dtype="int16", link_delay=1)
    rows = cross_check(p, _ops(p, ("MP4-DP5", "MP2-DP5-PP2")), sim, flits=64)
    for r in rows:
        assert abs(r.error) <= 0.05, r


@pytest.mark.needs("icarus")
def test_cli_fabric(capsys) -> None:
    from fredfab.sim.cli import main

    base = ["cosim", "--sim", "icarus", "--fabric", "tree:2x2", "--lanes", "1"]
    base += ["--dtype", "int16", "--root", str(ROOT), "--flits", "16"]
    assert main([*base, "--op", "all-reduce", "--strategy", "MP2-DP2", "--check", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] and out["out_flits"] == 4 * 16 * 3
    assert [r["phase"] for r in out["check"]] == out["phases"]
    assert all(abs(r["error"]) <= 0.05 for r in out["check"])
    assert main([*base, "--op", "reduce", "--inject-error"]) == 1
    assert "mismatch on output port" in capsys.readouterr().out


def test_cli_fabric_bad_input(capsys) -> None:
    from fredfab.sim.cli import main

    assert main(["cosim", "--fabric", "mesh-5x4", "--op", "all-reduce"]) == 2
    assert "mesh" in capsys.readouterr().err
    assert main(["cosim", "--fabric", "tree:2x2", "--strategy", "MP4-DP2"]) == 2
    assert "needs 8 NPUs" in capsys.readouterr().err
    assert main(["cosim", "--sim", "icarus"]) == 2
    assert "--ports is required" in capsys.readouterr().err
