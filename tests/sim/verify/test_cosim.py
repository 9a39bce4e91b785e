"""Co-simulation of the generated Verilog on Icarus and Verilator (fredfab.sim.verify.cosim).

Every scenario is checked flit by flit, bit-exact, against the functional model (itself
checked against the golden collectives in tests/model) under idle insertion and output
backpressure, and every flit's latency against the manifest's; a scenario fails at the
first mismatching or mistimed flit, on a hang, or on any flit that should not exist. One
build per (simulator, variant), shared by every test that uses it (builds are cached by
content under build/cosim); all scenarios of a variant run as separate cocotb tests in one
simulator process.
"""

from __future__ import annotations

import json

import pytest

from fredfab.hw.control import n_words
from fredfab.hw.params import SwitchParams
from fredfab.model.switch.flow import Flow
from fredfab.model.timing_card import KINDS, load_timing_card
from fredfab.sim.cli import main
from fredfab.sim.verify import cosim
from fredfab.sim.verify.scenario_file import Scenario
from fredfab.sim.verify.scenarios import SCENARIO_NAMES, ScenarioBuilder, standard_scenarios

ROOT = cosim.shared_build_root()


SIMS = [
    pytest.param("icarus", marks=pytest.mark.needs("icarus")),
    pytest.param("verilator", marks=pytest.mark.needs("verilator")),
]

#: The sweep: every P x m x element type below, on Icarus in the default suite; on Verilator
#: the default suite runs VERILATOR_DEFAULT, which takes every P, m and element type, and the
#: rest runs with the slow suite. Both simulators run the same Verilog and agree cycle for
#: cycle (test_simulators_agree_cycle_for_cycle); a Verilator build costs 30 to 60 s of C++
#: per variant where Icarus compiles in about a second. P = 4 at m = 2 and 3 (int16) are the
#: agreement test's and the timing card's variants: their builds are shared.
SWEEP = [(P, m, dt) for P in (3, 4, 8) for m in (2, 3) for dt in ("int16", "bf16")]
VERILATOR_DEFAULT = [(3, 3, "bf16"), (4, 2, "int16"), (4, 3, "int16"), (8, 2, "bf16")]


def _sweep_runs() -> list:
    runs = []
    for sim in ("icarus", "verilator"):
        for P, m, dt in SWEEP:
            marks = [pytest.mark.needs(sim)]
            if sim == "verilator" and (P, m, dt) not in VERILATOR_DEFAULT:
                marks.append(pytest.mark.slow)
            runs.append(pytest.param(sim, P, m, dt, marks=marks, id=f"{P}-{m}-{dt}-{sim}"))
    return runs


#: The other element types, each on its own small variant.
OTHER_DTYPES = ("int8", "int32", "fp16", "fp32")
#: Wider sweep (-m slow): more port counts, every element type, other lanes and pipelines.
WIDE = [
    SwitchParams(ports=P, m=m, lanes=lanes, dtype=dt, regs_per_stage=regs)
    for i, (P, m) in enumerate((P, m) for P in (2, 5, 6, 7, 12, 16) for m in (2, 3))
    for dt in [("int8", "int16", "int32", "fp16", "bf16", "fp32")[i % 6]]
    for lanes, regs in [((1, 1), (3, 0), (4, 2), (2, 1))[i % 4]]
]


#: Pipelined adders: one variant in the default suite (Icarus), the sweep in the slow one.
PIPELINED = SwitchParams(ports=5, m=2, lanes=2, dtype="bf16", adder_stages=3)
WIDE_PIPELINED = [
    SwitchParams(
        ports=P, m=3, lanes=lanes, dtype=dt, regs_per_stage=regs, adder_stages=a, arch=arch
    )
    for P, lanes, dt, regs, a in [
        (3, 1, "fp16", 1, 1),
        (4, 2, "int8", 0, 2),
        (7, 1, "fp32", 1, 4),
        (8, 2, "bf16", 1, 3),
        (12, 1, "int32", 2, 6),
    ]
    for arch in ("clos", "xbar")
]


def _run(params: SwitchParams, sim: str, scenarios: list[Scenario], label: str):
    result = cosim.run(params, sim, scenarios, label=label, root=ROOT)
    assert result.passed, result.summary()
    return result


