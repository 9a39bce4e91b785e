"""Brute-force packet-level model of a schedule, to cross-check the flow-level simulator.

Small fabrics only (it handles every packet on every link). Each transfer is cut into packets
of ``packet_bytes``; a packet crosses each link of its transfer store-and-forward, taking
bytes / bandwidth on the link and then the hop latency (wire + pipeline of the switch it
leaves). In a tree flow a packet may enter a link once it has arrived on every link feeding it
(a switch reduces packet k of all its inputs, or copies it to all its outputs).

Links serve the packets waiting for them round-robin over transfers, one packet at a time;
credit-based backpressure (paper §5.4) allows at most a credit window of
packets of a transfer between entering a link and entering every link it feeds. The window is
the link's buffer, sized as the paper sizes it: link bandwidth x round trip (``credit_window``).
Together these approximate max-min fair sharing. Dependencies between transfers mean the same
as in the flow model: "sent" when the last packet has entered every first link of the
transfer, "delivered" when it has arrived at the end of every last link.
"""

from __future__ import annotations

import heapq
import math
from collections import deque

import numpy as np

from fredfab.model.errors import InputError
from fredfab.model.system.schedule import Schedule

#: Fewest packets a link buffer holds: one being received while one is forwarded.
MIN_WINDOW = 2


def credit_window(
    bandwidth: np.ndarray, hop_latency: np.ndarray, packet_bytes: float
) -> np.ndarray:
    """Credit window (packets) per link: link bandwidth x round trip of the credit loop.

    The loop, as this model runs it: a packet is serialised onto the link (packet_bytes /
    bandwidth), crosses the wire and the next switch's pipeline (hop latency), enters the next
    link and frees its slot, whose credit the sender sees at once. A sender streaming at line
    rate has bandwidth x round trip bytes in that loop; a smaller buffer stalls it (24 KB at
    3 TB/s and 15 ns hop latency holds half of the ~49 KB loop, one 4 KB packet's serialisation
    plus 45 KB in flight: half the line rate).
    A real credit also crosses the wire back, which a hardware buffer must add on top.
    """
    bandwidth = np.asarray(bandwidth, dtype=float)
    rtt = packet_bytes / bandwidth + np.asarray(hop_latency, dtype=float)
    need = np.ceil(bandwidth * rtt / packet_bytes - 1e-9).astype(np.int64)
    return np.maximum(need, MIN_WINDOW)


def run_packets(
    schedule: Schedule, packet_bytes: float = 4096, buffer_packets: int | None = None
) -> np.ndarray:
    """Delivery time of every transfer of ``schedule`` (seconds).

    ``buffer_packets`` fixes every link's credit window; None (default) sizes each link's
    window from its bandwidth x round trip (credit_window).
    """
    if packet_bytes <= 0 or (buffer_packets is not None and buffer_packets < 1):
        raise InputError("packet_bytes must be > 0 and buffer_packets >= 1")
    f = schedule.fabric
    if buffer_packets is None:
        window = credit_window(f.bandwidth, f.hop_latency, float(packet_bytes))
    else:
        window = np.full(len(f.bandwidth), int(buffer_packets), dtype=np.int64)
    return _PacketSim(schedule, float(packet_bytes), window).run()


