"""Every formal proof passes, and every proof's mutant (its negative control) fails.

The proofs of the default suite (``Proof.fast``) take seconds each; the rest are marked slow
(their times: docs/formal.md). Each runs SymbiYosys in its own temporary folder.
"""

from __future__ import annotations

import pytest

from fredfab.sim.formal.properties import all_proofs
from fredfab.sim.formal.runner import run

PROOFS = all_proofs()


def _params():
    return [pytest.param(p, id=p.name, marks=() if p.fast else (pytest.mark.slow,)) for p in PROOFS]


@pytest.mark.needs("sby")
@pytest.mark.parametrize("proof", _params())
def test_proof_passes(proof, tmp_path):
    verdict = run(
        lambda: proof.harness(mutant=False),
        proof.mode,
        proof.depth,
        tmp_path,
        timeout=proof.timeout,
    )
    assert verdict.result == "pass", verdict.explain()


@pytest.mark.needs("sby")
@pytest.mark.parametrize("proof", _params())
def test_mutant_fails(proof, tmp_path):
    """The fault ``proof.negative`` names is one the proof sees: a counterexample (or, for a
    cover, an event left unreached), with its trace written as a VCD."""
    mutant = lambda: proof.harness(mutant=True)  # noqa: E731
    verdict = run(mutant, proof.mode, proof.depth, tmp_path, timeout=proof.timeout)
    assert verdict.result == "fail", verdict.explain()
    assert verdict.failed, "a failing proof names what failed"
    if proof.mode != "cover":
        assert verdict.trace is not None and verdict.trace.suffix == ".vcd"
        assert "gtkwave" in verdict.explain()
