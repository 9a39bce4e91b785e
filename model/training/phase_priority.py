"""Overlapping MP, PP and DP communication on FRED switches: one phase at a time, by priority.

Without this rule every collective of a training iteration is timed as if alone
(fredfab.model.training.iteration). A FRED switch in packet mode (docs/switch-rtl.md,
"Packet mode") serves one phase at a time: the phase of the highest priority ready, MP > PP
> DP (paper §5.4), moving to it at a packet boundary; the preempted phase
keeps its packets and resumes after. ``prioritise`` applies that rule to a task graph
(fredfab.model.training.timeline) and returns the same graph with stretched durations:

* MP is never stopped by a lower class.
* A PP part makes no progress while an MP part runs on a switch it uses; a DP part none
  while an MP or a PP part does. So PP is stretched by the MP time overlapping it and DP by
  the MP and PP time, and the switch's busy time is conserved.
* While a part stops a lower class on a switch they share, it progresses at
  ``PhaseRule.competing_share`` of its rate (the timing card's ``vc_share``, 1.0 by
  default): the NPUs' links also carry the waiting phase's packets until its credits run out,
  as co-simulation measures. Its part is stretched by 1/share over that time, and the waiting
  part waits that much longer. A part served with no lower class waiting on its switches
  keeps its rate, so communication that overlaps nothing never pays it.
* Each interruption (a part that was progressing stopped by a higher class) costs the
  preempted part ``PhaseRule.preempt_s``: the switch finishes the packet in flight, drains
  and copies the new slot (timing card ``preempt_cycles``) before the higher class runs.
  Charging it to the preempted part, not the preempting one, keeps MP's time free of it
  (only the competing share above slows MP); it is nanoseconds against collectives of
  microseconds and more.
* Every communication part crossing a FRED switch gets the switch's share of a port for
  the served phase, ``PhaseRule.switch_fraction`` (the timing card's credit rate, 1.0 by
  default): its time is divided by it, whether it overlaps or not. This
  applies to the I/O parts (inputs, weights) too, which cross the same switches. The packet
  header's cost is not the switch's: every fabric's links carry the same packets, so it is
  charged to every fabric before this rule (fredfab.model.training.packet_rate).

Assumptions (the simplest behaviour consistent with the design; docs/training-model.md):

* A part uses the switches on the tree routes among the members of each of its groups
  (``tree_switches``); two parts compete only when those sets intersect, and a part is
  stopped when *any* switch it uses serves a higher class (a collective's pipelined steps
  move at the pace of its slowest switch). A running part holds its switches for its class
  even while a higher class stops it elsewhere: a switch keeps serving the phase whose packets
  it holds.
* Parts of one class do not stop each other: the switch serves one phase, i.e. one VC and
  one configuration slot, and the concurrent flows of a class (e.g. the MP groups of all
  stages) are routed into one configuration, as the paper's placement allows; today's model
  already times them as independent collectives.
* I/O parts (``input``, ``weights``) and compute are neither stopped nor stop others: the
  design gives I/O traffic no data VC of its own.
* The task graph keeps its order: a task starts when its resource and its dependencies are
  done, exactly as before; only durations change (every communication part by the switch
  fraction when it is below 1; MP and PP parts by the competing share while they stop a lower
  class; PP and DP parts by their waits and preemptions). The breakdown's
  "what if this kind were free" counterfactuals reuse the stretched durations.

Applied by fredfab.sim.engines.training on fabrics with FRED switches only, after the
header's payload rate that every fabric pays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fredfab.model.errors import InputError
from fredfab.model.packet.format import PRIORITY as VC_PRIORITY
from fredfab.model.packet.format import VC_NAMES
from fredfab.model.training.packet_rate import COMM
from fredfab.model.training.timeline import Task, Timeline

if TYPE_CHECKING:
    from fredfab.model.system.switch_timing import SwitchTiming

#: Phase classes, highest priority first: the packet format's VC priority, MP > PP > DP.
PRIORITY: tuple[str, ...] = tuple(VC_NAMES[vc] for vc in VC_PRIORITY)
_RANK = {c: k for k, c in enumerate(PRIORITY)}
#: Finishing tolerance of the event loop (seconds): parts whose remaining work is below it
#: end together (float residues of equal durations).
_EPS = 1e-15


@dataclass(frozen=True)
class PhaseRule:
    """The switch's rule in seconds: what a preemption costs the preempted phase and what
    share of a port the switch gives the served phase, always and while a lower phase waits
    (timing card packet costs, SwitchTiming). The packet header's share is not here: every
    fabric pays it (fredfab.model.training.packet_rate)."""

    #: Seconds lost by a phase each time a higher one preempts it (preempt_cycles / clock).
    preempt_s: float = 0.0
    #: Share of a port's rate the served phase's VC gets at any time: the credit rate
    #: (PacketCosts.switch_fraction). 1.0 = the rule's ordering alone.
    switch_fraction: float = 1.0
    #: Share of its rate a served part keeps while it stops a lower class on a switch they
    #: share (PacketCosts.competing_share, the card's vc_share). 1.0 = competing costs nothing.
    competing_share: float = 1.0

    def __post_init__(self) -> None:
        if not self.preempt_s >= 0:
            raise InputError(f"preempt_s must be >= 0, got {self.preempt_s}")
        for name in ("switch_fraction", "competing_share"):
            value = getattr(self, name)
            if not 0 < value <= 1:
                raise InputError(f"{name} must be in (0, 1], got {value}")

    @classmethod
    def from_timing(cls, timing: SwitchTiming) -> PhaseRule:
        """The rule of a fabric's SwitchTiming (its card's packet costs, its clock)."""
        costs = timing.card.packet_costs
        return cls(timing.preempt_time, costs.switch_fraction, costs.competing_share)


@dataclass(frozen=True)
class Prioritised:
    """The task graph with stretched durations, and per task the seconds each of its parts
    waited for higher classes, how often it was preempted, and the seconds each of its parts
    lost to the competing share while it stopped a lower class."""

    timeline: Timeline
    waited: tuple[tuple[float, ...], ...]
    preemptions: tuple[int, ...]
    slowed: tuple[tuple[float, ...], ...]


def tree_switches(parent: Sequence[int], is_switch: Callable[[int], bool]):
    """``switches(group)`` for a tree fabric: the switches on the routes among the group's
    members (up from each to their lowest common ancestor)."""

    def switches(group: tuple[int, ...]) -> frozenset[int]:
        if not group:
            return frozenset()
        paths = []
        for u in group:
            p, v = [], u
            while v >= 0:
                p.append(v)
                v = parent[v]
            paths.append(p[::-1])  # root first
        common = 0
        while all(len(p) > common and p[common] == paths[0][common] for p in paths):
            common += 1
        # The lowest common ancestor is paths[0][common - 1]; keep it and everything below.
        out = {v for p in paths for v in p[common - 1 :] if is_switch(v)}
        return frozenset(out)

    return switches


def prioritise(
    tl: Timeline,
    rule: PhaseRule,
    switches: Callable[[tuple[int, ...]], frozenset],
) -> Prioritised:
    """``tl`` with the switch's rule applied (module docstring). ``switches(group)`` gives
    the switches a group's communication uses.

    An event-driven run of the graph: at every instant each running part is either served
    (progresses) or stopped by a running part of a higher class on a shared switch; a served
    part that stops a lower class on a shared switch progresses at ``competing_share``. The
    stretch of a part is the time it was stopped plus one ``preempt_s`` per interruption, plus
    the time it lost progressing at the competing share; the returned graph has the durations
    plus stretch, so its ordinary schedule gives the start and end times of this run."""
    n = len(tl.tasks)
    scale = 1.0 / rule.switch_fraction
    durs = [[d * scale if c in COMM and scale != 1.0 else d for c, d in t.parts] for t in tl.tasks]
    waited = [[0.0] * len(t.parts) for t in tl.tasks]
    slowed = [[0.0] * len(t.parts) for t in tl.tasks]
    hits = [0] * n
    ranked_classes = {c for t in tl.tasks for c, d in t.parts if d > 0 and c in _RANK}
    if len(ranked_classes) > 1:  # with one class nothing waits: skip the event-driven run
        _run(tl, rule, switches, durs, waited, slowed, hits)
    # The same graph with the new durations (copied directly: the tasks were checked on add).
    out = Timeline()
    out.tasks = [
        Task(
            task.name,
            task.resource,
            tuple(
                (c, d + w + s)
                for (c, _), d, w, s in zip(task.parts, durs[t], waited[t], slowed[t], strict=True)
            ),
            task.where,
        )
        for t, task in enumerate(tl.tasks)
    ]
    out.deps = [list(d) for d in tl.deps]
    out.queue.update((r, list(q)) for r, q in tl.queue.items())
    return Prioritised(out, tuple(map(tuple, waited)), tuple(hits), tuple(map(tuple, slowed)))


def _run(tl: Timeline, rule: PhaseRule, switches, durs, waited, slowed, hits) -> None:
    """The event-driven run of ``prioritise``: fills ``waited``, ``slowed`` and ``hits`` in
    place."""
    n = len(tl.tasks)
    memo: dict[tuple, frozenset] = {}

    def used(t: int) -> frozenset:
        where = tl.tasks[t].where
        if where not in memo:
            memo[where] = frozenset().union(*(switches(g) for g in where))
        return memo[where]

    prev = [-1] * n
    for q in tl.queue.values():
        for a, b in zip(q, q[1:], strict=False):
            prev[b] = a
    succ: list[list[int]] = [[] for _ in range(n)]
    pending = [0] * n
    for t in range(n):
        for p in [*tl.deps[t], *([prev[t]] if prev[t] >= 0 else [])]:
            succ[p].append(t)
            pending[t] += 1
    part = [0] * n  # current part of a running task
    rem = [0.0] * n  # its remaining work
    served = [False] * n  # it progressed in the last step (an interruption costs then)
    running: set[int] = set()
    done = 0
    share = rule.competing_share

    def begin(t: int) -> list[int]:
        """Start task t now; returns the tasks that end at once (all parts empty)."""
        part[t], rem[t], served[t] = 0, durs[t][0] if durs[t] else 0.0, False
        running.add(t)
        return _skip_empty(t)

    def _skip_empty(t: int) -> list[int]:
        while rem[t] <= _EPS:
            part[t] += 1
            served[t] = False
            if part[t] >= len(durs[t]):
                running.discard(t)
                return [t]
            rem[t] = durs[t][part[t]]
        return []

    def finish(ended: list[int]) -> None:
        nonlocal done
        while ended:
            t = ended.pop()
            done += 1
            for u in succ[t]:
                pending[u] -= 1
                if pending[u] == 0:
                    ended.extend(begin(u))

    classes = [[c for c, _ in t.parts] for t in tl.tasks]
    wheres = [t.where for t in tl.tasks]
    shared: dict[tuple, bool] = {}

    def overlap(u: int, t: int) -> bool:
        """Whether tasks u and t use a common switch (memoised per pair of groups)."""
        key = (wheres[u], wheres[t])
        hit = shared.get(key)
        if hit is None:
            hit = shared[key] = bool(used(u) & used(t))
        return hit

    finish([e for t in range(n) if pending[t] == 0 for e in begin(t)])
    while running:
        cls = {t: classes[t][part[t]] for t in running}
        ranked = [t for t in running if cls[t] in _RANK]
        if len({cls[t] for t in ranked}) < 2:  # one class: nothing stops anything
            blocked: set[int] = set()
        else:
            blocked = {
                t
                for t in ranked
                if cls[t] != PRIORITY[0]
                and any(_RANK[cls[u]] < _RANK[cls[t]] and overlap(u, t) for u in ranked)
            }
        for t in blocked:
            if served[t]:  # preempted while progressing: the switch-over is its cost
                rem[t] += rule.preempt_s
                waited[t][part[t]] += rule.preempt_s
                hits[t] += 1
                served[t] = False
        moving = [t for t in running if t not in blocked]
        # A served part that stops a lower class on a switch they share keeps the competing
        # share of its rate; every other moving part (I/O and compute too) keeps all of it.
        rate = {
            t: share
            if share < 1.0
            and blocked
            and cls[t] in _RANK
            and any(_RANK[cls[u]] > _RANK[cls[t]] and overlap(u, t) for u in blocked)
            else 1.0
            for t in moving
        }
        need = {t: rem[t] / rate[t] for t in moving}
        dt = min(need.values())
        for t in blocked:
            waited[t][part[t]] += dt
        ended: list[int] = []
        for t in moving:
            rem[t] -= dt * rate[t]
            slowed[t][part[t]] += dt - dt * rate[t]
            served[t] = True
            # The part that set dt is done exactly (rem / rate * rate may leave a residue).
            if need[t] == dt or rem[t] <= _EPS:
                rem[t] = 0.0
                ended.extend(_skip_empty(t))
        finish(ended)
    if done != n:
        stuck = [tl.tasks[t].name for t in range(n) if pending[t] > 0][:5]
        raise RuntimeError(f"task graph has a cycle (e.g. {stuck})")
