"""`make formal`: run the formal proofs, print a summary table, write build/formal/summary.json.

Usage: python -m fredfab.sim.formal [--only PATTERN ...] [--fast] [--negative] [-j N]
       [--solver yices|z3] [-o DIR] [--list] [--json]

Exit status: 0 every proof passed (and, with --negative, every mutant failed); 1 a proof
failed or was left unknown (its counterexample is printed as a VCD path); 2 bad input or a
missing tool.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from fredfab.sim.atomic import write_text
from fredfab.sim.formal.properties import Proof, all_proofs
from fredfab.sim.formal.runner import FormalError, Verdict, run
from fredfab.sim.formal.toolchain import SOLVERS, default_solver
from fredfab.sim.text_table import format_table
from fredfab.sim.verify.toolchain import ToolMissing

SCHEMA = "fred-formal/1"
MAX_JOBS = 8


def _jobs(text: str) -> int:
    value = int(text)
    if not 1 <= value <= MAX_JOBS:
        raise argparse.ArgumentTypeError(f"must be 1..{MAX_JOBS}, got {value}")
    return value


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="fred-formal",
        description="Formal proofs of the switch RTL with SymbiYosys (docs/formal.md).",
        epilog="Exit 0 all passed, 1 a proof failed or was unknown, 2 bad input or a missing tool.",
    )
    ap.add_argument(
        "--only",
        nargs="+",
        metavar="PATTERN",
        help="proofs whose name matches a shell pattern (e.g. 'uswitch.*', 'switch.*')",
    )
    ap.add_argument("--fast", action="store_true", help="only the proofs of the default suite")
    ap.add_argument(
        "--negative",
        action="store_true",
        help="also run each proof's mutant, which must fail (its negative control)",
    )
    ap.add_argument("-j", "--jobs", type=_jobs, default=1, help=f"proofs at once, 1..{MAX_JOBS}")
    ap.add_argument("--solver", choices=sorted(SOLVERS), help="SMT solver (default: yices)")
    ap.add_argument("-o", "--out", default="build/formal", help="output folder (build/formal)")
    ap.add_argument("--list", action="store_true", help="list the proofs and exit")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    return ap


def select(proofs: list[Proof], only: list[str] | None, fast: bool) -> list[Proof]:
    chosen = [p for p in proofs if not fast or p.fast]
    if only:
        unmatched = [pat for pat in only if not any(fnmatch.fnmatch(p.name, pat) for p in proofs)]
        if unmatched:
            raise ValueError(f"no proof matches {', '.join(unmatched)} (see --list)")
        chosen = [p for p in chosen if any(fnmatch.fnmatch(p.name, pat) for pat in only)]
    return chosen


def row(proof: Proof, verdict: Verdict, mutant: bool = False) -> dict:
    return {
        "name": proof.name + (" (mutant)" if mutant else ""),
        "mode": proof.mode,
        "depth": proof.depth,
        "bound": "unbounded" if proof.mode == "prove" else f"{proof.depth} cycles",
        "seconds": round(verdict.seconds, 2),
        "result": verdict.result,
        "expected": "fail" if mutant else "pass",
        "negative": proof.negative if mutant else None,
        "trace": str(verdict.trace) if verdict.trace and verdict.result == "fail" else None,
    }


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        solver = args.solver or default_solver()
        chosen = select(all_proofs(), args.only, args.fast)
    except ValueError as exc:
        print(f"fred-formal: error: {exc}", file=sys.stderr)
        return 2
    if args.list:
        for p in chosen:
            print(f"{p.name:36s} {p.mode:5s} {p.depth:3d}  {'fast' if p.fast else 'slow'}")
        return 0
    out = Path(args.out)
    jobs = [(p, False) for p in chosen] + ([(p, True) for p in chosen] if args.negative else [])

    def one(job: tuple[Proof, bool]) -> tuple[Proof, bool, Verdict]:
        proof, mutant = job
        workdir = out / (proof.name + (".mutant" if mutant else ""))
        harness = partial_harness(proof, mutant)
        return (
            proof,
            mutant,
            run(harness, proof.mode, proof.depth, workdir, solver=solver, timeout=proof.timeout),
        )

    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = []
            for proof, mutant, verdict in pool.map(one, jobs):
                results.append((proof, mutant, verdict))
                if not args.json:
                    tag = " (mutant)" if mutant else ""
                    print(f"{proof.name}{tag}: {verdict.result} in {verdict.seconds:.1f} s")
                    if verdict.result != ("fail" if mutant else "pass"):
                        print(verdict.explain())
    except (ToolMissing, FormalError) as exc:
        print(f"fred-formal: error: {exc}", file=sys.stderr)
        return 2
    rows = [row(p, v, mutant) for p, mutant, v in results]
    summary = {
        "schema": SCHEMA,
        "solver": solver,
        "properties": [r for r in rows if r["expected"] == "pass"],
        "negative_controls": [r for r in rows if r["expected"] == "fail"],
    }
    write_text(out / "summary.json", json.dumps(summary, indent=1) + "\n")
    ok = all(r["result"] == r["expected"] for r in rows)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        cols = ("name", "mode", "bound", "seconds", "result", "expected")
        print(format_table([{c: r[c] for c in cols} for r in rows]))
        print(
            f"{sum(r['result'] == r['expected'] for r in rows)} of {len(rows)} as expected; "
            f"summary: {out / 'summary.json'}"
        )
    return 0 if ok else 1


def partial_harness(proof: Proof, mutant: bool):
    return lambda: proof.harness(mutant=mutant)


if __name__ == "__main__":
    sys.exit(main())
