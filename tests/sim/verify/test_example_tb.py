"""The plain-Verilog example bench (sim/verify/example_tb): rendered from a manifest alone,
it configures an All-Reduce through cfg, checks every output's sums on Icarus, and fails
when one expected value is wrong."""

import ast
import inspect

import pytest

from fredfab.hw.manifest import generate
from fredfab.hw.params import SwitchParams
from fredfab.sim.verify.example_tb import render, run


def test_renderer_reads_nothing_but_the_manifest():
    """The renderer imports only the standard library: no generator, no model."""
    tree = ast.parse(inspect.getsource(render))
    modules = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    modules |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert modules == {"__future__", "argparse", "json", "sys", "pathlib"}


@pytest.mark.needs("icarus")
def test_example_bench_passes_and_a_wrong_expectation_fails(tmp_path):
    params = SwitchParams(ports=5, m=3, lanes=2, dtype="int16")
    _, j_path = generate(params, tmp_path / "rtl")
    program = run.build(j_path, tmp_path / "bench", flits=6)
    ok = run.run(program)
    assert ok.passed and ok.errors == 0, ok.log
    assert ok.flits == params.ports * 6  # every output got every flit, no more
    wrong = run.run(program, bias=1)
    # Flit 0 of every output now disagrees with the (wrong) expectation, nothing else.
    assert not wrong.passed and wrong.errors == params.ports, wrong.log
    assert wrong.log.count("flit 0: got") == params.ports


def test_float_variants_are_refused(tmp_path):
    _, j_path = generate(SwitchParams(ports=2, m=2, lanes=1, dtype="fp16"), tmp_path)
    assert render.main([str(j_path), "-o", str(tmp_path / "tb.v")]) == 1
    assert not (tmp_path / "tb.v").exists()
