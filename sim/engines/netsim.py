"""Flow-level discrete-event network simulator for schedules of chunked transfers.

Every running transfer has one rate, the same on all its links. Rates are recomputed whenever
transfers start or finish sending:

* ``maxmin`` (default): max-min fair sharing by progressive filling. All unfrozen flows grow
  together; a link that fills freezes the flows crossing it; repeat. A flow of kind k uses
  1/f_k of a switch output link's capacity per byte/s (f_k: the timing card's throughput
  fraction), so a slow switch datapath is a bottleneck like a slow link.
* ``proportional``: every link splits its capacity equally among the flows crossing it,
  each flow takes its smallest share, and capacity a flow cannot use is not redistributed.

Events: a transfer starts when its dependencies are met (fredfab.model.system.schedule); its
last byte leaves the sender when its remaining bytes reach zero ("sent"); it is delivered its
path latency later. Transfers finishing or starting at the same instant are handled as one
batch with numpy, so a ring step over 1,000 NPUs costs one rate computation, not 1,000.

Max-min (and proportional) rates of a flow depend only on the flows it is connected to through
shared links, so an instant recomputes only the connected components of the flows that started
or finished: on a mesh, where rings in different rows and directions share no link, an event
costs a few flows' work however large the fabric. A flow's remaining bytes are kept as of its
last rate change (remaining = bytes then - rate x time since), so flows whose rate did not
change cost nothing.

An instant that touches a few transfers (a mesh's, mostly: a component of ~8-24 ring
transfers) is worked item by item in Python, where numpy's cost per call would dominate: the
component search, its max-min rates (from the links' transfer counts when all link weights
are equal and most components fill at one level), remaining bytes and finish instants, starts
and sends. The per-transfer state lives in buffers that Python reads as array items and numpy
as arrays. Both paths do the same float operations in the same order, so which one runs
changes only the speed: tests/sim/engines/test_netsim_reference.py forces each in turn, and
checks the engine against a plain simulator that solves every running transfer at every
instant.
"""

from __future__ import annotations

import heapq
from array import array
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from fredfab.model.errors import InputError
from fredfab.model.system.schedule import Schedule

SHARING = ("maxmin", "proportional")
_REL = 1e-9  # relative tolerance: transfers finishing within it finish together
#: Components up to this many transfers are searched link
#: by link in Python; larger ones (all flows crossing a tree's root, say) with whole-array
#: numpy passes, which cost the same however many flows they find. Only speed depends on it.
_SMALL = 96
#: Python bookkeeping is dropped for an instant whose started and finished transfers have more
#: than 1/_BATCH of the running transfers' links, and taken up again (its per-link sets rebuilt)
#: after _CALM instants in a row with less than 1/(4 _BATCH).
_BATCH = 8
_CALM = 16
#: Releases of at most this many transfers walk the dependency tables in Python.
_FEW = 16
#: The heap of finish instants (set mode) is rebuilt from its live entries once it holds
#: more than twice as many entries as live ones plus this many. Only speed depends on it.
_COMPACT = 1024


@dataclass(frozen=True)
class NetResult:
    start: np.ndarray  # per transfer: seconds when it started
    sent: np.ndarray  # last byte left the sender
    delivered: np.ndarray  # last byte arrived everywhere
    events: int  # simulator wake-ups
    rate_updates: int  # rate recomputations

    @property
    def makespan(self) -> float:
        return float(self.delivered.max(initial=0.0))


def run_schedule(
    schedule: Schedule,
    capacity: np.ndarray | None = None,
    sharing: str = "maxmin",
    resolution: float = 0.0,
) -> NetResult:
    """Simulate ``schedule`` over the fabric's links (capacity defaults to link bandwidth).

    ``resolution`` > 0 rounds every event time up to a multiple of it, so that events closer
    than it are handled together. Each event on the critical path is late by less than one
    resolution, so the makespan grows by at most resolution x (dependency depth); 0 is exact.
    """
    if sharing not in SHARING:
        raise InputError(f"sharing {sharing!r} unknown; use one of {SHARING}")
    if not (resolution >= 0 and np.isfinite(resolution)):
        raise InputError(f"resolution must be >= 0 seconds, got {resolution}")
    cap = schedule.fabric.bandwidth if capacity is None else np.asarray(capacity, dtype=float)
    return _FlowSim(schedule.finalize(), cap, sharing, resolution).run()


