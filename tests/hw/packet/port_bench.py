"""Amaranth-simulator harness for one packet-mode input port (hw/packet/input_port.py).

One testbench steps every cycle through the same order, so a run is reproducible from its
seed: the control unit decides on the heads it sees, the sender puts one link flit on
``rx``, the consumers of ``o`` and ``ctrl`` choose ready, then the cycle's transfers and
credit pulses are recorded.

- Senders: ``ScriptSender`` plays a fixed list of flits (directed tests); ``WindowSender``
  plays fixed packets' flits, each packet started only with a credit of its VC;
  ``CreditSender`` plays an NPU: it starts a packet on a VC only while it holds a credit
  for it, interleaves the VCs at random, and drops or corrupts flits as told.
- ``Controller``: commits or discards the heads it sees at random, and commits a second VC
  only once ``busy`` has fallen (at most one VC streams at a time, the port's assumption).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from amaranth.sim import Simulator

from fredfab.hw.packet.input_port import InputPort
from fredfab.hw.packet.params import PacketParams
from fredfab.model.packet.format import (
    DATA_VCS,
    KIND_ACK,
    N_VCS,
    PKT_BITS,
    VC_CTRL,
    Header,
    LinkFlit,
    PacketFormat,
)
from fredfab.model.packet.link import tail_timeout

# -- packets and their link flits -------------------------------------------------------


@dataclass(frozen=True)
class Packet:
    """A packet as its sender means it: a data packet has ``packet_flits`` payload words
    after its header flit; a control packet has none."""

    header: Header
    payload: tuple[int, ...] = ()
    #: bits of the head flit's data above the header, which the port must ignore
    head_pad: int = 0

    @property
    def vc(self) -> int:
        return self.header.vc


def data_packet(rng: np.random.Generator, params: PacketParams, vc: int, seq: int) -> Packet:
    width = params.switch.data_width
    header = Header(
        vc=vc,
        index=int(rng.integers(0, 1 << 10)),
        seq=seq,
        src=int(rng.integers(0, 64)),
        dst=int(rng.integers(0, 64)),
    )
    payload = tuple(_word(rng, width) for _ in range(params.fmt.packet_flits))
    return Packet(header, payload, _word(rng, width - 48) << 48)


def ctrl_packet(rng: np.random.Generator, seq: int) -> Packet:
    return Packet(Header(vc=VC_CTRL, kind=KIND_ACK, seq=seq, src=int(rng.integers(0, 64))))


def _word(rng: np.random.Generator, bits: int) -> int:
    return int.from_bytes(rng.bytes((bits + 7) // 8), "little") & ((1 << bits) - 1)


#: The link of every port these tests build (64-bit flits: CRC-8).
LINK = PacketFormat().link(64)


def link_flits(packet: Packet, pkt: int) -> list[LinkFlit]:
    """The packet's flits on the link, with good CRCs; ``pkt``, the sender's packet counter
    of the VC, on every flit."""
    words = [packet.header.to_bits() | packet.head_pad, *packet.payload]
    n = len(words)
    return [
        LINK.flit(w, head=k == 0, last=k == n - 1, vc=packet.vc, pkt=pkt)
        for k, w in enumerate(words)
    ]


def corrupt(flit: LinkFlit, bit: int) -> LinkFlit:
    """One data bit flipped, CRC kept: a CRC-8 catches every single-bit error."""
    return replace(flit, data=flit.data ^ (1 << bit))


# -- what a run records -----------------------------------------------------------------


@dataclass(frozen=True)
class OutFlit:
    data: int
    last: int
    bad: int
    seq: int
    src: int


@dataclass
class Record:
    out: list[OutFlit] = field(default_factory=list)
    ctrl: list[Header] = field(default_factory=list)
    #: (cycle, vc) of every credit pulse
    credits: list[tuple[int, int]] = field(default_factory=list)
    #: (vc, header, "commit" | "discard") for every head the control unit decided on
    decided: list[tuple[int, Header, str]] = field(default_factory=list)
    #: (cycle, vc) of every commit
    commits: list[tuple[int, int]] = field(default_factory=list)
    #: cycle at which each flit left ``o``
    out_cycles: list[int] = field(default_factory=list)
    #: per cycle: ``busy``, and the data VCs whose head showed
    busy: list[bool] = field(default_factory=list)
    shown: list[set[int]] = field(default_factory=list)
    overflow: bool = False
    cycles: int = 0
    #: (cycle, flit) of every flit put on ``rx``
    rx: list[tuple[int, LinkFlit]] = field(default_factory=list)

    def credits_of(self, vc: int) -> int:
        return sum(1 for _, v in self.credits if v == vc)

    def packets(self, packet_flits: int) -> list[list[OutFlit]]:
        out = self.out
        return [out[k : k + packet_flits] for k in range(0, len(out), packet_flits)]


# -- senders ----------------------------------------------------------------------------


class ScriptSender:
    """Sends ``flits`` in order, one per cycle (``None`` = an idle cycle); no credit check."""

    def __init__(self, flits: list[LinkFlit | None]) -> None:
        self.flits = list(flits)

    def next(self, credits: list[int]) -> LinkFlit | None:
        return self.flits.pop(0) if self.flits else None

    @property
    def done(self) -> bool:
        return not self.flits


class WindowSender:
    """Sends each packet's given flits in order, one per cycle, starting a packet only while
    it holds a credit of its VC (the flits' ``vc``; a packet whose flits were all lost still
    spends one). A sender that loses credits for good never finishes."""

    def __init__(self, packets: list[tuple[int, list[LinkFlit]]]) -> None:
        self.packets = [(vc, list(flits)) for vc, flits in packets]
        self.current: list[LinkFlit] = []

    def next(self, credits: list[int]) -> LinkFlit | None:
        while not self.current and self.packets and credits[self.packets[0][0]] > 0:
            vc, self.current = self.packets.pop(0)
            credits[vc] -= 1
        return self.current.pop(0) if self.current else None

    @property
    def done(self) -> bool:
        return not self.packets and not self.current


@dataclass
class Sent:
    """A packet as it went on the link: the flits that were not dropped."""

    packet: Packet
    flits: list[LinkFlit]
    intact: bool  # every flit sent, in time, none corrupted


class CreditSender:
    """An NPU obeying credits: ``queues[vc]`` are the packets to send on each VC.

    A packet's flits go out in order; flits of different VCs interleave at random. Each
    flit is dropped with probability ``drop`` and corrupted with probability ``flip``,
    except in each VC's last packet, which is kept intact so that every credit comes back
    by the end of the stream. The head flit of a packet sent with the VC's last credit is
    never dropped: the credits of packets lost whole come back only through the ``pkt`` of
    a later flit that counts them, so losing a whole window (the first packet lost whole,
    the others their heads) would leave the sender without credits for good.

    A conforming sender never leaves ``tail_timeout`` cycles between two flits of a
    packet: a packet's next flit goes out, whatever else is chosen, once ``max_gap`` (half
    the timeout) cycles have passed since its previous one. Except, with probability
    ``late`` after each flit of a packet that is not its VC's last, when the rest of the
    packet is held for longer than the timeout: it arrives late (the packet is not
    intact)."""

    def __init__(
        self,
        params: PacketParams,
        queues: dict[int, list[Packet]],
        rng: np.random.Generator,
        idle: float = 0.0,
        drop: float = 0.0,
        flip: float = 0.0,
        late: float = 0.0,
    ) -> None:
        self.rng = rng
        self.idle = idle
        self.width = params.switch.data_width
        self.queues = {vc: list(q) for vc, q in queues.items()}
        self.counter = [0] * N_VCS
        self.current: dict[int, list[LinkFlit]] = {}
        self.faulty: dict[int, bool] = {}  # the current packet is not its VC's last
        self.sent: list[Sent] = []
        self.drop, self.flip = drop, flip
        self.late = late
        self.timeout = tail_timeout(params.fmt)
        self.max_gap = self.timeout // 2
        self.cycle = 0
        self.last_flit = [0] * N_VCS  # cycle of each VC's previous flit
        self.resume = [0] * N_VCS  # a held packet's next flit goes out from this cycle

    def _start(self, vc: int, keep_head: bool) -> None:
        packet = self.queues[vc].pop(0)
        flits = link_flits(packet, self.counter[vc])
        self.counter[vc] = (self.counter[vc] + 1) % (1 << PKT_BITS)
        faulty = bool(self.queues[vc])  # the VC's last packet stays intact
        kept, intact = [], True
        for flit in flits:
            if faulty and not (keep_head and flit.head) and self.rng.random() < self.drop:
                intact = False
                continue
            if faulty and self.rng.random() < self.flip:
                flit = corrupt(flit, int(self.rng.integers(0, self.width)))
                intact = False
            kept.append(flit)
        self.sent.append(Sent(packet, list(kept), intact))
        self.current[vc] = kept
        self.faulty[vc] = faulty

    def next(self, credits: list[int]) -> LinkFlit | None:
        cycle, self.cycle = self.cycle, self.cycle + 1
        overdue = [
            vc
            for vc, flits in self.current.items()
            if flits and cycle - self.last_flit[vc] >= self.max_gap and cycle >= self.resume[vc]
        ]
        if overdue:
            return self._send(overdue[0], cycle)
        if self.rng.random() < self.idle:
            return None
        while True:
            ready = [vc for vc, flits in self.current.items() if flits and cycle >= self.resume[vc]]
            ready += [
                vc
                for vc, q in self.queues.items()
                if q and credits[vc] > 0 and not self.current.get(vc)
            ]
            if not ready:
                return None
            vc = ready[int(self.rng.integers(0, len(ready)))]
            if not self.current.get(vc):
                credits[vc] -= 1
                self._start(vc, keep_head=credits[vc] == 0)
                if not self.current[vc]:  # every flit dropped: try again
                    continue
            return self._send(vc, cycle)

    def _send(self, vc: int, cycle: int) -> LinkFlit:
        self.last_flit[vc] = cycle
        flit = self.current[vc].pop(0)
        if self.current[vc] and self.faulty[vc] and self.rng.random() < self.late:
            self.resume[vc] = cycle + self.timeout + 1 + int(self.rng.integers(0, self.timeout))
            sent = next(s for s in reversed(self.sent) if s.packet.vc == vc)
            sent.intact = False
        return flit

    @property
    def done(self) -> bool:
        return not any(self.queues.values()) and not any(self.current.values())


# -- control unit -----------------------------------------------------------------------


class Controller:
    """Decides on heads: each cycle a shown head is discarded with probability
    ``p_discard``, else committed with probability ``p_commit`` if no other VC may still
    be streaming: one commit per cycle, and a VC other than the last committed one only
    once ``busy`` is low (and was not just about to rise). The tests check the result on
    ``o``: whole packets, in commit order."""

    def __init__(self, rng: np.random.Generator, p_commit: float = 1.0, p_discard: float = 0.0):
        self.rng = rng
        self.p_commit, self.p_discard = p_commit, p_discard
        self.owner: int | None = None  # the VC whose committed packets may be in flight
        self.just_committed = False

    def decide(self, shown: dict[int, bool], busy: bool) -> tuple[list[int], list[int]]:
        if not busy and not self.just_committed:
            self.owner = None
        commit, discard = [], []
        for vc in DATA_VCS:
            if not shown[vc]:
                continue
            if self.rng.random() < self.p_discard:
                discard.append(vc)
            elif not commit and self.owner in (None, vc) and self.rng.random() < self.p_commit:
                commit.append(vc)
                self.owner = vc
        self.just_committed = bool(commit)
        return commit, discard


# -- the run ----------------------------------------------------------------------------


def run_port(
    params: PacketParams,
    sender,
    controller: Controller,
    seed: int = 0,
    stall: float = 0.0,
    ctrl_stall: float = 0.0,
    max_cycles: int = 20000,
    settle: int = 40,
) -> Record:
    """Run until the sender is done, no head waits, nothing is busy and ``settle`` quiet
    cycles have passed (or ``max_cycles``); return what the port did."""
    dut = InputPort(params)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    rng = np.random.default_rng(seed)
    rec = Record()
    credits = [params.fmt.data_depth] * len(DATA_VCS) + [params.fmt.ctrl_depth]

    async def bench(ctx) -> None:
        quiet = 0
        for cycle in range(max_cycles):
            shown = {vc: bool(ctx.get(dut.head[vc].valid)) for vc in DATA_VCS}
            busy = bool(ctx.get(dut.busy))
            rec.busy.append(busy)
            rec.shown.append({vc for vc, s in shown.items() if s})
            commit, discard = controller.decide(shown, busy)
            for vc, what in [(v, "commit") for v in commit] + [(v, "discard") for v in discard]:
                header = Header.from_bits(ctx.get(dut.head[vc].header).as_bits())
                rec.decided.append((vc, header, what))
            rec.commits += [(cycle, vc) for vc in commit]
            ctx.set(dut.commit, sum(1 << vc for vc in commit))
            ctx.set(dut.discard, sum(1 << vc for vc in discard))

            flit = sender.next(credits)
            if flit is not None:
                rec.rx.append((cycle, flit))
            ctx.set(dut.rx.valid, flit is not None)
            ctx.set(dut.rx.payload.as_value(), params.link.encode(flit) if flit else 0)

            o_ready = bool(rng.random() >= stall)
            c_ready = bool(rng.random() >= ctrl_stall)
            ctx.set(dut.o.ready, o_ready)
            ctx.set(dut.ctrl.ready, c_ready)
            if o_ready and ctx.get(dut.o.valid):
                p = ctx.get(dut.o.payload)
                rec.out.append(OutFlit(p.data.as_bits(), p.last, p.bad, p.seq, p.src))
                rec.out_cycles.append(cycle)
            if c_ready and ctx.get(dut.ctrl.valid):
                rec.ctrl.append(Header.from_bits(ctx.get(dut.ctrl.payload).as_bits()))
            pulses = ctx.get(dut.credit)
            for vc in range(N_VCS):
                if (pulses >> vc) & 1:
                    credits[vc] += 1
                    rec.credits.append((cycle, vc))
            await ctx.tick()
            rec.cycles = cycle + 1

            waiting = ctx.get(dut.ctrl.valid) or ctx.get(dut.o.valid)
            active = busy or any(shown.values()) or pulses or flit or commit or discard or waiting
            quiet = 0 if active or not sender.done else quiet + 1
            if quiet >= settle:
                break
        rec.overflow = bool(ctx.get(dut.overflow))

    sim.add_testbench(bench)
    sim.run()
    return rec
