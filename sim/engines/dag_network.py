"""The network under a DAG simulation: collectives launched at different times share links.

Communication launched while earlier communication is still running joins it in a
*cluster*: everything launched since the network was last idle, simulated together by the
flow-level simulator (fredfab.sim.engines.netsim) with each request starting at its own
offset. The simulator is causal (what finished before a request started cannot depend on
it), so each launch re-simulates its cluster and revises only the predictions of requests
still running. Requests that finished before every running one started leave the cluster
(they shared no link with those; what they did to finished requests that the running ones
met is then approximated, the only approximation of the scheme: without it a cluster
grows as long as the network is never idle). Runs are memoised by the cluster's requests
and offsets, so a periodic trace pays for each pattern once.

* A cluster launched all at one instant runs through ``simulate`` (fredfab.sim.engines
  .system): each request's algorithm is the fastest alone, as in ``fred collective``, and
  in-switch configurations that conflict run in successive batches.
* A cluster with offsets runs the same chosen plans in one schedule; in-switch conflicts
  between requests of different launches are not checked there (a note says when that
  happened on a fabric with in-switch collectives).
* Communication runs at the payload rate of the fabric's packets (as the training
  estimates: fredfab.model.training.packet_rate): the cluster is simulated in time dilated
  by the payload fraction f, so a request alone takes its simulated time / f.
* ``MAX_CLUSTER`` launches at most share one cluster; past it the next launch starts a
  new one (its requests then ignore the older ones' links; counted in ``notes``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from fredfab.model.system.algorithms import CollectiveRequest, build
from fredfab.model.system.fabric import Fabric
from fredfab.model.system.schedule import Schedule
from fredfab.sim.engines.algorithm_choice import choose
from fredfab.sim.engines.plan_run import RunOptions, run_with
from fredfab.sim.engines.system import simulate

#: Launches that share one cluster at most (each launch re-simulates its cluster).
MAX_CLUSTER = 64


@dataclass
class LinkUse:
    """Bytes per directed link, and per switch the bytes it reduced in the network."""

    link_bytes: np.ndarray
    reduced: dict[int, float] = field(default_factory=dict)


class Network:
    def __init__(
        self,
        fabric: Fabric,
        opts: RunOptions,
        payload: float = 1.0,
        forced: Callable[[CollectiveRequest], str | None] | None = None,
    ) -> None:
        """``forced(request)``: the algorithm to run it with (None: the fastest alone)."""
        self.fabric = fabric
        self.opts = opts
        self.payload = float(payload)
        self.forced = forced or (lambda r: None)
        self._cluster: list[tuple[int, tuple[CollectiveRequest, ...], float]] = []
        self._t0 = 0.0
        self._active: set[int] = set()
        self._ended: dict[int, float] = {}
        self._memo: dict[tuple, tuple[float, ...]] = {}
        self._use: dict[CollectiveRequest, LinkUse] = {}
        self.algorithms: dict[CollectiveRequest, str] = {}
        self.fallbacks: set[str] = set()
        self.notes: set[str] = set()
        self.runs = 0

    def launch(self, key: int, requests: Sequence[CollectiveRequest], t: float) -> dict[int, float]:
        """Launch ``requests`` (one sync event, ``key``) at ``t``; the predicted end of every
        event still running (this one included)."""
        live = [t_i for k, _, t_i in self._cluster if k in self._active]
        if not live:
            self._cluster = []  # nothing of it still runs: the network is idle for it
        else:
            # Forget what finished before every running request started: it met none of them.
            first = min(live)
            kept = [c for c in self._cluster if c[0] in self._active or self._ended[c[0]] > first]
            if len(kept) < len(self._cluster):
                self._cluster = kept
                self._t0 = min(t_i for _, _, t_i in kept)
        if len(self._cluster) >= MAX_CLUSTER:
            self.notes.add(
                f"more than {MAX_CLUSTER} communication events overlapped: later ones "
                "were simulated without the links of the earliest"
            )
            self._cluster = []
        if not self._cluster:
            self._t0 = t
        self._cluster.append((key, tuple(requests), t))
        self._active.add(key)
        f = self.payload
        sig = tuple((reqs, round((t_i - self._t0) * f, 15)) for _, reqs, t_i in self._cluster)
        ends = self._memo.get(sig)
        if ends is None:
            ends = self._memo[sig] = self._run(sig)
            self.runs += 1
        out = {}
        for (k, _, _), e in zip(self._cluster, ends, strict=True):
            if k in self._active:
                out[k] = self._t0 + e / f
        return out

    def finished(self, key: int, t: float) -> None:
        """Event ``key`` ended at ``t``."""
        self._active.discard(key)
        self._ended[key] = t

    def _run(self, sig: tuple) -> tuple[float, ...]:
        """Per launch of ``sig``, seconds (dilated) from the cluster's start to its end."""
        flat = [(i, r) for i, (reqs, _) in enumerate(sig) for r in reqs]
        forced = [self.forced(r) for _, r in flat]
        if all(off == 0 for _, off in sig) and not any(forced):
            res = simulate(
                self.fabric, [r for _, r in flat], chunks=self.opts.chunks, engine=self.opts.engine
            )
            self.fallbacks.update(res.fallbacks)
            ends = [0.0] * len(sig)
            for (i, r), rr in zip(flat, res.requests, strict=True):
                ends[i] = max(ends[i], rr.end)
                self.algorithms[r] = rr.algorithm
            return tuple(ends)
        sched = Schedule(self.fabric)
        offsets = []
        for j, (i, r) in enumerate(flat):
            c = choose(self.fabric, r, j, self.opts, algorithm=forced[j])
            self.fallbacks.update(c.fallbacks)
            self.algorithms[r] = c.plan.algorithm
            build(sched, c.plan, self.opts.chunks)
            offsets.append(sig[i][1])
            if c.plan.steps and self.fabric.has_fred_switches:
                self.notes.add(
                    "in-switch collectives launched at different times share the switches "
                    "without a check of their configurations"
                )
        a = sched.finalize()
        if not len(a["size"]):
            return tuple(off for _, off in sig)
        req = a["request"]
        roots = np.ones(len(req), dtype=bool)
        roots[a["dep_dst"]] = False
        a["delay"][roots] += np.asarray(offsets)[req[roots]]
        delivered, _ = run_with(sched, self.opts)
        done = np.full(len(flat), -np.inf)
        np.maximum.at(done, req, delivered)
        ends = [off for _, off in sig]
        for j, (i, _) in enumerate(flat):
            if np.isfinite(done[j]):
                ends[i] = max(ends[i], float(done[j]))
        return tuple(ends)

    def use(self, req: CollectiveRequest) -> LinkUse:
        """The bytes ``req`` moves over each link (its chosen algorithm's transfers), and
        what each switch reduces: where a tree flow's link leaves a switch fed by several
        of the flow's links, the bytes arriving on them (counted once per set of inputs,
        however many copies the switch sends on)."""
        hit = self._use.get(req)
        if hit is None:
            fab = self.fabric
            c = choose(fab, req, 0, self.opts, algorithm=self.forced(req))
            sched = Schedule(fab)
            build(sched, c.plan, self.opts.chunks)
            a = sched.finalize()
            lens = np.diff(a["ptr"])
            owner = np.repeat(np.arange(len(lens)), lens)
            size = np.asarray(a["size"])[owner] if len(owner) else np.zeros(0)
            lb = np.bincount(a["links"], weights=size, minlength=len(fab.links))
            reduced: dict[int, float] = {}
            reducing = req.op in ("all-reduce", "reduce", "reduce-scatter", "io-reduce")
            if reducing and sched.tree_preds:
                for tid, preds in sched.tree_preds.items():
                    lk = a["links"][a["ptr"][tid] : a["ptr"][tid + 1]]
                    merged = set()  # (switch, its inputs): summed once, however many copies
                    for i, feed in enumerate(preds):
                        v = int(fab.link_src[lk[i]])
                        if len(feed) > 1 and fab.nodes[v].kind == "switch":
                            merged.add((v, tuple(sorted(feed))))
                    for v, feed in merged:
                        reduced[v] = reduced.get(v, 0.0) + len(feed) * float(a["size"][tid])
            hit = self._use[req] = LinkUse(lb, reduced)
        return hit