class _PacketSim:
    def __init__(self, sched: Schedule, pkt: float, window: np.ndarray) -> None:
        a = sched.finalize()
        f = sched.fabric
        self.a, self.f = a, f
        self.window = window.tolist()
        n = len(a["size"])
        self.n = n
        self.bw = f.bandwidth
        self.hop = f.hop_latency
        self.weights = a["weights"]
        # Streams: one per (transfer, link entry).
        self.t_links: list[np.ndarray] = []
        self.preds: list[tuple[tuple[int, ...], ...]] = []
        self.succs: list[list[list[int]]] = []
        self.npk = np.zeros(n, dtype=np.int64)
        self.pk_size: list[float] = []
        for t in range(n):
            links = sched.links_of(t)
            preds = sched.preds_of(t)
            succ: list[list[int]] = [[] for _ in links]
            for i, ps in enumerate(preds):
                for p in ps:
                    succ[p].append(i)
            self.t_links.append(links)
            self.preds.append(preds)
            self.succs.append(succ)
            size = float(a["size"][t])
            self.npk[t] = max(1, math.ceil(size / pkt - 1e-9)) if size > 0 else 0
            self.pk_size.append(size / self.npk[t] if self.npk[t] else 0.0)
        self.need = np.zeros(n, dtype=np.int64)
        np.add.at(self.need, a["dep_dst"], 1)
        self.dependents: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        for s, d, k in zip(a["dep_src"], a["dep_dst"], a["dep_kind"], strict=True):
            self.dependents[int(s)].append((int(d), int(k)))
        self.started = np.zeros(n, dtype=bool)
        self.delivered = np.full(n, np.nan)
        # Per stream state.
        self.entered: list[list[int]] = [[0] * len(ls) for ls in self.t_links]
        self.arrived: list[list[int]] = [[0] * len(ls) for ls in self.t_links]
        self.src_left = [sum(1 for p in ps if not p) for ps in self.preds]
        self.sink_left = [sum(1 for s in ss if not s) for ss in self.succs]
        nl = len(self.bw)
        self.link_busy = [False] * nl
        self.link_streams: list[deque[tuple[int, int]]] = [deque() for _ in range(nl)]
        self.heap: list = []
        self.seq = 0

    def push(self, t: float, kind: int, data) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, data))

    def run(self) -> np.ndarray:
        for t in np.flatnonzero(self.need == 0):
            self.ready(int(t), 0.0)
        while self.heap:
            now, _, kind, data = heapq.heappop(self.heap)
            if kind == 0:  # transfer starts
                self.start(data, now)
            elif kind == 3:  # an empty transfer is delivered
                self.delivered[data] = now
                self.finish(data, 0, now)
            elif kind == 1:  # link finished sending a packet
                link, (t, i) = data
                self.link_busy[link] = False
                self.push(now + self.hop[link], 2, (t, i))
                self.serve(link, now)
            else:  # packet arrived at the end of stream (t, i)
                t, i = data
                self.arrived[t][i] += 1
                if self.arrived[t][i] == self.npk[t] and not self.succs[t][i]:
                    self.sink_left[t] -= 1
                    if self.sink_left[t] == 0:
                        self.delivered[t] = now
                        self.finish(t, 0, now)
                for s in self.succs[t][i]:
                    self.serve(int(self.t_links[t][s]), now)
        if np.isnan(self.delivered).any():
            raise RuntimeError("packet model: some transfers never completed (dependency cycle)")
        return self.delivered

    def ready(self, t: int, now: float) -> None:
        self.push(now + float(self.a["delay"][t]), 0, t)

    def start(self, t: int, now: float) -> None:
        self.started[t] = True
        if self.npk[t] == 0 or not len(self.t_links[t]):
            self.finish(t, 1, now)
            self.push(now + float(self.a["latency"][t]), 3, t)
            return
        for i, lk in enumerate(self.t_links[t]):
            self.link_streams[int(lk)].append((t, i))
        for lk in self.t_links[t]:
            self.serve(int(lk), now)

    def finish(self, t: int, kind: int, now: float) -> None:
        for d, k in self.dependents[t]:
            if k == kind:
                self.need[d] -= 1
                if self.need[d] == 0:
                    self.ready(d, now)

    def eligible(self, t: int, i: int) -> bool:
        k = self.entered[t][i]
        if k >= self.npk[t]:
            return False
        for p in self.preds[t][i]:
            if self.arrived[t][p] <= k:
                return False
        buf = self.window[int(self.t_links[t][i])]
        return all(self.entered[t][s] > k - buf for s in self.succs[t][i])

    def serve(self, link: int, now: float) -> None:
        if self.link_busy[link]:
            return
        q = self.link_streams[link]
        for _ in range(len(q)):
            t, i = q[0]
            q.rotate(-1)
            if self.entered[t][i] >= self.npk[t]:
                q.pop()  # rotated to the back: drop the finished stream
                continue
            if self.eligible(t, i):
                self.entered[t][i] += 1
                self.link_busy[link] = True
                w = self.weights[self.a["ptr"][t] + i]
                self.push(now + self.pk_size[t] * w / self.bw[link], 1, (link, (t, i)))
                if self.entered[t][i] == self.npk[t] and not self.preds[t][i]:
                    self.src_left[t] -= 1
                    if self.src_left[t] == 0:
                        self.finish(t, 1, now + self.pk_size[t] * w / self.bw[link])
                for p in self.preds[t][i]:  # credit returned upstream
                    self.serve(int(self.t_links[t][p]), now)
                return