class _FlowSim:
    """The event loop. Two bookkeepings of the running transfers, switched by how many change
    at once (see _BATCH): numpy arrays of every running transfer and link (``act``,
    ``act_links``, ``act_owner``) while transfers start and finish by the thousand, and while
    they come a few at a time Python sets (the running set, each link's transfers) with a
    heap of finish times, so that an instant costs the work of the transfers it touches, not
    of every running one."""

    def __init__(
        self, a: dict[str, np.ndarray], cap: np.ndarray, sharing: str, resolution: float
    ) -> None:
        self.a = a
        self.res = float(resolution)
        self.cap = cap
        self.nl = len(cap)
        self.sharing = sharing
        n = len(a["size"])
        self.n = n
        self.ptr = a["ptr"]
        self.links = a["links"]
        self.weights = a["weights"]
        self.size = a["size"]
        self.latency = a["latency"]
        self.delay = a["delay"]
        self.nlinks = np.diff(self.ptr)
        # Per transfer, dependencies not yet met. Like the per-transfer state below, one
        # buffer seen two ways (see _shared): items for the Python walks, arrays for numpy.
        self._need_py, self.need = _shared(np.bincount(a["dep_dst"], minlength=n), "q")
        # Dependents in CSR form, one table per dependency kind (0 delivered, 1 sent).
        self.dep_tab = []
        for kind in (0, 1):
            sel = a["dep_kind"] == kind
            s, d = a["dep_src"][sel], a["dep_dst"][sel]
            order = np.argsort(s, kind="stable")
            ptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.bincount(s, minlength=n), out=ptr[1:])
            self.dep_tab.append((ptr, d[order]))
        #: The same tables as Python lists, for releases of a few transfers at a time.
        self._dep_py = [(p.tolist(), d.tolist()) for p, d in self.dep_tab]
        self.start = np.full(n, np.nan)
        self.sent = np.full(n, np.nan)
        self.delivered = np.full(n, np.nan)
        # Per transfer: remaining bytes at t_ref (its last rate change), rate since, and the
        # projected instant its last byte leaves (inf while not running).
        self._rem_py, self.rem = _shared(self.size, "d")
        self._t_ref_py, self.t_ref = _shared(np.zeros(n), "d")
        self._rate_py, self.rate = _shared(np.zeros(n), "d")
        self._fin_py, self.fin = _shared(np.full(n, np.inf), "d")
        # Read-only tables for the item-by-item path: arrays of 8 bytes a value (a list of
        # Python floats would take 32, which millions of transfers feel).
        self._size_py = _items(self.size, "d")
        self._latency_py = _items(self.latency, "d")
        self._delay_py = _items(self.delay, "d")
        self._nlinks_py = _items(self.nlinks, "q")
        # Running transfers, and their links (act_links) with owners (act_owner), in step.
        # Kept up to date in array mode; in set mode rebuilt from the sets when a search needs
        # them (``_stale``).
        self.act = np.zeros(0, dtype=np.int64)
        self.act_links = np.zeros(0, dtype=np.int64)
        self.act_owner = np.zeros(0, dtype=np.int64)
        self._stale = False
        self.added: list[np.ndarray] = []  # started at this instant
        self.removed: list[np.ndarray] = []  # finished sending at this instant
        self.timed: list = []  # heap of (time, seq, kind, tids): 0 start, 1 delivered
        self.seq = 0
        self.now = 0.0
        self.events = 0
        self.rate_updates = 0
        self._lmark = np.zeros(self.nl, dtype=bool)
        self._fmark = np.zeros(n, dtype=bool)
        self._remap = np.zeros(self.nl, dtype=np.int64)
        # The link table in Python lists, for the set mode's searches.
        self._py_ptr: list[int] = self.ptr.tolist()
        self._py_links: list[int] = self.links.tolist()
        self._py_weights_items: array | None = None  # see _py_weights
        self._py_cap: list[float] = np.asarray(cap, dtype=float).tolist()
        #: What the first level of progressive filling divides (_rates_arrays: np.maximum).
        self._py_cap0: list[float] = np.maximum(np.asarray(cap, dtype=float), 0.0).tolist()
        #: When every link of every transfer weighs the same w > 0 (a mesh, or switches at
        #: line rate), the load of a link carrying c transfers once each is w added c times
        #: whatever their order: _w_sums[c], exactly the sum the array version forms. None
        #: otherwise.
        self._w_sums: list[float] | None = _repeated_sums(self, _SMALL)
        self._one_level: float | None = None  # _component_small's rate, when one level fills
        # Set mode (while small components are the rule, see _SMALL, and transfers start and
        # finish a few at a time, see _BATCH): per link its running transfers, the running
        # set, how many links they use, and a heap of (finish instant, transfer) whose stale
        # entries (the transfer's fin moved since) are skipped. None in array mode. Dropped for
        # good once most recent searches outgrew _SMALL (``_big``: their share, averaged over
        # the last ~256).
        # (A dict of the links in use: a fabric of thousands of links runs many small
        # schedules, which must not pay for a set per link each.)
        self._on_link: dict[int, set[int]] | None = defaultdict(set)
        self._running: set[int] = set()
        self._running_links = 0
        self._heap: list[tuple[float, int]] = []
        self._due: dict[int, float] = {}  # set mode: per running transfer, its heap entry's instant
        self._gone_links = 0  # links of the transfers that finished this instant (set mode)
        self._searches = 0
        self._big = 0.0
        self._calm = 0  # instants in a row with few changes, while in array mode
        self._small_ok = True  # False once searches mostly outgrow _SMALL
        self._gone: list[tuple[np.ndarray, np.ndarray]] = []  # (links, owners) finished

    # ---------------------------------------------------------------- bookkeeping
    def _grid(self, t):
        """Absolute time ``t`` rounded up to the time grid when resolution > 0."""
        if self.res <= 0:
            return t
        return np.maximum(np.ceil(t / self.res - 1e-9) * self.res, self.now)

    def _at_few(self, tids: list[int], offset: list[float], kind: int) -> None:
        """As _at for a few transfers, each ``offset[t]`` after now (exact time only):
        the same groups, in the same order, without numpy's per-call cost."""
        now = self.now
        groups: dict[float, list[int]] = {}
        for t in tids:
            groups.setdefault(now + offset[t], []).append(t)
        for when in sorted(groups):
            self.seq += 1
            g = np.array(groups[when], dtype=np.int64)
            heapq.heappush(self.timed, (when, self.seq, kind, g))

    def _at(self, when: np.ndarray, tids: np.ndarray, kind: int) -> None:
        """Schedule ``kind`` for ``tids`` at absolute times ``when`` (grouped by time)."""
        if len(when) == 1 or (when == when[0]).all():
            groups = [(float(when[0]), tids)]
        else:
            vals, inv = np.unique(when, return_inverse=True)
            order = np.argsort(inv, kind="stable")
            cuts = np.cumsum(np.bincount(inv))[:-1]
            groups = zip(vals.tolist(), np.split(tids[order], cuts), strict=True)
        for t, g in groups:
            self.seq += 1
            heapq.heappush(self.timed, (t, self.seq, kind, g))

    def _release(self, tids: np.ndarray, kind: int) -> None:
        if len(tids) <= _FEW:  # a few: walk the tables in Python
            ptr, dep = self._dep_py[kind]
            need = self._need_py
            ready: list[int] = []
            for t in tids.tolist():
                for j in range(ptr[t], ptr[t + 1]):
                    s = dep[j]
                    v = need[s] - 1
                    need[s] = v
                    if v == 0:
                        ready.append(s)
            if ready:  # a transfer released twice at once: once, sorted, as below
                self._ready(np.array(sorted(set(ready)), dtype=np.int64))
            return
        ptr, dep = self.dep_tab[kind]
        lens = ptr[tids + 1] - ptr[tids]
        if not lens.any():
            return
        succ = dep[_ranges(ptr[tids], lens)]
        np.subtract.at(self.need, succ, 1)
        ready = succ[self.need[succ] == 0]
        if len(ready) > 1:  # a transfer released twice at once (sorted, like np.unique)
            ready.sort()
            ready = ready[np.concatenate(([True], ready[1:] != ready[:-1]))]
        self._ready(ready)

    def _ready(self, tids: np.ndarray) -> None:
        if not len(tids):
            return
        if len(tids) <= _FEW and self.res <= 0:  # a few: item by item
            delay = self._delay_py
            tl = tids.tolist()
            later = [t for t in tl if delay[t] > 0]
            if later:
                self._at_few(later, delay, 0)
                tl = [t for t in tl if not delay[t] > 0]
                if not tl:
                    return
                tids = np.array(tl, dtype=np.int64)
            self._start(tids)
            return
        d = self.delay[tids]
        later = d > 0
        if later.any():
            self._at(self._grid(self.now + d[later]), tids[later], 0)
            tids = tids[~later]
        if len(tids):
            self._start(tids)

    def _start(self, tids: np.ndarray) -> None:
        if len(tids) <= _FEW:  # a few: item by item
            now, start, rem, nlinks = self.now, self.start, self._rem_py, self._nlinks_py
            instant, rest = [], []
            for t in tids.tolist():
                start[t] = now
                (instant if rem[t] <= 0 or nlinks[t] == 0 else rest).append(t)
            if instant:
                for t in instant:
                    rem[t] = 0.0
                self._on_sent(np.array(instant, dtype=np.int64))
                if not rest:
                    return
                tids = np.array(rest, dtype=np.int64)
            t_ref = self._t_ref_py
            for t in rest:
                t_ref[t] = now
            self.added.append(tids)
            return
        self.start[tids] = self.now
        instant = (self.rem[tids] <= 0) | (self.nlinks[tids] == 0)
        if instant.any():
            self.rem[tids[instant]] = 0.0
            self._on_sent(tids[instant])
            tids = tids[~instant]
        if len(tids):
            self.t_ref[tids] = self.now
            self.added.append(tids)

    def _on_sent(self, tids: np.ndarray) -> None:
        if len(tids) <= _FEW and self.res <= 0:  # a few: item by item
            now, sent, lat = self.now, self.sent, self._latency_py
            tl = tids.tolist()
            for t in tl:
                sent[t] = now
            self._release(tids, 1)
            zero = [t for t in tl if lat[t] <= 0]
            if zero:
                self._on_delivered(np.array(zero, dtype=np.int64))
            if len(zero) < len(tl):
                self._at_few([t for t in tl if not lat[t] <= 0], lat, 1)
            return
        self.sent[tids] = self.now
        self._release(tids, 1)
        lat = self.latency[tids]
        zero = lat <= 0
        if zero.any():
            self._on_delivered(tids[zero])
        if not zero.all():
            self._at(self._grid(self.now + lat[~zero]), tids[~zero], 1)

    def _on_delivered(self, tids: np.ndarray) -> None:
        self.delivered[tids] = self.now
        self._release(tids, 0)

    # ---------------------------------------------------------------- the network
    def run(self) -> NetResult:
        self._ready(np.flatnonzero(self.need == 0))
        t_last = 0.0
        while True:
            self._settle()
            t_fin = self._first_finish()
            due = float(self._grid(t_fin)) if t_fin < np.inf else np.inf
            t_next = self.timed[0][0] if self.timed else np.inf
            if t_next == np.inf and due == np.inf:
                break
            now = self.now = min(t_next, due)
            self.events += 1
            if due < np.inf:
                # Transfers due now finish together, within a relative tolerance of the time
                # since the last instant. Woken early by a timed event, nobody is due yet.
                elapsed = now - t_last
                early = elapsed < (due - t_last) * (1 - _REL) and now < due
                limit = elapsed if early else elapsed * (1 + _REL) + 1e-15
                fin = self._finished(now, t_last, limit)
                if len(fin) > _FEW:
                    self.rem[fin] = 0.0
                    self.fin[fin] = np.inf
                    self._on_sent(fin)
                elif len(fin):
                    rem, fin_at = self._rem_py, self._fin_py
                    for t in fin.tolist():
                        rem[t] = 0.0
                        fin_at[t] = np.inf
                    self._on_sent(fin)
            t_last = now
            while self.timed and self.timed[0][0] <= now:
                _, _, kind, tids = heapq.heappop(self.timed)
                if kind == 0:
                    self._start(tids)
                else:
                    self._on_delivered(tids)
        if np.isnan(self.delivered).any():
            stuck = int(np.isnan(self.delivered).sum())
            raise RuntimeError(f"{stuck} transfers never ran: the schedule has a dependency cycle")
        return NetResult(self.start, self.sent, self.delivered, self.events, self.rate_updates)

    def _first_finish(self) -> float:
        """The earliest projected finish of a running transfer (inf if none runs)."""
        if self._on_link is None:
            return float(self.fin[self.act].min()) if len(self.act) else np.inf
        heap, due = self._heap, self._due
        while heap and due.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0] if heap else np.inf

    def _finished(self, now: float, t_last: float, limit: float) -> np.ndarray:
        """Running transfers whose last byte leaves now: due within ``limit`` of ``t_last``,
        or with (almost) nothing left to send; taken off the running set."""
        if self._on_link is None:
            act = self.act
            done = self.fin[act] - t_last <= limit
            left = self.rem[act] - self.rate[act] * (now - self.t_ref[act])
            done |= left <= self.size[act] * 1e-12
            if not done.any():
                return act[:0]
            fin = act[done]
            self._drop(fin, done)
            return fin
        heap, due, rem, rate, t_ref, size = (
            self._heap,
            self._due,
            self._rem_py,
            self._rate_py,
            self._t_ref_py,
            self._size_py,
        )
        out: list[int] = []
        while heap:
            when, t = heap[0]
            if due.get(t) != when:
                heapq.heappop(heap)
                continue
            if not (
                when - t_last <= limit or rem[t] - rate[t] * (now - t_ref[t]) <= size[t] * 1e-12
            ):
                break
            heapq.heappop(heap)
            del due[t]  # a second entry of the same instant is stale now
            out.append(t)
        fin = np.array(sorted(out), dtype=np.int64)
        if len(fin):
            self._drop(fin, None)
        return fin

    def _drop(self, fin: np.ndarray, done: np.ndarray | None) -> None:
        """Remove the transfers ``fin`` (mask ``done`` over act in array mode) from the
        running set."""
        self.removed.append(fin)
        on = self._on_link
        if on is not None:
            ptr, links, running = self._py_ptr, self._py_links, self._running
            gone = 0
            for t in fin.tolist():
                running.discard(t)
                a, b = ptr[t], ptr[t + 1]
                for lk in links[a:b]:
                    on[lk].discard(t)
                gone += b - a
            self._gone_links += gone
            self._running_links -= gone
            self._stale = True
            return
        self.act = self.act[~done]
        gone = self._fmark
        gone[fin] = True
        keep = ~gone[self.act_owner]
        gone[fin] = False
        self._gone.append((self.act_links[~keep], self.act_owner[~keep]))
        self.act_links = self.act_links[keep]
        self.act_owner = self.act_owner[keep]

    def _settle(self) -> None:
        """Bring the running set up to date and recompute the rates that changed."""
        if not self.added and not self.removed:
            return
        seeds = np.concatenate(self.added + self.removed)
        new = np.concatenate(self.added) if self.added else np.zeros(0, dtype=np.int64)
        self.added, self.removed = [], []
        self._bookkeep(new)
        flows = self._component(seeds)
        if isinstance(flows, list):  # a few transfers: Python lists all the way
            if flows:
                self._settle_few(flows)
            return
        if not len(flows):
            return
        now = self.now
        self.rem[flows] -= self.rate[flows] * (now - self.t_ref[flows])
        self.t_ref[flows] = now
        rate = self._rates(flows)
        self.rate[flows] = rate
        fin = now + self.rem[flows] / rate
        self.fin[flows] = fin
        if self._on_link is not None:
            heap, due = self._heap, self._due
            for item in zip(fin.tolist(), flows.tolist(), strict=True):
                due[item[1]] = item[0]
                heapq.heappush(heap, item)
            if len(heap) > 2 * len(due) + _COMPACT:
                self._compact()

    def _settle_few(self, flows: list[int]) -> None:
        """As the rest of _settle, item by item: the same float operations on each transfer
        (remaining bytes brought up to now, the new rate, the finish instant), so the same
        results, without numpy's per-call cost on a few transfers."""
        self.rate_updates += 1
        level, self._one_level = self._one_level, None
        if level is not None:  # found with the component (_component_small)
            rates = [level] * len(flows)
        elif self.sharing == "maxmin":
            rates = self._maxmin_few(flows)
        else:
            rates = self._rates_arrays(np.array(flows, dtype=np.int64)).tolist()
        now = self.now
        rem, t_ref, rate, fin = self._rem_py, self._t_ref_py, self._rate_py, self._fin_py
        sets = self._on_link is not None
        heap, due, push = self._heap, self._due, heapq.heappush
        for t, r in zip(flows, rates, strict=True):
            left = rem[t] - rate[t] * (now - t_ref[t])
            rem[t] = left
            t_ref[t] = now
            rate[t] = r
            f = now + (left / r if r else _over_zero(left))
            fin[t] = f
            if sets:
                due[t] = f
                push(heap, (f, t))
        if sets and len(heap) > 2 * len(due) + _COMPACT:
            self._compact()

    def _compact(self) -> None:
        """Rebuild the heap of finish instants from the live ones: a flow whose rate changed
        leaves its old entry behind, and once those outnumber the live entries, heapify
        drops them in bulk, cheaper than popping each in turn. The pops that follow see the
        same live entries in the same order."""
        self._heap = [(f, t) for t, f in self._due.items()]
        heapq.heapify(self._heap)

    def _bookkeep(self, new: np.ndarray) -> None:
        """Add the transfers that started, and switch between set and array mode (see
        _BATCH): to arrays when this instant changes more than 1/_BATCH of the running
        transfers' links, back to sets after _CALM instants in a row with less than 1/(4
        _BATCH)."""
        on = self._on_link
        if on is not None:
            if len(new) <= _FEW:
                nlinks = self._nlinks_py
                new_links = sum([nlinks[t] for t in new.tolist()])
            else:
                new_links = int(self.nlinks[new].sum())
            changed = new_links + self._gone_links
            self._gone_links = 0
            running = self._running_links + new_links
            if changed * _BATCH > running:
                self._to_arrays()
                self._add_arrays(new)
                self._calm = 0
                return
            ptr, links, run = self._py_ptr, self._py_links, self._running
            for t in new.tolist():
                run.add(t)
                for lk in links[ptr[t] : ptr[t + 1]]:
                    on[lk].add(t)
            self._running_links = running
            if len(new):
                self._stale = True
            return
        self._add_arrays(new)
        gone, self._gone = self._gone, []
        changed = (int(self.nlinks[new].sum()) if len(new) else 0) + sum(len(g[0]) for g in gone)
        running = len(self.act_links)
        self._calm = self._calm + 1 if changed * 4 * _BATCH < running else 0
        if self._small_ok and self._calm >= _CALM:
            self._to_sets()

    def _add_arrays(self, new: np.ndarray) -> None:
        if not len(new):
            return
        lens = self.nlinks[new]
        self.act = np.concatenate([self.act, new])
        self.act_links = np.concatenate([self.act_links, self.links[_ranges(self.ptr[new], lens)]])
        self.act_owner = np.concatenate([self.act_owner, np.repeat(new, lens)])

    def _arrays(self) -> None:
        """In set mode: rebuild the running arrays from the sets if they moved since."""
        if self._on_link is None or not self._stale:
            return
        act = np.array(sorted(self._running), dtype=np.int64)
        lens = self.nlinks[act]
        self.act = act
        self.act_links = self.links[_ranges(self.ptr[act], lens)]
        self.act_owner = np.repeat(act, lens)
        self._stale = False

    def _to_arrays(self) -> None:
        self._arrays()
        self._on_link, self._heap, self._due, self._running = None, [], {}, set()
        self._running_links = self._gone_links = 0
        self._gone = []

    def _to_sets(self) -> None:
        on: dict[int, set[int]] = defaultdict(set)
        for lk, t in zip(self.act_links.tolist(), self.act_owner.tolist(), strict=True):
            on[lk].add(t)
        self._on_link = on
        self._running = set(self.act.tolist())
        self._running_links = len(self.act_links)
        self._heap = list(zip(self.fin[self.act].tolist(), self.act.tolist(), strict=True))
        heapq.heapify(self._heap)
        self._due = {t: f for f, t in self._heap}
        self._stale = False

    def _component(self, seeds: np.ndarray) -> list[int] | np.ndarray:
        """Running transfers connected to the links of ``seeds`` through shared links, in
        increasing order: a list when the link-by-link search found them, else an array."""
        if self._on_link is not None:
            found = self._component_small(seeds)
            self._searches += 1
            self._big += ((found is None) - self._big) / 256
            if self._searches >= 2048 and self._big > 0.75:
                self._small_ok = False  # numpy passes from now on
                self._to_arrays()
            if found is not None:
                return found
            self._arrays()
        return self._component_large(seeds)

    def _component_small(self, seeds: np.ndarray) -> list[int] | None:
        """As _component, link by link; None once it grows past the size _SMALL sets."""
        on, ptr, links = self._on_link, self._py_ptr, self._py_links
        stack: list[int] = []
        for t in seeds.tolist():
            stack.extend(links[ptr[t] : ptr[t + 1]])
        seen_l = set(stack)
        seen_f: set[int] = set()
        cap = _SMALL
        while stack:
            for t in on[stack.pop()]:
                if t not in seen_f:
                    seen_f.add(t)
                    for lk in links[ptr[t] : ptr[t + 1]]:
                        if lk not in seen_l:
                            seen_l.add(lk)
                            stack.append(lk)
            if len(seen_f) > cap:  # checked per link: at most one link's transfers late
                return None
        sums = self._w_sums
        if sums is not None and seen_f and self.sharing == "maxmin":
            # The first level of max-min filling from the links' transfer counts: if every
            # link's share is within the tolerance of the smallest, it is every rate.
            # The counts are of distinct transfers: they hold as loads only if no transfer
            # lists a link twice, i.e. the counts add up to the component's link entries.
            cap0, nlinks = self._py_cap0, self._nlinks_py
            counts = [(lk, c) for lk in seen_l if (c := len(on[lk]))]
            if sum([c for _, c in counts]) == sum([nlinks[t] for t in seen_f]):
                share = [cap0[lk] / sums[c] for lk, c in counts]
                level = min(share)
                if max(share) <= level * (1 + _REL):
                    self._one_level = level
        return sorted(seen_f)

    def _component_large(self, seeds: np.ndarray) -> np.ndarray:
        """As _component, by whole-array passes over the running transfers' links."""
        lmark, fmark = self._lmark, self._fmark
        al, ao = self.act_links, self.act_owner
        frontier = self.links[_ranges(self.ptr[seeds], self.nlinks[seeds])]
        touched = [frontier]
        lmark[frontier] = True
        count = 0  # transfers found, some maybe twice (that only ends the search sooner)
        whole = False
        while True:
            hit = ao[lmark[al]]
            new = hit[~fmark[hit]]
            if not len(new):
                break
            fmark[new] = True
            count += len(new)
            if 2 * count > len(self.act):  # most of the network: take all of it
                whole = True
                break
            nl = self.links[_ranges(self.ptr[new], self.nlinks[new])]
            nl = nl[~lmark[nl]]
            if not len(nl):
                break
            lmark[nl] = True
            touched.append(nl)
        for t in touched:
            lmark[t] = False
        if whole:
            fmark[self.act] = False
            return self.act
        out = self.act[fmark[self.act]]
        fmark[out] = False
        return out

    def _rates(self, act: np.ndarray) -> np.ndarray:
        """Rates of the transfers ``act``: whole connected components of the running set."""
        self.rate_updates += 1
        if len(act) <= _SMALL and self.sharing == "maxmin":
            return np.array(self._maxmin_few(act.tolist()))
        return self._rates_arrays(act)

    def _rates_arrays(self, act: np.ndarray) -> np.ndarray:
        """As _rates, by whole-array passes."""
        lens = self.nlinks[act]
        idx = _ranges(self.ptr[act], lens)
        L = self.links[idx]
        W = self.weights[idx]
        k = len(act)
        owner = np.repeat(np.arange(k), lens)
        # Links renumbered to those in use, to keep the arrays short.
        mark = self._lmark
        mark[L] = True
        used = np.flatnonzero(mark)
        mark[used] = False
        self._remap[used] = np.arange(len(used))
        Ll = self._remap[L]
        cap = self.cap[used].copy()
        nu = len(cap)
        if self.sharing == "proportional":
            load = np.bincount(Ll, weights=W, minlength=nu)
            starts = np.zeros(k, dtype=np.int64)
            np.cumsum(lens[:-1], out=starts[1:])
            return np.minimum.reduceat(cap[Ll] / load[Ll], starts)
        # Progressive filling.
        rate = np.empty(k)
        Wl, ol = W, owner
        share = np.empty(nu)
        while len(ol):
            load = np.bincount(Ll, weights=Wl, minlength=nu)
            share.fill(np.inf)
            np.divide(np.maximum(cap, 0.0), load, out=share, where=load > 0)
            s = share.min()
            hit_f = np.zeros(k, dtype=bool)
            hit_f[ol[share[Ll] <= s * (1 + _REL)]] = True
            rate[hit_f] = s
            gone = hit_f[ol]
            cap -= np.bincount(Ll[gone], weights=Wl[gone], minlength=nu) * s
            keep = ~gone
            Ll, Wl, ol = Ll[keep], Wl[keep], ol[keep]
        return rate

    @property
    def _py_weights(self) -> array:
        """The link weights for item access, made on first use (meshes seldom need them)."""
        if self._py_weights_items is None:
            self._py_weights_items = _items(self.weights, "d")
        return self._py_weights_items

    def _maxmin_few(self, flows: list[int]) -> list[float]:
        """As _rates' progressive filling, for a few transfers in Python lists (numpy's
        per-call cost dominates there). The same float operations in the same order as the
        array version (each link's load summed over its entries in transfer order, the
        capacity reduced by that sum times the level), so the rates are bit-identical.

        Most components fill in one level (a ring's links all equally loaded): when every
        link's share is within the tolerance of the smallest, every transfer gets it."""
        ptr, links, weights, cap0 = self._py_ptr, self._py_links, self._py_weights, self._py_cap0
        load: dict[int, float] = {}
        get = load.get
        for t in flows:
            for j in range(ptr[t], ptr[t + 1]):
                lk = links[j]
                load[lk] = get(lk, 0.0) + weights[j]
        share = [cap0[lk] / v if v > 0 else np.inf for lk, v in load.items()]
        s = min(share)
        if max(share) <= s * (1 + _REL):
            return [s] * len(flows)
        return self._maxmin_levels(flows)

    def _maxmin_levels(self, flows: list[int]) -> list[float]:
        """_maxmin_few's progressive filling, level by level."""
        ptr, links, weights = self._py_ptr, self._py_links, self._py_weights
        fl = [links[ptr[t] : ptr[t + 1]] for t in flows]
        fw = [weights[ptr[t] : ptr[t + 1]] for t in flows]
        rate = [0.0] * len(flows)
        left = range(len(flows))
        cap: dict[int, float] | None = None
        while True:
            load: dict[int, float] = {}
            get = load.get
            for i in left:
                for lk, w in zip(fl[i], fw[i], strict=True):
                    load[lk] = get(lk, 0.0) + w
            if cap is None:
                capacity = self._py_cap
                cap = {lk: capacity[lk] for lk in load}
            share = {lk: (max(cap[lk], 0.0) / v if v > 0 else np.inf) for lk, v in load.items()}
            s = min(share.values())
            bar = s * (1 + _REL)
            hit, rest = [], []
            for i in left:
                for lk in fl[i]:
                    if share[lk] <= bar:
                        hit.append(i)
                        break
                else:
                    rest.append(i)
            for i in hit:
                rate[i] = s
            if not rest:
                return rate
            used: dict[int, float] = {}
            get = used.get
            for i in hit:
                for lk, w in zip(fl[i], fw[i], strict=True):
                    used[lk] = get(lk, 0.0) + w
            for lk, w in used.items():
                cap[lk] -= w * s
            left = rest


