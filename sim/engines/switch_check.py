"""Routability of in-switch circuit configurations: every switch's FRED flows checked with
the switch router (fredfab.model.switch.router), memoised per process."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from fredfab.model.errors import InputError
from fredfab.model.switch.flow import Flow, FlowError, validate_flows
from fredfab.model.switch.router import routable
from fredfab.model.system.fabric import Fabric
from fredfab.model.system.request import Plan
from fredfab.model.system.schedule import LaneConflict, switch_flows


class CollectiveConflict(InputError):
    """Flows that cannot share a circuit configuration, with on_conflict="error"."""


class SwitchChecker:
    """Routability of circuit configurations on every switch, memoised."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric

    def conflict(self, step_trees: Sequence[Sequence]) -> str | None:
        trees = [t for s in step_trees for t in s]
        try:
            per_switch = switch_flows(self.fabric, trees)
        except (LaneConflict, FlowError) as exc:
            return str(exc)
        for x, flows in sorted(per_switch.items()):
            why = _route_check(tuple(sorted(flows)), self.fabric.num_ports(x), self.fabric.switch_m)
            if why is not None:
                return f"switch {self.fabric.nodes[x].name}: {why}"
        return None

    def plan_conflict(self, plan: Plan) -> str | None:
        """Why one of ``plan``'s own serial steps cannot be configured (None: all route)."""
        return next((c for s in plan.steps if (c := self.conflict([s])) is not None), None)

    def conflict_merged(self, plans: Sequence[Plan]) -> str | None:
        serial = [p for p in plans if p.steps and not p.multiplexed]
        depth = max((len(p.steps) for p in serial), default=0)
        for k in range(depth):
            why = self.conflict([p.steps[k] for p in serial if k < len(p.steps)])
            if why is not None:
                return why
        return None


@functools.lru_cache(maxsize=4096)
def _route_check(flows: tuple[Flow, ...], ports: int, m: int) -> str | None:
    try:
        validate_flows(flows, ports)
    except FlowError as exc:
        return str(exc)
    if not routable(flows, ports, m):
        return f"flows {', '.join(map(str, flows))} cannot run concurrently on Fred_{m}({ports})"
    return None
