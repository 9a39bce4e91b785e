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
from fredfab.sim.text_table import format_table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="fred-bench", description=__doc__)
    ap.add_argument("--only", nargs="*", help="run only these benchmarks")
    ap.add_argument("--quick", action="store_true", help="fewer repeats and sizes")
    ap.add_argument("-o", "--out", default="build/bench", help="output folder (build/bench)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # Every module of the package is a benchmark, except this one (__main__) and private ones.
    names = sorted(
        m.name for m in pkgutil.iter_modules(benches.__path__) if not m.name.startswith("_")
    )
    unknown = set(args.only or ()) - set(names)
    if unknown:
        print(
            f"fred-bench: error: unknown benchmark(s) {sorted(unknown)}; have {names}",
            file=sys.stderr,
        )
        return 2
    chosen = [n for n in names if not args.only or n in args.only]
    started = time.perf_counter()
    for i, name in enumerate(chosen, 1):
        # Progress goes out at once (flush): a benchmark can take minutes, and a piped
        # stdout would otherwise hold every line until the end.
        print(f"[{i}/{len(chosen)}] {name}: started at {time.strftime('%H:%M:%S')}", flush=True)
        module = importlib.import_module(f"fredfab.sim.bench.{name}")
        t0 = time.perf_counter()
        rows = module.run(quick=args.quick)
        wall = time.perf_counter() - t0
        record = {
            "bench": name,
            "host": platform.node(),
            "python": platform.python_version(),
            "quick": args.quick,
            "wall_seconds": wall,
            "rows": rows,
        }
        (out / f"{name}.json").write_text(json.dumps(record, indent=2) + "\n")
        print(f"[{i}/{len(chosen)}] {name}: done in {wall:.1f} s -> {out / (name + '.json')}")
        print(format_table(rows), flush=True)
    total = time.perf_counter() - started
    print(f"\n{len(chosen)} benchmark(s) in {total:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
