"""Time of the formal proofs: the default suite's (quick) or every proof (full), each with
its negative control, one at a time (docs/formal.md, "Times")."""

from __future__ import annotations

import tempfile
from pathlib import Path

from fredfab.sim.formal.properties import all_proofs
from fredfab.sim.formal.runner import run as run_proof

NAME = "formal"


def run(quick: bool = False) -> list[dict]:
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="fred-formal-bench-") as tmp:
        for proof in all_proofs():
            if quick and not proof.fast:
                continue
            for mutant in (False, True):
                verdict = run_proof(
                    lambda p=proof, mu=mutant: p.harness(mutant=mu),
                    proof.mode,
                    proof.depth,
                    Path(tmp) / f"{proof.name}{'.mutant' if mutant else ''}",
                    timeout=proof.timeout,
                )
                rows.append(
                    {
                        "proof": proof.name,
                        "run": "mutant" if mutant else "design",
                        "mode": proof.mode,
                        "depth": proof.depth,
                        "seconds": round(verdict.seconds, 2),
                        "result": verdict.result,
                        "as_expected": verdict.result == ("fail" if mutant else "pass"),
                    }
                )
    return rows