@pytest.mark.parametrize("sim,P,m,dtype", _sweep_runs())
def test_sweep_standard_scenarios(sim, P, m, dtype):
    """Every collective kind, permutations, concurrent flows, reconfiguration under
    traffic, reset default and reset mid-traffic; the idle/backpressure patterns rotate
    with the variant so that every scenario meets every pattern across the sweep."""
    seed = SWEEP.index((P, m, dtype))
    params = SwitchParams(ports=P, m=m, lanes=2, dtype=dtype)
    scenarios = standard_scenarios(params, seed)
    assert [s.name for s in scenarios] == list(SCENARIO_NAMES)
    result = _run(params, sim, scenarios, f"sweep-{seed}")
    for sc, res in zip(scenarios, result.scenarios, strict=True):
        if sc.resets:
            # The interrupted phase loses what was not accepted before reset.
            assert 0 < res.in_flits < sc.sent_flits and 0 < res.out_flits < sc.expected_flits
        else:
            assert (res.in_flits, res.out_flits) == (sc.sent_flits, sc.expected_flits), sc.name


@pytest.mark.parametrize(
    "sim,P,dtype",
    [
        pytest.param(sim, P, dt, marks=marks, id=f"{P}-{dt}-{sim}")
        for P, dt in [(4, "fp16"), (7, "int16")]
        for sim, marks in [
            ("icarus", [pytest.mark.needs("icarus")]),
            # P = 7 on Verilator with the slow suite (see SWEEP).
            (
                "verilator",
                [pytest.mark.needs("verilator")] + ([pytest.mark.slow] if P == 7 else []),
            ),
        ]
    ],
)
def test_crossbar_standard_scenarios(sim, P, dtype):
    """The crossbar switch through the same manifest-driven bench, scenarios and patterns."""
    params = SwitchParams(ports=P, m=3, lanes=2, dtype=dtype, arch="xbar")
    scenarios = standard_scenarios(params, seed=P)
    result = _run(params, sim, scenarios, f"xbar-{P}")
    for sc, res in zip(scenarios, result.scenarios, strict=True):
        if not sc.resets:
            assert (res.in_flits, res.out_flits) == (sc.sent_flits, sc.expected_flits), sc.name


@pytest.mark.parametrize(
    "sim,dtype",
    [
        pytest.param(sim, dt, marks=marks, id=f"{dt}-{sim}")
        for dt in OTHER_DTYPES
        for sim, marks in [
            ("icarus", [pytest.mark.needs("icarus")]),
            # fp32 (the widest adder) on Verilator; the others with the slow suite (see SWEEP).
            (
                "verilator",
                [pytest.mark.needs("verilator")] + ([] if dt == "fp32" else [pytest.mark.slow]),
            ),
        ]
    ],
)
def test_every_element_type(sim, dtype):
    params = SwitchParams(ports=4, m=3, lanes=3, dtype=dtype)
    kinds = ["all_reduce", "reduce_scatter", "concurrent_flows", "reset_mid_traffic"]
    seed = OTHER_DTYPES.index(dtype)
    _run(params, sim, standard_scenarios(params, seed, kinds), f"dtype-{seed}")


@pytest.mark.needs("icarus")
def test_pipelined_adders_standard_scenarios():
    """A switch with three adder stages through every standard scenario: bit-exact sums, and
    every flit exactly on the manifest's latency (14 cycles here) whenever the outputs are
    always ready, never earlier under backpressure."""
    scenarios = standard_scenarios(PIPELINED, 4)
    result = _run(PIPELINED, "icarus", scenarios, "pipelined")
    assert PIPELINED.latency_cycles == 14
    for sc, res in zip(scenarios, result.scenarios, strict=True):
        if not sc.resets:
            assert (res.in_flits, res.out_flits) == (sc.sent_flits, sc.expected_flits), sc.name


@pytest.mark.needs("icarus")
@pytest.mark.parametrize(
    "skew,stall,message",
    [
        (1, "random", "before it is due (due after 15)"),
        (-1, "none", "with every output ready, late (due after 13)"),
    ],
)
def test_bench_rejects_a_flit_a_cycle_off_its_latency(skew, stall, message):
    """Expecting the latency one cycle longer fails at the first flit (it comes early, under
    any backpressure); one cycle shorter fails where the outputs are always ready (a flit
    may wait under backpressure, but not with every sink ready)."""
    sc = ScenarioBuilder.scenario(
        "skewed",
        [ScenarioBuilder(PIPELINED, 9).flows_phase([Flow(range(5), range(5))], "all-reduce")],
        "none",
        stall,
    )
    sc.latency_skew = skew
    result = cosim.run(PIPELINED, "icarus", [sc], label="skew", root=ROOT)
    res = result.scenarios[0]
    assert not res.passed and res.first_mismatch.what == "latency"
    assert message in res.error, res.error