def _ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Concatenation of arange(starts[i], starts[i] + lens[i])."""
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offs = np.cumsum(lens) - lens
    return np.arange(total, dtype=np.int64) - np.repeat(offs - starts, lens)


def _repeated_sums(sim: _FlowSim, most: int) -> list[float] | None:
    """[0, w, w + w, ...] up to ``most`` terms, summed one by one as bincount does, when every
    link weight of ``sim``'s transfers is the same w > 0; else None."""
    w = sim.weights
    if not len(w) or not w[0] > 0 or not (w == w[0]).all():
        return None
    sums = [0.0]
    for _ in range(max(most, 0) + 1):
        sums.append(sums[-1] + float(w[0]))
    return sums


def _over_zero(x: float) -> float:
    """``x / 0.0`` as numpy has it (Python raises): inf or -inf by the sign of x, nan for 0."""
    return np.inf if x > 0 else -np.inf if x < 0 else np.nan


def _shared(values: np.ndarray, code: str) -> tuple[array, np.ndarray]:
    """A copy of ``values`` in one buffer seen two ways: an ``array`` (typecode ``code``)
    whose items Python reads and writes as plain ints and floats, several times faster than
    a numpy array's, and a numpy view of the same memory for whole-array passes."""
    buf = _items(values, code)
    return buf, np.frombuffer(buf, dtype=np.dtype(code))


def _items(values: np.ndarray, code: str) -> array:
    """A copy of ``values`` as an ``array`` of typecode ``code`` ("d" float64, "q" int64)."""
    return array(code, np.ascontiguousarray(values, dtype=np.dtype(code)).tobytes())
