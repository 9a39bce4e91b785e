"""Which algorithm runs a request: the fastest of its candidates under the simulator.

Every candidate (fredfab.model.system.registry.candidates) is planned and simulated alone on
the fabric with the run's own options (chunks, sharing, engine), and the fastest wins; times
equal within TIE (1e-6) go to the registry's preference order. In-switch candidates whose
circuit configurations do not route are skipped (and reported). A candidate whose lower bound
(``Algorithm.bound``) already exceeds the best simulated time cannot win and is not simulated
(a bound counts link bandwidth only, which the packet model respects as well).

The evaluation depends only on the fabric, the request (op, group, size, root) and the run
options, so it is memoised: the training model asks for the same collectives many times.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

from fredfab.model.system.algorithms import CollectiveRequest, Plan, check_request, plan_request
from fredfab.model.system.elements import FabricError
from fredfab.model.system.fabric import Fabric
from fredfab.model.system.registry import candidates, lookup
from fredfab.sim.engines.plan_run import RunOptions, run_alone_cache_clear, run_plans
from fredfab.sim.engines.switch_check import CollectiveConflict, SwitchChecker

#: Relative difference under which two simulated times are a tie (preference decides): a
#: few nanoseconds of hop latency in a millisecond collective do not displace the algorithm
#: a fabric prefers (the 5 x 4 mesh's mesh-2d and an X-Y ring differ by 2e-7 at 4 GiB).
TIE = 1e-6

#: Candidate statuses: the winner; simulated and slower; not simulated because its bound
#: exceeds the winner's time; the only runnable candidate (nothing to compare); its in-switch
#: configuration does not route; named by the caller.
STATUSES = ("chosen", "slower", "bound-exceeds-best", "only", "unroutable", "forced")


@dataclass(frozen=True)
class Candidate:
    """One algorithm considered for a request."""

    name: str
    status: str
    #: Seconds when run alone on the fabric (None when it was not simulated).
    time: float | None = None
    #: Its lower bound in seconds (None when the algorithm states none).
    bound: float | None = None
    #: Why it was left out (unroutable configurations).
    why: str = ""

    def to_dict(self) -> dict:
        return {
            "algorithm": self.name,
            "status": self.status,
            "time_s": self.time,
            "bound_s": self.bound,
        }


@dataclass(frozen=True)
class Choice:
    """The plan of one request, the candidates considered, and fallback messages."""

    plan: Plan
    candidates: tuple[Candidate, ...]
    fallbacks: tuple[str, ...] = ()


def choose(
    fabric: Fabric,
    req: CollectiveRequest,
    index: int,
    opts: RunOptions,
    *,
    algorithm: str | None = None,
    on_conflict: str = "fallback",
) -> Choice:
    """The plan for request ``index``: the forced ``algorithm`` when it runs ``req.op`` (it
    must then apply), else the fastest candidate (see the module docstring)."""
    check_request(fabric, req)
    if len(req.group) == 1 and not req.op.uses_io:
        return Choice(plan_request(fabric, req, index), ())
    if algorithm is not None and req.op in lookup(algorithm).ops:
        return _forced(fabric, req, index, opts, algorithm, on_conflict)
    cands = _evaluate(fabric, _key(req), opts)
    where = f"request {index} ({req.op} over {len(req.group)} NPUs)"
    chosen = next(c for c in cands if c.status in ("chosen", "only"))
    bad = [c for c in cands if c.status == "unroutable"]
    if bad and on_conflict == "error":
        raise CollectiveConflict(f"{where}: {bad[0].why}")
    notes = tuple(f"{where}: {c.why}; ran {chosen.name} instead of {c.name}" for c in bad)
    return Choice(lookup(chosen.name).plan(fabric, req, index), cands, notes)


def _forced(
    fabric: Fabric, req: CollectiveRequest, index: int, opts: RunOptions, name: str, on_conflict
) -> Choice:
    plan = plan_request(fabric, req, index, algorithm=name)
    bound = _bound(name, fabric, req)
    if plan.steps:
        why = SwitchChecker(fabric).plan_conflict(plan)
        if why is not None:
            where = f"request {index} ({req.op} over {len(req.group)} NPUs)"
            if on_conflict == "error":
                raise CollectiveConflict(f"{where}: {why}")
            # The default choice skips the unroutable in-switch candidates.
            best = choose(fabric, req, index, opts, on_conflict=on_conflict)
            msg = f"{where}: {why}; ran {best.plan.algorithm} instead of {name}"
            return Choice(best.plan, best.candidates, (msg,))
    return Choice(plan, (Candidate(name, "forced", bound=bound),))


def clear_cache() -> None:
    """Forget the memoised choices and the times of plans run alone."""
    _evaluate.cache_clear()
    run_alone_cache_clear()


def _key(req: CollectiveRequest) -> CollectiveRequest:
    """The request without what does not change its time (label)."""
    return dataclasses.replace(req, label="") if req.label else req


def _bound(name: str, fabric: Fabric, req: CollectiveRequest) -> float | None:
    b = lookup(name).bound
    return None if b is None else float(b(fabric, req))


@functools.lru_cache(maxsize=4096)
def _evaluate(fabric: Fabric, req: CollectiveRequest, opts: RunOptions) -> tuple[Candidate, ...]:
    found = candidates(fabric, req)
    if not found:
        raise FabricError(f"no algorithm runs {req.op} over {len(req.group)} NPUs on {fabric.name}")
    checker = SwitchChecker(fabric)
    bounds = {a.name: _bound(a.name, fabric, req) for a in found}
    unroutable: dict[str, str] = {}
    plans: dict[str, Plan] = {}
    for a in found:
        p = a.plan(fabric, req, 0)
        why = checker.plan_conflict(p) if p.steps else None
        if why is None:
            plans[a.name] = p
        else:
            unroutable[a.name] = why
    if not plans:
        raise FabricError(
            f"no algorithm runs {req.op} over {len(req.group)} NPUs on {fabric.name}: "
            + "; ".join(f"{n}: {w}" for n, w in unroutable.items())
        )
    times: dict[str, float] = {}
    pruned: set[str] = set()
    if len(plans) > 1:
        # Smallest bound first, so that a good time is known early and prunes the rest.
        order = sorted(plans, key=lambda n: bounds[n] if bounds[n] is not None else 0.0)
        for n in order:
            best = min(times.values(), default=math.inf)
            b = bounds[n]
            if b is not None and b > best * (1 + TIE):
                pruned.add(n)
                continue
            times[n] = run_plans(fabric, [plans[n]], opts).ends[0]
        best = min(times.values())
        winner = next(n for n in plans if n in times and times[n] <= best * (1 + TIE))
    else:
        winner = next(iter(plans))
    out = []
    for a in found:
        n = a.name
        if n in unroutable:
            out.append(Candidate(n, "unroutable", bound=bounds[n], why=unroutable[n]))
        elif n == winner:
            status = "chosen" if len(plans) > 1 else "only"
            out.append(Candidate(n, status, times.get(n), bounds[n]))
        elif n in pruned:
            out.append(Candidate(n, "bound-exceeds-best", bound=bounds[n]))
        else:
            out.append(Candidate(n, "slower", times[n], bounds[n]))
    return tuple(out)
