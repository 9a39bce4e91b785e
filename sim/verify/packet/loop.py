"""The cycle loop of a packet scenario: NPU endpoints, faulty links and the switch RTL.

The same loop drives the Amaranth simulator (tests/hw/packet) and cocotb (packet_tb.py)
through a ``Pins`` object that reads and drives the switch's ports by their manifest names.
Per cycle: drive the switch's rx flits and tx credits (decided last cycle); once the
design has settled, read what it drives (tx flits, rx credits), which is what it sends at the
coming clock edge; after the edge pass each tx flit through its link's faults and let every
NPU take its cycle, whose flit goes through the other direction's faults (each link's
faults step every cycle, flit or not: model/packet/faults.py). This is the same on both
simulators, and a flit counts as sent exactly when the RTL's state says it was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from fredfab.model.packet.faults import LinkFaults
from fredfab.model.packet.format import LSEQ_BITS, LinkFlit, PacketFormat
from fredfab.model.prng import seed
from fredfab.sim.verify.packet.endpoint import Npu, npu_seed
from fredfab.sim.verify.packet.scenario import PacketScenario
from fredfab.sim.verify.packet.traffic import PacketTraffic, SlotLoad


class LinkFaultModel(Protocol):
    """What a link does to the flits on it (model/packet/faults.py ``LinkFaults``): one step
    per cycle, flit or None in, the far end's flit or None out; and its counts (the keys of
    ``LinkFaults.counts``)."""

    def step(self, flit: LinkFlit | None) -> LinkFlit | None: ...
    def counts(self) -> dict[str, int]: ...


class Pins(Protocol):
    """The switch's ports, as the loop needs them (flits as integers of the link layout)."""

    def tx(self, port: int) -> int | None: ...
    def rx_credit(self, port: int) -> int: ...
    def rx_ack(self, port: int) -> int: ...  # the ack layout's bits (hw/packet/link_retry.py)
    def drive(self, port: int, flit: int | None, tx_credit: int, tx_ack: int) -> None: ...
    def write_cfg(self, slot: int, addr: int, data: int) -> None: ...
    def write_flow_row(self, table: int, slot: int, port: int, mask: int) -> None: ...
    def idle_config(self) -> None: ...
    def phase(self) -> tuple[int, int, int, int]: ...  # valid, vc, index, reconfiguring
    async def settle(self) -> None: ...  # inputs written, outputs settled
    async def edge(self) -> None: ...  # the next rising clock edge


@dataclass
class PhaseChange:
    cycle: int
    vc: int
    index: int


@dataclass
class LoopResult:
    cycles: int
    done: bool
    errors: list[str]
    npus: list[Npu]
    faults: dict[str, int]
    phases: list[PhaseChange] = field(default_factory=list)
    reconfiguring_cycles: int = 0

    @property
    def passed(self) -> bool:
        return self.done and not self.errors


async def load(pins: Pins, loads: list[SlotLoad]) -> None:
    """Write every slot's configuration words and flow-table rows (one per cycle)."""
    for ld in loads:
        for addr, word in enumerate(ld.words):
            pins.write_cfg(ld.slot, addr, word)
            await pins.edge()
        for table, masks in ((0, ld.inputs_of_input), (1, ld.inputs_of_output)):
            for port, mask in enumerate(masks):
                pins.write_flow_row(table, ld.slot, port, mask)
                await pins.edge()
    pins.idle_config()