@pytest.mark.needs("icarus", "verilator")
def test_simulators_agree_cycle_for_cycle():
    """The same scenarios take the same cycles, transfers and phase-change times on both
    simulators: the bench samples in a way that does not depend on the scheduler."""
    params = SwitchParams(ports=4, m=2, lanes=2, dtype="int16")
    scenarios = standard_scenarios(params, 3)
    runs = [_run(params, sim, scenarios, "agree") for sim in cosim.SIMULATORS]
    for a, b in zip(runs[0].scenarios, runs[1].scenarios, strict=True):
        assert (a.cycles, a.in_flits, a.out_flits) == (b.cycles, b.in_flits, b.out_flits), a.name
        assert a.phases == b.phases, a.name


@pytest.mark.needs("icarus")
def test_bench_reports_the_first_mismatching_flit():
    """A single flipped bit in one expected flit fails exactly that scenario, naming the
    port, the flit and both values; a missing flit is a hang, an extra one an error."""
    params = SwitchParams(ports=4, m=2, lanes=2, dtype="int16")
    by_name = {s.name: s for s in standard_scenarios(params, 0)}
    flipped, missing, extra, fine = (
        by_name[n] for n in ("all_reduce", "multicast", "reduce", "gather")
    )
    port, flits = next(iter(flipped.phases[0].expect.items()))
    sent_by_switch, last = flits[1]
    corrupted = sent_by_switch ^ (1 << 17)  # lane 1, bit 1
    flits[1] = (corrupted, last)
    missing.phases[0].expect[port].append((123, 1))
    first = next(iter(extra.phases[0].expect))
    extra.phases[0].expect[first].pop()
    result = cosim.run(params, "icarus", [flipped, missing, extra, fine], label="neg", root=ROOT)
    r = {s.name: s for s in result.scenarios}
    mismatch = r["all_reduce"].first_mismatch
    assert not r["all_reduce"].passed and mismatch.port == port
    assert (mismatch.what, mismatch.index, mismatch.phase_index) == ("mismatch", 1, 1)
    assert mismatch.expected == (corrupted, last) and mismatch.got == (sent_by_switch, last)
    assert f"output port {port}, flit 1" in r["all_reduce"].error
    assert not r["multicast"].passed and "no flit moved" in r["multicast"].error
    assert not r["reduce"].passed and "unexpected flit" in r["reduce"].error
    assert r["gather"].passed


@pytest.mark.parametrize("sim", SIMS)
def test_timing_card_measured(sim, tmp_path):
    """The card measured in co-simulation: latency is the documented formula, every kind
    runs at one flit per cycle with ready outputs, single-output flows keep up with any
    sink, reconfiguration on an idle switch is the control unit's IDLE-DRAIN-LOAD-DONE walk
    (n_words + 4 cycles), and loading a slot writes one word per cycle."""
    params = SwitchParams(ports=4, m=3, lanes=2, dtype="int16")
    from fredfab.sim.verify.timing import measure_timing, measure_timing_card

    path = measure_timing_card(params, sim, out_dir=tmp_path, root=ROOT)
    assert path == tmp_path / f"{params.name}.json"
    card = load_timing_card(path)
    assert card.simulator.startswith(sim)
    assert card.generator["ports"] == 4 and card.generator["top"] == params.name
    assert card.latency_cycles == params.latency_cycles
    for kind in KINDS:
        assert card.fraction(kind, "ready") == 1.0, kind
    assert card.fraction("unicast", "backpressure") == 1.0
    assert card.fraction("reduce", "backpressure") == 1.0
    assert card.reconfiguration_cycles == n_words(params) + 4
    assert card.slot_write_cycles == n_words(params)
    details = json.loads((ROOT / "timing" / sim / f"{params.name}.json").read_text())
    assert details["reconfiguration_after_traffic_cycles"] > card.reconfiguration_cycles
    assert measure_timing(params, sim, root=ROOT).throughput == dict(card.throughput)


