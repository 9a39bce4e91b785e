"""A training iteration as a task graph on in-order resources, and its critical path.

Each task runs on one resource (an NPU stage's compute stream, a communication channel, the
I/O controllers) for a fixed duration made of sequential parts, each in a category
("compute", "mp", "pp", "dp", "input", "weights"). A resource runs its tasks in the order they
were added (like a CUDA stream); a task starts when its resource is free and every task it
depends on has ended. Start times are the longest path through that graph.

The iteration time is the end of the last task. The *breakdown* follows one reference NPU
(by default the compute stream with the most busy time, i.e. the busiest NPU): its own compute;
the *bubble*, the time it would idle if communication were free (the same task graph with
every communication part at zero: pipeline fill and drain, imbalance between stages, which
depend on compute alone and so are the same on every fabric); and *exposed communication*,
the rest: what communication adds to the iteration. Exposed communication is shared among the
kinds (mp, dp, pp, input, weights) in proportion to what making each kind alone free would
save. The categories sum exactly to the iteration time, and a communication that overlaps
compute without delaying the iteration is hidden. (Attributing the reference's idle time to
whatever the critical path does meanwhile, as this model did before, splits the same pipeline
fill between "bubble" and "mp" by where its edges fall: another stage's compute or its
blocking MP collective; that attribution is kept only to share exposed time among the kinds
when no kind alone saves any.) The critical path is walked back from the last task; when two
constraints end at the same instant the resource's own predecessor is taken.
"""

from __future__ import annotations

import functools
from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass

CATEGORIES = ("compute", "bubble", "input", "dp", "mp", "pp", "weights")
#: Categories a task may be given ("bubble" is derived).
TASK_CATEGORIES = ("compute", "input", "dp", "mp", "pp", "weights")
#: Exposed communication by kind, from the breakdown's communication categories: MP, DP and
#: PP collectives, and I/O streaming (microbatch inputs, and under weight streaming the weight
#: loads and gradient reductions, all through the I/O controllers). Seen from the reference
#: NPU, the iteration time is exactly compute + bubble + the sum of these: exposed
#: communication is what communication adds to the iteration, the bubble is the time the NPU
#: would wait for other stages with free communication (pipeline fill, drain and imbalance).
EXPOSED_KINDS: dict[str, tuple[str, ...]] = {
    "mp": ("mp",),
    "dp": ("dp",),
    "pp": ("pp",),
    "io": ("input", "weights"),
}


def exposed(breakdown: dict[str, float]) -> dict[str, float]:
    """Exposed communication per kind (EXPOSED_KINDS) of a breakdown, in seconds."""
    return {k: sum(breakdown.get(c, 0.0) for c in cats) for k, cats in EXPOSED_KINDS.items()}


def _as_groups(where: Iterable[Iterable[int]]) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(u) for u in g) for g in where)


@functools.lru_cache(maxsize=4096)
def _int_groups(where: tuple) -> bool:
    """Whether ``where`` is already a tuple of tuples of ints (memoised: the same groups
    come back for every task of a stage)."""
    return all(type(g) is tuple and all(type(u) is int for u in g) for g in where)


@dataclass(frozen=True)
class Task:
    name: str
    resource: str
    parts: tuple[tuple[str, float], ...]
    #: The NPU groups whose communication the task's non-compute parts carry (e.g. a
    #: stage's MP groups); () when unknown. Only the FRED phase rule reads it
    #: (fredfab.model.training.phase_priority): it tells which switches a part uses.
    where: tuple[tuple[int, ...], ...] = ()

    @property
    def duration(self) -> float:
        return sum(d for _, d in self.parts)


@dataclass(frozen=True)
class Scheduled:
    start: tuple[float, ...]
    end: tuple[float, ...]
    critical: tuple[int, ...]  # task ids on the critical path, in time order
    breakdown: dict[str, float]
    busy: dict[str, float]  # per resource: seconds busy
    reference: str  # the resource the breakdown follows

    @property
    def makespan(self) -> float:
        return max(self.end, default=0.0)


