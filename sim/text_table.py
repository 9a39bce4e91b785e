"""Plain-text tables of result rows, as `make bench` and `make formal` print them."""

from __future__ import annotations


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