@pytest.mark.needs("icarus")
def test_cli_cosim(capsys):
    base = ["cosim", "--sim", "icarus", "-P", "4", "--m", "2", "--lanes", "2"]
    base += ["--dtype", "int16", "--root", str(ROOT)]
    assert main([*base, "--flows", "0-2:0,1", "3:2,3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] and out["scenarios"][0]["out_flits"] > 0
    assert main([*base, "--scenario", "reduce", "--inject-error"]) == 1
    out = capsys.readouterr().out
    assert "FAIL reduce" in out and "mismatch on output port" in out and "expected data=" in out
    assert main([*base, "--flows", "0-2:0,1", "2:2,3"]) == 2
    err = capsys.readouterr().err
    assert "share input port 2" in err and err.count("\n") == 1


@pytest.mark.parametrize("sim", SIMS)
def test_waves_on_request(sim, monkeypatch):
    """FRED_WAVES=1 traces into the run's own folder (FST; VCD on Verilator without lz4)."""
    monkeypatch.setenv("FRED_WAVES", "1")
    params = SwitchParams(ports=3, m=2, lanes=1, dtype="int8")
    result = _run(params, sim, standard_scenarios(params, 0, ["reduce"]), "waves")
    assert result.waves is not None and result.waves.parent == result.run_dir
    assert result.waves.suffix in (".fst", ".vcd") and result.waves.stat().st_size > 1000
    if sim == "icarus":
        assert result.waves.suffix == ".fst"


@pytest.mark.slow
@pytest.mark.parametrize("sim", SIMS)
@pytest.mark.parametrize("params", WIDE, ids=lambda p: p.name)
def test_wide_sweep(sim, params):
    seed = WIDE.index(params) + 100
    scenarios = standard_scenarios(params, seed)
    _run(params, sim, scenarios, f"wide-{seed}")


@pytest.mark.slow
@pytest.mark.parametrize("sim", SIMS)
@pytest.mark.parametrize("params", WIDE_PIPELINED, ids=lambda p: p.name)
def test_wide_sweep_pipelined(sim, params):
    """Adder stages at every depth, both architectures, with and without register slices."""
    seed = WIDE_PIPELINED.index(params) + 200
    _run(params, sim, standard_scenarios(params, seed), f"wide-pipelined-{seed}")


@pytest.mark.slow
@pytest.mark.parametrize("sim", SIMS)
def test_timing_card_of_a_pipelined_switch(sim, tmp_path):
    """The measured card of a pipelined switch declares the manifest's latency, and the
    system model's hop time is that many cycles of the card's clock."""
    from fredfab.model.system import SwitchTiming
    from fredfab.sim.verify.timing import measure_timing_card

    params = SwitchParams(ports=4, m=3, lanes=2, dtype="int16", adder_stages=2)
    card = load_timing_card(measure_timing_card(params, sim, out_dir=tmp_path, root=ROOT))
    manifest = json.loads(cosim.rtl(params, ROOT)[1].read_text())
    assert card.latency_cycles == manifest["latency_cycles"] == params.latency_cycles == 7
    assert card.generator["adder_stages"] == 2
    for kind in KINDS:
        assert card.fraction(kind, "ready") == 1.0, kind
    timing = SwitchTiming(card)
    assert timing.hop_latency == pytest.approx(card.latency_cycles / timing.clock_hz)


@pytest.mark.slow
@pytest.mark.parametrize("sim", SIMS)
@pytest.mark.parametrize("seed", range(4))
def test_every_pattern_on_one_variant(sim, seed):
    """P = 8, m = 3 with every idle pattern against every backpressure pattern over four
    seeds (the pattern pairs rotate with the seed)."""
    params = SwitchParams(ports=8, m=3, lanes=2, dtype="fp16")
    _run(params, sim, standard_scenarios(params, seed + 50), f"patterns-{seed}")


def test_rtl_takes_files_this_process_made(tmp_path):
    """`rtl(..., made=folder)` copies the variant's files on a cache miss instead of
    generating them (the demo hands over what `fred generate` wrote); later calls hit the
    cache."""
    params = SwitchParams(ports=2, m=2, lanes=1, dtype="int8")
    made = tmp_path / "made"
    made.mkdir()
    (made / f"{params.name}.v").write_text("// generated a moment ago\n")
    (made / f"{params.name}.json").write_text("{}\n")
    v, j = cosim.rtl(params, tmp_path / "root", made=made)
    assert v.read_text() == "// generated a moment ago\n" and j.read_text() == "{}\n"
    assert cosim.rtl(params, tmp_path / "root") == (v, j)
    assert v.read_text() == "// generated a moment ago\n"
