"""The plot of the pipelined-adder table of docs/architecture-cost.md: Fmax, LUTs, flip-flops
and latency against adder stages, one line per switch (architecture, ports, element type).

It is drawn from the table itself, so the figure and the numbers it shows are one fact: after
the table changes, ``python -m fredfab.sim.verify.fpga_doc_plot`` (from the checkout's root)
redraws docs/architecture-cost-fpga.png. The table's rows are `fred cost --fpga` runs at
placer seed 1 on ``DEVICE`` (fredfab.sim.verify.fpga); each new run writes the same plot of
its own rows beside its fpga.json.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fredfab.sim.verify.fpga import DEFAULT_SEED, DEVICE

DOC = Path("docs/architecture-cost.md")
PNG = Path("docs/architecture-cost-fpga.png")

#: The header of the table this module reads, as the doc writes it.
HEADER = (
    "| arch | P | element | adder stages | latency (cycles) | LUTs | FFs | Fmax (MHz) "
    "| critical path |"
)


def table_rows(text: str) -> list[dict]:
    """The rows of the pipelined-adder table in ``text`` as ``fred cost --fpga`` rows (the
    keys ``plot_fpga`` reads). Raises ValueError if the table is missing or a row does not
    parse, so a reworded table cannot drop rows from the plot unnoticed."""
    lines = text.splitlines()
    try:
        start = lines.index(HEADER) + 2  # past the header and its |---| line
    except ValueError:
        raise ValueError(f"no table with the header {HEADER!r}") from None
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 9:
            raise ValueError(f"expected 9 cells, got {len(cells)}: {line!r}")
        arch, ports, dtype, stages, latency, luts, ffs, fmax, _path = cells
        try:
            rows.append(
                {
                    "arch": arch.split()[0],  # "clos (m = 3)" -> "clos"
                    "ports": int(ports),
                    "dtype": dtype,
                    "adder_stages": int(stages),
                    "latency_cycles": int(latency),
                    "luts": int(luts.replace(",", "")),
                    "ffs": int(ffs.replace(",", "")),
                    "fmax_mhz": float(fmax),
                    "status": "ok",
                    "seed": DEFAULT_SEED,
                    "device": DEVICE.name,
                }
            )
        except ValueError as e:
            raise ValueError(f"row does not parse ({e}): {line!r}") from None
    if not rows:
        raise ValueError("the table has no rows")
    keys = [(r["arch"], r["ports"], r["dtype"], r["adder_stages"]) for r in rows]
    if len(set(keys)) != len(keys):
        raise ValueError("the table lists a variant twice")
    return rows


def main(argv: list[str] | None = None) -> None:
    from fredfab.sim.cli.cost_fpga import plot_fpga

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("doc", nargs="?", type=Path, default=DOC)
    ap.add_argument("png", nargs="?", type=Path, default=PNG)
    args = ap.parse_args(argv)
    rows = table_rows(args.doc.read_text())
    plot_fpga(rows, args.png)
    print(f"{args.png}: {len(rows)} variants from {args.doc}")


if __name__ == "__main__":
    main()