async def run_loop(
    pins: Pins,
    scenario: PacketScenario,
    traffic: PacketTraffic,
    fmt: PacketFormat,
    data_bits: int,
    trace: Callable[..., None] | None = None,
    on_npus: Callable[[list[Npu]], None] | None = None,
    scripted: dict[tuple[int, str], LinkFaultModel] | None = None,
) -> LoopResult:
    """Run ``scenario``. ``trace(cycle, drives, seen, phase)``, when given, sees every
    cycle: per port what the NPU drove (rx flit bits or None, tx credits, retry state) and
    what the switch drove (tx flit bits or None, rx credits, retry state), and (phase valid,
    vc, index, reconfiguring). ``on_npus`` sees the NPUs before the first cycle.
    ``scripted`` replaces the random faults of the links it names, (port, "up" | "down"),
    with its own (a deterministic pattern: scripted_faults.py)."""
    ports = len(traffic.sends)
    links = scenario.links
    link = fmt.link(data_bits)
    npus = [
        Npu(
            p,
            fmt,
            data_bits,
            traffic.sends[p],
            traffic.recvs[p],
            window=scenario.window,
            sender_timeout=scenario.sender_timeout,
            receiver_timeout=scenario.receiver_timeout,
            idle=links.idle,
            stall=links.stall,
            draws_seed=npu_seed(scenario.seed, p),
            credit_holds=tuple((a, b) for q, a, b in scenario.credit_holds if q == p),
        )
        for p in range(ports)
    ]
    if on_npus is not None:
        on_npus(npus)
    rates = links.faults
    scripted = scripted or {}

    def faults(p: int, direction: str) -> LinkFaultModel:
        if (p, direction) in scripted:
            return scripted[p, direction]
        return LinkFaults(rates, link_seed(scenario.seed, p, direction), link)

    up = [faults(p, "up") for p in range(ports)]
    down = [faults(p, "down") for p in range(ports)]
    await load(pins, traffic.loads)
    result = LoopResult(0, False, [], npus, {})
    last_phase = None
    drives: list[tuple[int | None, int, int]] = [(None, 0, 0)] * ports
    for now in range(scenario.max_cycles):
        for p in range(ports):
            pins.drive(p, *drives[p])
        await pins.settle()
        seen = [(pins.tx(p), pins.rx_credit(p), pins.rx_ack(p)) for p in range(ports)]
        valid, vc, index, reconf = pins.phase()
        await pins.edge()
        if trace is not None:
            trace(now, list(drives), seen, (valid, vc, index, reconf))
        result.reconfiguring_cycles += reconf
        if valid and not reconf and (vc, index) != last_phase:
            result.phases.append(PhaseChange(now, vc, index))
            last_phase = (vc, index)
        for p, npu in enumerate(npus):
            bits, credits_in, ack_in = seen[p]
            rx = down[p].step(None if bits is None else link.decode(bits))
            flit, credits, ack = npu.cycle(now, rx, credits_in, unpack_ack(ack_in))
            flit = up[p].step(flit)
            drives[p] = (None if flit is None else link.encode(flit), credits, pack_ack(*ack))
        if now % 8 == 0 and all(n.done for n in npus):
            result.done = True
            result.cycles = now
            break
    else:
        result.cycles = scenario.max_cycles
    for npu in npus:
        result.errors += npu.errors
    if not result.done:
        result.errors.append(_stuck(npus))
    for p, npu in enumerate(npus):
        for key, r in npu.rx_by_key.items():
            if r.gbn.complete and r.got != r.stream.expect:
                result.errors.append(
                    f"port {p} stream {key}: delivered {len(r.got)} packets, not the expected ones"
                )
    counts = [f.counts() for f in up + down]
    result.faults = {key: sum(c[key] for c in counts) for key in counts[0]}
    return result


def unpack_ack(bits: int) -> tuple[int, bool]:
    """(expect, nak) from the retry state's bits: expect in the low LSEQ_BITS, nak above."""
    return bits & ((1 << LSEQ_BITS) - 1), bool(bits >> LSEQ_BITS)


def pack_ack(expect: int, nak: bool) -> int:
    return expect | (int(nak) << LSEQ_BITS)


def link_seed(scenario_seed: int, port: int, direction: str) -> int:
    """The seed of the faults on port ``port``'s link, ``direction`` "up" (NPU to switch) or
    "down"."""
    return seed(f"link:{scenario_seed}:{direction}", port)


def _stuck(npus: list[Npu]) -> str:
    lines = []
    for npu in npus:
        for key, s in npu.by_key.items():
            if not s.gbn.done:
                lines.append(
                    f"port {npu.port} sender {key}: acked {dict(s.gbn.acked)} next {s.gbn.next}"
                )
        for key, r in npu.rx_by_key.items():
            if not r.gbn.complete:
                lines.append(
                    f"port {npu.port} receiver {key}: "
                    f"expected {r.gbn.expected} of {r.gbn.n_packets}"
                )
    return "did not finish: " + "; ".join(lines[:8])
