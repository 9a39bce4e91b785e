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
"""

from __future__ import annotations

import heapq
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
        self.need = np.bincount(a["dep_dst"], minlength=n).astype(np.int64)
        # Dependents in CSR form, one table per dependency kind (0 delivered, 1 sent).
        self.dep_tab = []
        for kind in (0, 1):
            sel = a["dep_kind"] == kind
            s, d = a["dep_src"][sel], a["dep_dst"][sel]
            order = np.argsort(s, kind="stable")
            ptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.bincount(s, minlength=n), out=ptr[1:])
            self.dep_tab.append((ptr, d[order]))
        self.start = np.full(n, np.nan)
        self.sent = np.full(n, np.nan)
        self.delivered = np.full(n, np.nan)
        # Per transfer: remaining bytes at t_ref (its last rate change), rate since, and the
        # projected instant its last byte leaves (inf while not running).
        self.rem = self.size.astype(float).copy()
        self.t_ref = np.zeros(n)
        self.rate = np.zeros(n)
        self.fin = np.full(n, np.inf)
        # Running transfers, and their links (act_links) with owners (act_owner), in step.
        self.act = np.zeros(0, dtype=np.int64)
        self.act_links = np.zeros(0, dtype=np.int64)
        self.act_owner = np.zeros(0, dtype=np.int64)
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
        # Per link, its running transfers, while small components are the rule (see _SMALL)
        # and transfers start and finish a few at a time (see _BATCH); None otherwise. Dropped
        # for good once most recent searches outgrew it (``_big``: their share, averaged over
        # the last ~256).
        self._on_link: list[set[int]] | None = [set() for _ in range(self.nl)]
        self._links_of: dict[int, list[int]] = {}  # per transfer, its links (Python ints)
        self._searches = 0
        self._big = 0.0
        self._calm = 0  # instants in a row with few changes, while _on_link is None
        self._small_ok = True  # False once searches mostly outgrow _SMALL
        self._gone: list[tuple[np.ndarray, np.ndarray]] = []  # (links, owners) finished

    # ---------------------------------------------------------------- bookkeeping
    def _grid(self, t):
        """Absolute time ``t`` rounded up to the time grid when resolution > 0."""
        if self.res <= 0:
            return t
        return np.maximum(np.ceil(t / self.res - 1e-9) * self.res, self.now)

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
        d = self.delay[tids]
        later = d > 0
        if later.any():
            self._at(self._grid(self.now + d[later]), tids[later], 0)
            tids = tids[~later]
        if len(tids):
            self._start(tids)

    def _start(self, tids: np.ndarray) -> None:
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
            act = self.act
            t_fin = float(self.fin[act].min()) if len(act) else np.inf
            due = float(self._grid(t_fin)) if len(act) else np.inf
            t_next = self.timed[0][0] if self.timed else np.inf
            if t_next == np.inf and due == np.inf:
                break
            now = self.now = min(t_next, due)
            self.events += 1
            if len(act):
                # Transfers due now finish together, within a relative tolerance of the time
                # since the last instant. Woken early by a timed event, nobody is due yet.
                elapsed = now - t_last
                ttf = self.fin[act] - t_last
                if elapsed < (due - t_last) * (1 - _REL) and now < due:
                    done = ttf <= elapsed
                else:
                    done = ttf <= elapsed * (1 + _REL) + 1e-15
                left = self.rem[act] - self.rate[act] * (now - self.t_ref[act])
                done |= left <= self.size[act] * 1e-12
                if done.any():
                    fin = act[done]
                    self.rem[fin] = 0.0
                    self.fin[fin] = np.inf
                    self._drop(fin, done)
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

    def _drop(self, fin: np.ndarray, done: np.ndarray) -> None:
        """Remove the transfers ``fin`` (mask ``done`` over act) from the running set."""
        self.act = self.act[~done]
        gone = self._fmark
        gone[fin] = True
        keep = ~gone[self.act_owner]
        gone[fin] = False
        self._gone.append((self.act_links[~keep], self.act_owner[~keep]))
        self.act_links = self.act_links[keep]
        self.act_owner = self.act_owner[keep]
        self.removed.append(fin)

    def _settle(self) -> None:
        """Bring the running set up to date and recompute the rates that changed."""
        if not self.added and not self.removed:
            return
        seeds = np.concatenate(self.added + self.removed)
        if self.added:
            new = np.concatenate(self.added)
            lens = self.nlinks[new]
            nl = self.links[_ranges(self.ptr[new], lens)]
            no = np.repeat(new, lens)
            self.act = np.concatenate([self.act, new])
            self.act_links = np.concatenate([self.act_links, nl])
            self.act_owner = np.concatenate([self.act_owner, no])
        else:
            nl = no = np.zeros(0, dtype=np.int64)
        self._bookkeep(nl, no)
        self.added, self.removed = [], []
        flows = self._component(seeds)
        if not len(flows):
            return
        now = self.now
        self.rem[flows] -= self.rate[flows] * (now - self.t_ref[flows])
        self.t_ref[flows] = now
        rate = self._rates(flows)
        self.rate[flows] = rate
        self.fin[flows] = now + self.rem[flows] / rate

    def _bookkeep(self, new_links: np.ndarray, new_owners: np.ndarray) -> None:
        """Bring the per-link sets up to date, or drop / rebuild them (see _BATCH)."""
        gone, self._gone = self._gone, []
        changed = len(new_links) + sum(len(g[0]) for g in gone)
        running = len(self.act_links)
        if self._on_link is None:
            self._calm = self._calm + 1 if changed * 4 * _BATCH < running else 0
            if not (self._small_ok and self._calm >= _CALM):
                return
            on: list[set[int]] = [set() for _ in range(self.nl)]
            for lk, t in zip(self.act_links.tolist(), self.act_owner.tolist(), strict=True):
                on[lk].add(t)
            self._on_link = on
            return
        if changed * _BATCH > running:
            self._on_link, self._links_of, self._calm = None, {}, 0
            return
        on = self._on_link
        for gl, go in gone:
            for lk, t in zip(gl.tolist(), go.tolist(), strict=True):
                on[lk].discard(t)
            for t in set(go.tolist()):
                self._links_of.pop(t, None)
        for lk, t in zip(new_links.tolist(), new_owners.tolist(), strict=True):
            on[lk].add(t)

    def _component(self, seeds: np.ndarray) -> np.ndarray:
        """Running transfers connected to the links of ``seeds`` through shared links."""
        if self._on_link is not None:
            found = self._component_small(seeds)
            self._searches += 1
            self._big += ((found is None) - self._big) / 256
            if self._searches >= 2048 and self._big > 0.75:
                self._small_ok = False  # numpy passes from now on
                self._on_link, self._links_of = None, {}
            if found is not None:
                return found
        return self._component_large(seeds)

    def _component_small(self, seeds: np.ndarray) -> np.ndarray | None:
        """As _component, link by link; None once it grows past the size _SMALL sets."""
        on, ptr, links, cache = self._on_link, self.ptr, self.links, self._links_of
        stack = self.links[_ranges(ptr[seeds], self.nlinks[seeds])].tolist()
        seen_l = set(stack)
        seen_f: set[int] = set()
        cap = _SMALL
        while stack:
            for t in on[stack.pop()]:
                if t in seen_f:
                    continue
                seen_f.add(t)
                if len(seen_f) > cap:
                    return None
                lt = cache.get(t)
                if lt is None:
                    lt = cache[t] = links[ptr[t] : ptr[t + 1]].tolist()
                for lk in lt:
                    if lk not in seen_l:
                        seen_l.add(lk)
                        stack.append(lk)
        return np.fromiter(seen_f, dtype=np.int64, count=len(seen_f))

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


def _ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Concatenation of arange(starts[i], starts[i] + lens[i])."""
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offs = np.cumsum(lens) - lens
    return np.arange(total, dtype=np.int64) - np.repeat(offs - starts, lens)
