"""`fred collective --list-algorithms`: the registered algorithms and where each applies."""

from __future__ import annotations

import json
from collections.abc import Sequence

from fredfab.model.system.fabric import Fabric
from fredfab.model.system.registry import algorithms
from fredfab.model.system.request import CollectiveRequest, normalize_op
from fredfab.sim.cli.arguments import npu_group


def applicability(fabrics: Sequence[Fabric], op: str, group: str) -> dict[str, dict[str, bool]]:
    """Per algorithm, per fabric: whether it is a candidate for ``op`` over ``group`` ("all"
    or NPU ids) there. Algorithms of other ops apply nowhere."""
    kind = normalize_op(op)
    out: dict[str, dict[str, bool]] = {a.name: {} for a in algorithms()}
    for fab in fabrics:
        members = npu_group(group, fab.num_npus)
        req = CollectiveRequest(kind, members, 1.0)
        enough = len(members) >= 2 or kind.uses_io  # one NPU runs nothing ("local")
        for a in algorithms():
            out[a.name][fab.name] = enough and kind in a.ops and bool(a.applies(fab, req))
    return out


def list_algorithms(fabrics: Sequence[Fabric], op: str, group: str, *, as_json: bool) -> int:
    table = applicability(fabrics, op, group)
    rows = [
        {
            "algorithm": a.name,
            "ops": sorted(str(o) for o in a.ops),
            "summary": a.summary,
            "in_switch": a.in_switch,
            "has_bound": a.bound is not None,
            "preference": a.preference,
            "applies": table[a.name],
        }
        for a in algorithms()
    ]
    if as_json:
        print(
            json.dumps(
                {"op": str(normalize_op(op)), "group": group, "algorithms": rows},
                indent=1,
                allow_nan=False,
            )
        )
        return 0
    print(
        f"algorithms, by preference (applies: candidate for {normalize_op(op)} over --group "
        f"{group} on that fabric)"
    )
    for r in rows:
        where = [f for f, ok in r["applies"].items() if ok]
        print(f"{r['algorithm']}  [{', '.join(r['ops'])}]")
        print(f"    {r['summary']}")
        print(f"    applies on: {', '.join(where) if where else '-'}")
    return 0
