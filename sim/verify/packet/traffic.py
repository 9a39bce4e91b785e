"""What every NPU of a packet scenario sends and must receive, and what the loader writes.

Payloads are random elements (edge values included) of the switch's type; the expected
result of a reduction comes from the functional model for the routed configuration
(model/switch/switch_model.py, checked against the golden collectives in tests/model), so sums are
compared bit for bit in the hardware's reduction order. A unicast packet arrives as sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fredfab.model.dtypes import element_type, random_data
from fredfab.model.packet.flow_tables import inputs_of_input, inputs_of_output
from fredfab.model.packet.format import UNICAST_INDEX
from fredfab.model.packet.gbn import GoBackNSender
from fredfab.model.packet.slot_check import with_check
from fredfab.model.prng import XorShift
from fredfab.model.switch.switch_model import FunctionalSwitch
from fredfab.sim.verify.packet.scenario import PacketScenario
from fredfab.sim.verify.traffic import pack, traffic_from_data

Packet = list[int]  # payload flit words


class Release:
    """Which packets of a stream its sender may send: all of them from the stream's start."""

    def start(self, gbn: GoBackNSender) -> None:
        gbn.limit = gbn.n_packets

    def tick(self, gbn: GoBackNSender, now: int) -> None:
        pass


@dataclass
class Messages(Release):
    """The stream comes in messages: the first ``size`` packets, then, once every receiver
    has acknowledged a message, a gap, then the next message. Sizes (1 to ``2**size_bits``
    packets) and gaps (0 to ``2**gap_bits - 1`` cycles) come from a xorshift64 sequence of
    the flow (``seed``), stepped once per message: bits [0, size_bits) the next size, bits
    [32, 32 + gap_bits) the gap before it. Every input of a flow draws the same messages, so
    the flow's phase comes and goes, and phases preempt each other both ways."""

    seed: int
    size_bits: int = 5
    gap_bits: int = 9

    def __post_init__(self) -> None:
        self._draws = XorShift(self.seed)
        self._resume: int | None = None

    def _size(self) -> int:
        return 1 + self._draws.bits(0, self.size_bits)

    def start(self, gbn: GoBackNSender) -> None:
        gbn.limit = min(gbn.n_packets, self._size())
        self._draws.step()

    def tick(self, gbn: GoBackNSender, now: int) -> None:
        if gbn.limit >= gbn.n_packets or gbn.base < gbn.limit:
            return
        if self._resume is None:
            self._resume = now + self._draws.bits(32, self.gap_bits)
        if now >= self._resume:
            gbn.limit = min(gbn.n_packets, gbn.limit + self._size())
            self._draws.step()
            self._resume = None


@dataclass
class SendStream:
    """Packets an NPU sends on ``vc`` for configuration ``index`` (unicast: to ``dst``);
    complete when every port in ``receivers`` has acknowledged them all. ``release`` says
    which it may send when (all of them, by default)."""

    vc: int
    index: int
    dst: int
    packets: list[Packet]
    receivers: frozenset[int]
    start: int
    release: Release = field(default_factory=Release)

    @property
    def key(self) -> tuple[int, int, int]:
        """How ACK/NACKs find it: (vc, index, receiver) for unicast, (vc, index, 0) else."""
        return (self.vc, self.index, self.dst if self.index == UNICAST_INDEX else 0)


@dataclass
class RecvStream:
    """Packets an NPU must receive on ``vc`` for ``index`` (unicast: from ``src``)."""

    vc: int
    index: int
    src: int
    expect: list[Packet]

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.vc, self.index, self.src if self.index == UNICAST_INDEX else 0)


@dataclass
class SlotLoad:
    """One configuration slot: its words followed by its check words
    (model/packet/slot_check.py) and its flow-table rows (hw/packet/control.py)."""

    slot: int
    words: list[int]
    inputs_of_input: list[int]
    inputs_of_output: list[int]


@dataclass
class PacketTraffic:
    sends: dict[int, list[SendStream]] = field(default_factory=dict)
    recvs: dict[int, list[RecvStream]] = field(default_factory=dict)
    loads: list[SlotLoad] = field(default_factory=list)

    @property
    def payload_packets(self) -> int:
        """Packets the receivers must deliver, all streams together."""
        return sum(len(r.expect) for rs in self.recvs.values() for r in rs)


def build_traffic(
    scenario: PacketScenario,
    ports: int,
    m: int,
    arch: str,
    dtype: str,
    lanes: int,
    packet_flits: int,
    word_width: int,
) -> PacketTraffic:
    et = element_type(dtype)
    sw = FunctionalSwitch(ports, m, et, arch=arch)
    out = PacketTraffic(sends={p: [] for p in range(ports)}, recvs={p: [] for p in range(ports)})
    for i, phase in enumerate(scenario.phases):
        rng = np.random.default_rng([scenario.seed, i])
        flows = phase.flow_list
        n = phase.packets * packet_flits
        if phase.slot == UNICAST_INDEX:
            for f in flows:
                (src,), (dst,) = sorted(f.ips), sorted(f.ops)
                packets = _packets(random_data(rng, et, (n * lanes,)), et, lanes, packet_flits)
                out.sends[src].append(
                    SendStream(phase.vc, UNICAST_INDEX, dst, packets, frozenset([dst]), phase.start)
                )
                out.recvs[dst].append(RecvStream(phase.vc, UNICAST_INDEX, src, packets))
            continue
        routing = sw.route(flows)
        # One phase per slot (PacketScenario checks it), so one load each.
        out.loads.append(
            SlotLoad(
                phase.slot,
                with_check(routing.config.to_words(word_width), word_width),
                inputs_of_input(routing.flows, ports),
                inputs_of_output(routing.flows, ports),
            )
        )
        data = {
            p: random_data(rng, et, (n * lanes,)).reshape(n, lanes)
            for f in routing.flows
            for p in f.ips
        }
        lasts = {f: [0] * n for f in routing.flows}  # packet ends do not matter here
        traffic, _ = traffic_from_data(sw, routing, data, lasts)
        for f in routing.flows:
            for p in f.ips:
                words = [w for w, _ in traffic.send[p]]
                out.sends[p].append(
                    SendStream(
                        phase.vc,
                        phase.slot,
                        0,
                        _chunks(words, packet_flits),
                        frozenset(f.ops),
                        phase.start,
                    )
                )
            for q in f.ops:
                words = [w for w, _ in traffic.expect[q]]
                out.recvs[q].append(
                    RecvStream(phase.vc, phase.slot, 0, _chunks(words, packet_flits))
                )
    return out


def _chunks(words: list[int], size: int) -> list[Packet]:
    return [words[i : i + size] for i in range(0, len(words), size)]


def _packets(flat: np.ndarray, et, lanes: int, packet_flits: int) -> list[Packet]:
    return _chunks(pack(flat.reshape(-1, lanes), et), packet_flits)
