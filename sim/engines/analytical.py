"""ASTRA-sim's two analytical network backends, run on our schedules of transfers.

ASTRA-sim 2.x ships two analytical networks (github.com/astra-sim/astra-network-analytical),
which differ from our flow-level simulator (fredfab.sim.engines.netsim, cut-through with
max-min fair sharing) on purpose:

* ``congestion-unaware`` (congestion_unaware/basic-topology/BasicTopology.cpp,
  ``compute_communication_delay``): a message takes hops x latency + size / bandwidth,
  whatever else is in flight: links are never shared. Here: size / (the slowest link of
  its route, in capacity units) plus the route's latency (link and switch hops).
* ``congestion-aware`` (congestion_aware/network/Link.cpp): a message crosses its route
  store and forward, link by link; each link serves the messages waiting for it one at a
  time in arrival order (FIFO), busy for size / bandwidth, the message arriving at the next
  device latency later. Here: the same per link of each transfer, a tree flow's link
  starting once the links feeding it have delivered.

Dependencies between transfers mean what they mean in netsim: "sent" when the last byte has
left the sender (the first hop done), "delivered" when it has arrived at every end. What
differs from ASTRA-sim: a route here crosses every dimension it must (the congestion-unaware
backend costs a message between NPUs that differ in several dimensions on the first such
dimension only, MultiDimTopology::get_dim_to_transfer), and a switch's timing card applies
where the fabric has FRED switches.
"""

from __future__ import annotations

import heapq
from collections import deque

import numpy as np

from fredfab.model.errors import InputError
from fredfab.model.system.schedule import Schedule
from fredfab.sim.engines.netsim import NetResult

MODELS = ("congestion-unaware", "congestion-aware")


def run_analytical(schedule: Schedule, model: str) -> NetResult:
    """Simulate ``schedule`` with ASTRA-sim's analytical backend ``model`` (MODELS)."""
    if model not in MODELS:
        raise InputError(f"network model {model!r} unknown; use one of {MODELS}")
    return _Analytical(schedule, model == "congestion-aware").run()


class _Analytical:
    def __init__(self, sched: Schedule, aware: bool) -> None:
        a = sched.finalize()
        self.sched, self.a, self.aware = sched, a, aware
        fab = sched.fabric
        self.bw = fab.bandwidth
        self.hop = fab.hop_latency
        n = len(a["size"])
        self.n = n
        self.need = np.bincount(a["dep_dst"], minlength=n).astype(np.int64)
        self.succ: list[list[list[int]]] = [[[] for _ in range(n)] for _ in (0, 1)]
        for s, d, k in zip(
            a["dep_src"].tolist(), a["dep_dst"].tolist(), a["dep_kind"].tolist(), strict=True
        ):
            self.succ[k][s].append(d)
        self.start = np.full(n, np.nan)
        self.sent = np.full(n, np.nan)
        self.delivered = np.full(n, np.nan)
        self.heap: list = []
        self.seq = 0
        self.events = 0
        # congestion-aware state
        self.link_busy = np.zeros(len(self.bw), dtype=bool)
        self.queue: dict[int, deque] = {}
        self.left_first: dict[int, int] = {}  # transfer -> first hops still serialising
        self.left_last: dict[int, int] = {}  # transfer -> last hops still to arrive
        self.waiting: dict[tuple[int, int], int] = {}  # (transfer, hop) -> feeders left
        self.hop_info: dict[int, tuple] = {}

    def _push(self, t: float, kind: int, x: int, y: int = 0) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, x, y))

    # kinds: 0 start transfer x; 1 transfer x sent; 2 transfer x delivered;
    # 3 link x free; 4 hop y of transfer x arrived
    def run(self) -> NetResult:
        a = self.a
        for t in np.flatnonzero(self.need == 0).tolist():
            self._push(float(a["delay"][t]), 0, t)
        while self.heap:
            now, _, kind, x, y = heapq.heappop(self.heap)
            self.events += 1
            if kind == 0:
                self._begin(x, now)
            elif kind == 1:
                self.sent[x] = now
                self._release(x, 1, now)
            elif kind == 2:
                self.delivered[x] = now
                self._release(x, 0, now)
            elif kind == 3:
                self.link_busy[x] = False
                q = self.queue.get(x)
                if q:
                    self._serve(x, *q.popleft(), now)
            else:
                self._arrived(x, y, now)
        if np.isnan(self.delivered).any():
            stuck = int(np.isnan(self.delivered).sum())
            raise RuntimeError(f"{stuck} transfers never ran: the schedule has a dependency cycle")
        return NetResult(self.start, self.sent, self.delivered, self.events, 0)

    def _release(self, t: int, kind: int, now: float) -> None:
        for d in self.succ[kind][t]:
            self.need[d] -= 1
            if self.need[d] == 0:
                self._push(now + float(self.a["delay"][d]), 0, d)

    def _begin(self, t: int, now: float) -> None:
        a = self.a
        self.start[t] = now
        links = a["links"][a["ptr"][t] : a["ptr"][t + 1]]
        size = float(a["size"][t])
        if not len(links) or size <= 0:
            self._push(now, 1, t)
            self._push(now + (float(a["latency"][t]) if len(links) else 0.0), 2, t)
            return
        w = a["weights"][a["ptr"][t] : a["ptr"][t + 1]]
        if not self.aware:
            serial = size * float(np.max(w / self.bw[links]))
            self._push(now + serial, 1, t)
            self._push(now + serial + float(a["latency"][t]), 2, t)
            return
        preds = self.sched.preds_of(t)
        feeds = [0] * len(links)
        for pr in preds:
            for j in pr:
                feeds[j] += 1
        firsts = [i for i, pr in enumerate(preds) if not pr]
        lasts = [i for i in range(len(links)) if feeds[i] == 0]
        self.hop_info[t] = (links, w, preds, size)
        self.left_first[t] = len(firsts)
        self.left_last[t] = len(lasts)
        for i, pr in enumerate(preds):
            if pr:
                self.waiting[t, i] = len(pr)
        for i in firsts:
            self._want(t, i, now)

    def _want(self, t: int, i: int, now: float) -> None:
        links = self.hop_info[t][0]
        lk = int(links[i])
        if self.link_busy[lk]:
            self.queue.setdefault(lk, deque()).append((t, i))
        else:
            self._serve(lk, t, i, now)

    def _serve(self, lk: int, t: int, i: int, now: float) -> None:
        links, w, preds, size = self.hop_info[t]
        serial = size * float(w[i]) / float(self.bw[lk])
        self.link_busy[lk] = True
        self._push(now + serial, 3, lk)
        self._push(now + serial + float(self.hop[lk]), 4, t, i)
        if not preds[i]:
            self.left_first[t] -= 1
            if self.left_first[t] == 0:
                self._push(now + serial, 1, t)

    def _arrived(self, t: int, i: int, now: float) -> None:
        links, _, preds, _ = self.hop_info[t]
        fed = [j for j, pr in enumerate(preds) if i in pr]
        for j in fed:
            self.waiting[t, j] -= 1
            if self.waiting[t, j] == 0:
                self._want(t, j, now)
        if not fed:
            self.left_last[t] -= 1
            if self.left_last[t] == 0:
                self._push(now, 2, t)
