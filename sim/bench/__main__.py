"""`make bench`: run every benchmark module, write build/bench/*.json, print tables.

Usage: python -m fredfab.sim.bench [--only NAME ...] [--quick] [-o DIR]
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import platform
import sys
import time
from pathlib import Path

from fredfab.sim import bench as benches


def format_table(rows: list[dict]) -> str:
    """Plain-text table of ``rows`` (columns in first-seen order)."""
    if not rows:
        return "(no rows)"
    cols: list[str] = []
    for row in rows:
        cols.extend(c for c in row if c not in cols)

    def cell(v: object) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        return "" if v is None else str(v)

    table = [[cell(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(t[i]) for t in table)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(t, widths, strict=True)) for t in table]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="fred-bench", description=__doc__)
    ap.add_argument("--only", nargs="*", help="run only these benchmarks")
    ap.add_argument("--quick", action="store_true", help="fewer repeats and sizes")
    ap.add_argument("-o", "--out", default="build/bench", help="output folder (build/bench)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = sorted(m.name for m in pkgutil.iter_modules(benches.__path__))
    unknown = set(args.only or ()) - set(names)
    if unknown:
        print(
            f"fred-bench: error: unknown benchmark(s) {sorted(unknown)}; have {names}",
            file=sys.stderr,
        )
        return 2
    for name in names:
        if args.only and name not in args.only:
            continue
        module = importlib.import_module(f"fredfab.sim.bench.{name}")
        t0 = time.perf_counter()
        rows = module.run(quick=args.quick)
        wall = time.perf_counter() - t0
        record = {
            "bench": name,
            "host": platform.node(),
            "python": platform.python_version(),
            "wall_seconds": wall,
            "rows": rows,
        }
        (out / f"{name}.json").write_text(json.dumps(record, indent=2) + "\n")
        print(f"\n== {name} ({wall:.1f} s) -> {out / (name + '.json')}")
        print(format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