class Timeline:
    def __init__(self) -> None:
        self.tasks: list[Task] = []
        self.deps: list[list[int]] = []
        self.queue: dict[str, list[int]] = defaultdict(list)
        #: Topological order and per-task resource predecessor, from the last schedule.
        self._order: tuple[list[int], list[int]] = ([], [])

    def add(
        self,
        name: str,
        resource: str,
        parts: Iterable[tuple[str, float]] | float,
        category: str = "compute",
        deps: Iterable[int] = (),
        where: Iterable[Iterable[int]] = (),
    ) -> int:
        """Append a task to ``resource``'s queue; ``parts`` is a duration (of ``category``)
        or (category, seconds) pairs run one after the other; ``where``: the NPU groups its
        communication involves (Task.where)."""
        if isinstance(parts, int | float):
            parts = ((category, float(parts)),)
        parts = tuple((c, float(d)) for c, d in parts)
        for c, d in parts:
            if c not in TASK_CATEGORIES:
                raise ValueError(f"task {name}: category {c!r} not in {TASK_CATEGORIES}")
            if not d >= 0:
                raise ValueError(f"task {name}: duration {d} must be >= 0")
        tid = len(self.tasks)
        # Callers that add many tasks pass the same tuple of int tuples again and again.
        groups = where if type(where) is tuple and _int_groups(where) else _as_groups(where)
        self.tasks.append(Task(name, resource, parts, groups))
        self.deps.append([int(d) for d in deps if d is not None])
        self.queue[resource].append(tid)
        return tid

    def depend(self, task: int, *on: int | None) -> None:
        """``task`` also waits for the tasks ``on`` (which may be added later)."""
        self.deps[task].extend(int(d) for d in on if d is not None)

    def schedule(self, reference: str | None = None) -> Scheduled:
        """Start and end of every task, the critical path and the breakdown (seen from
        ``reference``; default: the busiest resource running compute)."""
        start, end, prev = self._times()
        crit = self._critical(start, end, prev)
        return self._finish(start, end, prev, crit, reference)

    def _times(self) -> tuple[list[float], list[float], list[int]]:
        """Start and end of every task (longest paths), and each task's predecessor on its
        resource (-1 for the first)."""
        n = len(self.tasks)
        prev = [-1] * n
        for q in self.queue.values():
            for a, b in zip(q, q[1:], strict=False):
                prev[b] = a
        succ: list[list[int]] = [[] for _ in range(n)]
        indeg = [0] * n
        for t in range(n):
            preds = list(self.deps[t]) + ([prev[t]] if prev[t] >= 0 else [])
            for p in preds:
                if not 0 <= p < n:
                    raise ValueError(f"task {self.tasks[t].name} depends on unknown task {p}")
                succ[p].append(t)
            indeg[t] = len(preds)
        start = [0.0] * n
        end = [0.0] * n
        ready = deque(t for t in range(n) if indeg[t] == 0)
        done = 0
        order: list[int] = []
        while ready:
            t = ready.popleft()
            order.append(t)
            s = end[prev[t]] if prev[t] >= 0 else 0.0
            for d in self.deps[t]:
                s = max(s, end[d])
            start[t] = s
            end[t] = s + self.tasks[t].duration
            done += 1
            for u in succ[t]:
                indeg[u] -= 1
                if indeg[u] == 0:
                    ready.append(u)
        if done != n:
            stuck = [self.tasks[t].name for t in range(n) if indeg[t] > 0][:5]
            raise RuntimeError(f"task graph has a cycle (e.g. {stuck})")
        self._order = (order, prev)
        return start, end, prev

    def _finish(self, start, end, prev, crit, reference):
        n = len(self.tasks)
        busy: dict[str, float] = defaultdict(float)
        for t, task in enumerate(self.tasks):
            busy[task.resource] += end[t] - start[t]
        if reference is None:
            computing = {
                self.tasks[t].resource
                for t in range(n)
                if any(c == "compute" for c, _ in self.tasks[t].parts)
            }
            reference = max(sorted(computing), key=lambda r: busy[r], default="")
        aligned = self._breakdown(start, end, crit, reference)
        br = self._free_fabric_split(aligned, max(end, default=0.0))
        return Scheduled(tuple(start), tuple(end), tuple(crit), br, dict(busy), reference)

    def _makespan_without(self, cats: frozenset[str]) -> float:
        """The iteration time with every part of the categories ``cats`` taking no time (the
        same task order on every resource; the topological order of the last ``_times``)."""
        order, prev = self._order
        end = [0.0] * len(self.tasks)
        for t in order:
            s = end[prev[t]] if prev[t] >= 0 else 0.0
            for d in self.deps[t]:
                if end[d] > s:
                    s = end[d]
            end[t] = s + sum(d for c, d in self.tasks[t].parts if c not in cats)
        return max(end, default=0.0)

    def _free_fabric_split(self, aligned: dict[str, float], makespan: float) -> dict[str, float]:
        """Bubble and exposed communication, the bubble independent of the fabric.

        The bubble is the reference's idle time with free communication (every transfer and
        blocking collective taking no time): pipeline fill, drain and imbalance, a property
        of the stages' compute alone. Exposed communication is the rest, the time the
        communication adds to the iteration; each kind gets a share in proportion to what
        making that kind alone free would save (where no kind alone saves anything: the
        time-aligned attribution ``aligned``, what the critical path does while the reference
        idles; failing that, equal shares). Slowing down one collective must not move
        pipeline fill into "mp" just because the fill now overlaps another stage's MP
        instead of its compute."""
        comm = [c for c in TASK_CATEGORIES if c != "compute"]
        compute = aligned["compute"]
        present = {c for t in self.tasks for c, d in t.parts if d > 0}
        if not present & set(comm):
            return aligned
        free = self._makespan_without(frozenset(comm))
        bubble = max(free - compute, 0.0)
        exposed = max(makespan - free, 0.0)
        kinds = [c for c in comm if c in present]
        if exposed <= 0 or len(kinds) == 1:  # nothing to share, or one kind takes it all
            saved = {c: 1.0 if c in kinds else 0.0 for c in comm}
        else:
            saved = {
                c: max(makespan - self._makespan_without(frozenset({c})), 0.0)
                if c in kinds
                else 0.0
                for c in comm
            }
        weights = saved
        for fallback in ({c: aligned[c] for c in comm}, {c: float(c in kinds) for c in comm}):
            if sum(weights.values()) <= 0:
                weights = fallback
        total = sum(weights.values())
        br = dict.fromkeys(CATEGORIES, 0.0)
        br["compute"], br["bubble"] = compute, bubble
        for c in comm:
            br[c] = exposed * weights[c] / total
        return br

    def _segments(self, t: int, start: list[float]):
        """(category, from, to) of task ``t``'s parts, in order."""
        a = start[t]
        for c, d in self.tasks[t].parts:
            yield c, a, a + d
            a += d

    def _breakdown(self, start, end, crit, reference) -> dict[str, float]:
        br = dict.fromkeys(CATEGORIES, 0.0)
        mine = self.queue.get(reference, [])
        idle: list[tuple[float, float]] = []
        t_prev = 0.0
        for t in mine:
            for c, a, b in self._segments(t, start):
                br[c] += b - a
            if start[t] > t_prev:
                idle.append((t_prev, start[t]))
            t_prev = max(t_prev, end[t])
        makespan = max(end, default=0.0)
        if makespan > t_prev:
            idle.append((t_prev, makespan))
        # Idle time of the reference goes to what the critical path does meanwhile.
        segs = [s for t in crit for s in self._segments(t, start)]
        k = 0
        for a, b in idle:
            while k < len(segs) and segs[k][2] <= a:
                k += 1
            j = k
            while j < len(segs) and segs[j][1] < b:
                c, sa, sb = segs[j]
                ov = min(b, sb) - max(a, sa)
                if ov > 0:
                    br["bubble" if c == "compute" else c] += ov
                j += 1
        return br

    def _critical(self, start, end, prev) -> list[int]:
        if not self.tasks:
            return []
        t = max(range(len(self.tasks)), key=lambda i: (end[i], -i))
        path = [t]
        while True:
            s = start[t]
            if s <= 0:
                break
            tol = 1e-12 * max(1.0, abs(s))
            nxt = None
            if prev[t] >= 0 and abs(end[prev[t]] - s) <= tol:
                nxt = prev[t]
            else:
                cands = [d for d in self.deps[t] if abs(end[d] - s) <= tol]
                if cands:
                    nxt = max(cands, key=lambda d: end[d])
            if nxt is None:  # cannot happen: start is the max of these ends
                raise AssertionError(f"no critical predecessor for {self.tasks[t].name}")
            t = nxt
            path.append(t)
        return path[::-1]
