"""Flow-level discrete-event network simulator (simpy) for schedules of chunked transfers.

Every running transfer has one rate, the same on all its links. Rates are recomputed whenever
transfers start or finish sending:

* ``maxmin`` (default): max-min fair sharing by progressive filling. All unfrozen flows grow
  together; a link that fills freezes the flows crossing it; repeat. A flow of kind k uses
  1/f_k of a switch output link's capacity per byte/s (f_k: the timing card's throughput
  fraction), so a slow switch datapath is a bottleneck like a slow link.
* ``proportional``: every link splits its capacity equally among the flows crossing it,
  each flow takes its smallest share, and capacity a flow cannot use is not redistributed.

Events (simpy): a transfer starts when its dependencies are met (fredfab.model.system.schedule);
its last byte leaves the sender when its remaining bytes reach zero ("sent"); it is delivered
its path latency later. Transfers finishing or starting at the same instant are handled as one
batch with numpy, so a ring step over 1,000 NPUs costs one rate computation, not 1,000.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import simpy

from fredfab.model.system.schedule import Schedule

SHARING = ("maxmin", "proportional")
_REL = 1e-9  # relative tolerance: transfers finishing within it finish together


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
        raise ValueError(f"sharing {sharing!r} unknown; use one of {SHARING}")
    if not (resolution >= 0 and np.isfinite(resolution)):
        raise ValueError(f"resolution must be >= 0 seconds, got {resolution}")
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
        self.nlinks = np.diff(self.ptr)
        self.need = np.zeros(n, dtype=np.int64)
        np.add.at(self.need, a["dep_dst"], 1)
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
        self.remaining = a["size"].astype(float).copy()
        self.rate = np.zeros(n)
        self.active = np.zeros(0, dtype=np.int64)
        self.new_active: list[np.ndarray] = []
        self.events = 0
        self.rate_updates = 0
        self._mark = np.zeros(self.nl, dtype=bool)
        self._remap = np.zeros(self.nl, dtype=np.int64)

    # ---------------------------------------------------------------- bookkeeping
    def run(self) -> NetResult:
        env = self.env = simpy.Environment()
        self.wake = env.event()
        env.process(self._network())
        env.run()
        if np.isnan(self.delivered).any():
            stuck = int(np.isnan(self.delivered).sum())
            raise RuntimeError(f"{stuck} transfers never ran: the schedule has a dependency cycle")
        return NetResult(self.start, self.sent, self.delivered, self.events, self.rate_updates)

    def _after(self, dt):
        """Delay from now to now + dt, rounded up to the time grid when resolution > 0."""
        if self.res <= 0:
            return dt
        now = self.env.now
        return np.maximum(np.ceil((now + dt) / self.res - 1e-9) * self.res - now, 0.0)

    def _poke(self) -> None:
        if not self.wake.triggered:
            self.wake.succeed()

    def _release(self, tids: np.ndarray, kind: int) -> None:
        ptr, dep = self.dep_tab[kind]
        lens = ptr[tids + 1] - ptr[tids]
        if not lens.any():
            return
        succ = dep[_ranges(ptr[tids], lens)]
        np.subtract.at(self.need, succ, 1)
        ready = succ[self.need[succ] == 0]
        if len(ready) > 1:
            ready = np.unique(ready)
        self._ready(ready)

    def _ready(self, tids: np.ndarray) -> None:
        if not len(tids):
            return
        d = self.a["delay"][tids]
        now = tids[d == 0]
        if len(now):
            self._start(now)
        later = tids[d > 0]
        if len(later):
            dl = d[d > 0]
            for val in np.unique(dl):
                grp = later[dl == val]
                self.env.timeout(self._after(val)).callbacks.append(
                    lambda _e, g=grp: self._start(g)
                )

    def _start(self, tids: np.ndarray) -> None:
        self.start[tids] = self.env.now
        instant = (self.remaining[tids] <= 0) | (self.nlinks[tids] == 0)
        if instant.any():
            self.remaining[tids[instant]] = 0.0
            self._on_sent(tids[instant])
        rest = tids[~instant]
        if len(rest):
            self.new_active.append(rest)
            self._poke()

    def _on_sent(self, tids: np.ndarray) -> None:
        self.sent[tids] = self.env.now
        self._release(tids, 1)
        lat = self.a["latency"][tids]
        zero = lat <= 0
        if zero.any():
            self._on_delivered(tids[zero])
        if not zero.all():
            tids, lat = tids[~zero], lat[~zero]
            when = self._after(lat)
            for val in np.unique(when):
                grp = tids[when == val]
                self.env.timeout(float(val)).callbacks.append(
                    lambda _e, g=grp: self._on_delivered(g)
                )

    def _on_delivered(self, tids: np.ndarray) -> None:
        self.delivered[tids] = self.env.now
        self._release(tids, 0)

    # ---------------------------------------------------------------- the network
    def _network(self):
        env = self.env
        self._ready(np.flatnonzero(self.need == 0))
        t_last = env.now
        dirty = False  # the active set changed since the rates were computed
        while True:
            if self.new_active:
                self.active = np.concatenate([self.active, *self.new_active])
                self.new_active = []
                dirty = True
            if dirty and len(self.active):
                # Once per instant: transfers that finish and the ones they release share
                # one rate computation (max-min depends only on the active set).
                self._rates()
            dirty = False
            if not len(self.active):
                self.wake = env.event()
                yield self.wake
                t_last = env.now
                self.events += 1
                continue
            act = self.active
            ttf = self.remaining[act] / self.rate[act]
            dt = float(self._after(ttf.min()))
            due = env.now + dt  # the float time the timeout fires at
            self.wake = env.event()
            yield env.timeout(dt) | self.wake
            self.events += 1
            elapsed = env.now - t_last
            t_last = env.now
            self.remaining[act] -= self.rate[act] * elapsed
            done = ttf <= elapsed * (1 + _REL) + 1e-15
            # Woken early by a start: nobody is due yet. A dt below the clock's resolution
            # leaves now unchanged when the timeout fires; that is not early (else a
            # transfer with a few bytes left would never finish).
            if elapsed < dt * (1 - _REL) and env.now < due:
                done &= ttf <= elapsed
            done |= self.remaining[act] <= self.a["size"][act] * 1e-12
            if done.any():
                fin = act[done]
                self.remaining[fin] = 0.0
                self.active = act[~done]
                dirty = True
                self._on_sent(fin)

    def _rates(self) -> None:
        self.rate_updates += 1
        act = self.active
        lens = self.nlinks[act]
        idx = _ranges(self.ptr[act], lens)
        L = self.a["links"][idx]
        W = self.a["weights"][idx]
        k = len(act)
        owner = np.repeat(np.arange(k), lens)
        nl = self.nl
        if self.sharing == "proportional":
            load = np.bincount(L, weights=W, minlength=nl)
            starts = np.zeros(k, dtype=np.int64)
            np.cumsum(lens[:-1], out=starts[1:])
            self.rate[act] = np.minimum.reduceat(self.cap[L] / load[L], starts)
            return
        # Progressive filling. On large fabrics links are renumbered to those in use, to
        # keep arrays short; on small ones the renumbering costs more than it saves.
        if self.nl > 4 * len(L):
            mark = self._mark
            mark[L] = True
            used = np.flatnonzero(mark)
            mark[used] = False
            self._remap[used] = np.arange(len(used))
            Ll = self._remap[L]
            cap = self.cap[used].copy()
        else:
            Ll = L
            cap = self.cap.copy()
        nu = len(cap)
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
        self.rate[act] = rate


def _ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Concatenation of arange(starts[i], starts[i] + lens[i])."""
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offs = np.cumsum(lens) - lens
    return np.arange(total, dtype=np.int64) - np.repeat(offs - starts, lens)
