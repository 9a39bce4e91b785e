"""Every proof, by name: what it claims, how it is checked, and its negative control.

A ``Proof`` builds its harness with ``mutant=False`` (the design as generated) or
``mutant=True`` (the same design with the fault its ``negative`` names). The proof must
pass and its mutant must fail; tests/sim/formal checks both. ``fast`` proofs (a few seconds
each) run in the default test suite, the others in the slow suite; ``make formal`` runs all.
docs/formal.md describes each one in words and lists its time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from amaranth.hdl import Module

from fredfab.sim.formal import (
    blocks,
    link_retry,
    network,
    packet,
    phases,
    seq_floor,
    tail_timeout,
)
from fredfab.sim.formal.runner import DEFAULT_TIMEOUT, MODES

#: Wall-clock limit of the switch-level packet proofs: minutes each on an idle machine, far
#: more on a loaded one.
SWITCH_TIMEOUT = 3600


@dataclass(frozen=True)
class Proof:
    name: str
    mode: str  # prove (k-induction, unbounded), bmc (bounded), cover
    depth: int  # prove: induction length; bmc, cover: cycles from power-up
    claim: str  # what a pass establishes, in one line
    negative: str  # the fault of the mutant, which must make the proof fail
    build: Callable[..., Module]  # build(mutant=False) -> harness
    fast: bool = True
    timeout: int = DEFAULT_TIMEOUT  # seconds of wall clock before the verdict is unknown

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"{self.name}: mode {self.mode!r} is not one of {MODES}")

    def harness(self, mutant: bool = False) -> Module:
        return self.build(mutant=mutant)


#: uSwitch shapes whose stream rules the default suite proves (the input and output stages of
#: Fred_3, whose fork and join logic every other kind shares), the first also its flit
#: counts; everything else runs in the slow suite. The default suite's proofs and mutants
#: add about a minute of CPU (docs/formal.md, "Times").
FAST_NODES = ("R_2x3", "D_3x2")


def _block_proofs() -> list[Proof]:
    proofs = [
        Proof(
            "skid.rules",
            "prove",
            4,
            "skid buffer: stream rules at its output; ready, valid and busy exactly follow the "
            "flits held (at most two)",
            "the output drops valid while stalled",
            partial(blocks.skid_harness, False),
        ),
        Proof(
            "skid.order",
            "bmc",
            12,
            "skid buffer: flits leave in the order they came, unchanged, none lost or made up",
            "the input is always ready (a flit is overwritten when both entries are full)",
            partial(blocks.skid_harness, True),
        ),
    ]
    proofs += [
        Proof(
            "room.rules",
            "prove",
            4,
            "room buffer: stream rules at its output; i.ready exactly while fewer than three "
            "flits are held, o.valid and busy while one or more are, room while one or fewer",
            "the output drops valid while stalled",
            partial(blocks.room_harness, "rules"),
        ),
        Proof(
            "room.order",
            "bmc",
            12,
            "room buffer: flits leave in the order they came, unchanged, none lost or made up",
            "the input is always ready (a flit is overwritten when every entry is full)",
            partial(blocks.room_harness, "order"),
        ),
        Proof(
            "room.lookahead",
            "prove",
            4,
            "room buffer: a sender a cycle behind that keeps to its rule never overflows it, "
            "and sends every cycle while the output is always ready",
            "room says there is room now, not next cycle",
            partial(blocks.room_harness, "lookahead"),
        ),
        Proof(
            "room.keeps_up",
            "prove",
            8,
            "room buffer: a sender that keeps to its rule and always has a flit keeps the "
            "output valid in every cycle after the first flit, whatever the receiver",
            "the sender reads room alone, also in a cycle it sent nothing (the output runs dry)",
            partial(blocks.room_harness, "keeps_up"),
        ),
    ]
    proofs += [
        Proof(
            f"crossbar.fork_1x{width}",
            "bmc",
            12,
            f"a result fan-out of the crossbar, 1 x {width}, sending on look-ahead room into "
            "room buffers, any accepted codes: no buffer offered a flit it cannot take; each "
            "taker gets every flit once, in order; stream rules behind the buffers",
            "the buffers' room is their ready (no look-ahead)",
            partial(blocks.crossbar_fork_harness, width),
            width == blocks.FORK_WIDTHS[0],
        )
        for width in blocks.FORK_WIDTHS
    ]
    for name in blocks.block_nodes():
        fast = name in FAST_NODES
        proofs += [
            Proof(
                f"uswitch.{name}.rules",
                "prove",
                3,
                f"uSwitch {name}, any code tuple the model accepts: stream rules at every "
                "output; each output carries what its code names, from flits present",
                "output 0 drops valid while stalled",
                partial(blocks.uswitch_harness, name, False),
                fast,
            ),
            Proof(
                f"uswitch.{name}.flits",
                "bmc",
                10,
                f"uSwitch {name}: one flit out of each output per flit into its inputs; a "
                "multicast offers each flit once; a sum's operands move together",
                "input 0 is always ready (taken before its outputs have it)",
                partial(blocks.uswitch_harness, name, True),
                name == FAST_NODES[0],
            ),
        ]
    for name in blocks.crossbar_block_nodes():
        proofs += [
            Proof(
                f"uswitch.xbar.{name}.rules",
                "prove",
                3,
                f"uSwitch {name} with the crossbar options (codes decoded; no sent bits where "
                "the kind never multicasts), any code tuple the model accepts: stream rules "
                "at every output; each output carries what its code names",
                "output 0 drops valid while stalled",
                partial(blocks.uswitch_harness, name, False, crossbar=True),
                name == XBAR_FAST_NODE,
            ),
            Proof(
                f"uswitch.xbar.{name}.flits",
                "bmc",
                10,
                f"uSwitch {name} with the crossbar options: one flit out of each output per "
                "flit into its inputs; a sum's operands move together",
                "input 0 is always ready (taken before its outputs have it)",
                partial(blocks.uswitch_harness, name, True, crossbar=True),
                name == XBAR_FAST_NODE,
            ),
        ]
    return proofs


#: The crossbar-option uSwitch whose proofs the default suite runs: the tree node (its join
#: and its single-taker readies).
XBAR_FAST_NODE = "ART_4x4"


#: (ports, m) of the function proofs: the issue's P = 4 and 5 with m = 2 and 3.
FUNCTION_SHAPES = ((4, 2), (4, 3), (5, 2), (5, 3))


def _network_proofs() -> list[Proof]:
    proofs = []
    for ports, m in FUNCTION_SHAPES:
        fast = (ports, m) == (4, 2)
        proofs.append(
            Proof(
                f"interconnect.function.p{ports}m{m}",
                "prove",
                2,
                f"Fred_{m}({ports}), every configuration word the model's decoder accepts: each "
                "output is silent, or the sum of exactly the inputs the model adds there",
                "two configuration bits swapped on their way into the interconnect",
                partial(network.function_harness, ports, m, "clos"),
                fast,
            )
        )
    proofs += [
        Proof(
            "interconnect.function_any_word.p4m2",
            "prove",
            2,
            "Fred_2(4), every one of the 2^24 words the control unit can hold: outputs as "
            "the model's rule extended to rejected words (unknown codes carry nothing)",
            "two configuration bits swapped",
            partial(network.function_harness, 4, 2, "clos", True),
            False,
        ),
        Proof(
            "interconnect.function.xbar_p4",
            "prove",
            2,
            "crossbar with reduction tree, P = 4, every accepted word: the model's function",
            "two configuration bits swapped",
            partial(network.function_harness, 4, 2, "xbar"),
            False,
        ),
        Proof(
            "interconnect.rules.p4m2",
            "prove",
            6,
            "Fred_2(4), registered, any accepted word: stream rules at every output",
            "output 0 drops valid while stalled",
            partial(network.rules_harness, 4, 2, "clos"),
        ),
        Proof(
            "interconnect.rules.p5m3",
            "prove",
            8,
            "Fred_3(5), registered, any accepted word: stream rules at every output",
            "output 0 drops valid while stalled",
            partial(network.rules_harness, 5, 3, "clos"),
            False,
        ),
        Proof(
            "interconnect.rules.xbar_p4",
            "prove",
            8,
            "crossbar P = 4, registered, any accepted word: stream rules at every output",
            "output 0 drops valid while stalled",
            partial(network.rules_harness, 4, 2, "xbar"),
            False,
        ),
        Proof(
            "interconnect.rules.p4m2_a2",
            "prove",
            10,
            "Fred_2(4), registered, with two-stage adder pipes in its adding columns, any "
            "accepted word: stream rules at every output",
            "output 0 drops valid while stalled",
            partial(network.rules_harness, 4, 2, "clos", adder_stages=2),
        ),
        Proof(
            "interconnect.flits.p4m2",
            "bmc",
            7,
            "Fred_2(4), registered, any accepted word: output flit j is the sum of flit j of "
            "exactly the model's inputs; counts between the pipeline's bounds",
            "two configuration bits swapped",
            partial(network.flits_harness, 4, 2, "clos"),
            False,
        ),
        Proof(
            "interconnect.flits.p4m3",
            "bmc",
            8,
            "Fred_3(4), registered, any accepted word: the tagged-flit check, deeper",
            "two configuration bits swapped",
            partial(network.flits_harness, 4, 3, "clos"),
            False,
        ),
        Proof(
            "interconnect.flits.xbar_p4",
            "bmc",
            8,
            "crossbar P = 4, registered (result fan-outs on look-ahead room into room "
            "buffers), any accepted word: the tagged-flit check",
            "two configuration bits swapped",
            partial(network.flits_harness, 4, 2, "xbar"),
            False,
        ),
        Proof(
            "interconnect.flits.p4m2_a2",
            "bmc",
            11,
            "Fred_2(4), registered, with two-stage adder pipes: the tagged-flit check over "
            "the longer pipeline",
            "two configuration bits swapped",
            partial(network.flits_harness, 4, 2, "clos", adder_stages=2),
            False,
        ),
    ]
    return proofs


def _phase_proofs() -> list[Proof]:
    return [
        Proof(
            "switch.slot_write",
            "prove",
            4,
            "circuit switch, P = 4: the running configuration changes only during a phase "
            "change, whatever is written to the slots",
            "a slot write also lands in the running configuration",
            partial(phases.slot_write_harness, 4, 2),
        ),
        Proof(
            "switch.slot_load",
            "bmc",
            10,
            "circuit switch, P = 4: a completed select runs exactly the words last written "
            "to its slot",
            "the phase change inverts bit 0 of the loaded configuration",
            partial(phases.slot_load_harness, 4, 2),
        ),
        Proof(
            "switch.no_mixing",
            "bmc",
            14,
            "circuit switch, P = 4: no output flit adds flits of two phases; stream rules at "
            "the outputs",
            "the ports never close for a phase change",
            partial(phases.mixing_harness, 4, 2),
            False,
        ),
    ]


def _packet_proofs() -> list[Proof]:
    return [
        Proof(
            "packet.output_port.credits",
            "bmc",
            16,
            "packet output port: per VC, packets outstanding within the manifest's depth (a "
            "head only on a credit reserved at commit); packets whole and never interleaved; "
            "pkt counts; syncs only between packets, with the next pkt",
            "the port is built for one more packet per data VC than the manifest states",
            packet.output_port_harness,
            False,
        ),
        Proof(
            "packet.output_port.liveness",
            "bmc",
            24,
            "packet output port: with credits back 3 cycles after each packet and every "
            "flit acknowledged, the interconnect waits at most 6 cycles per payload flit",
            "the receiver returns no credit",
            packet.output_liveness_harness,
        ),
        Proof(
            "packet.link_retry.order",
            "bmc",
            14,
            "link-level retry on a link that loses any flit: the far end takes exactly the "
            "flits offered, in order, each once (losses replayed, replays not taken twice)",
            "the far end takes every flit whose CRC passes, replays included",
            link_retry.retry_harness,
            False,
        ),
        Proof(
            "packet.input_port.credits",
            "bmc",
            12,
            "packet input port: credits returned never exceed those spent; no FIFO overflows; "
            "stream rules at o and ctrl; packets of packet_flits flits, however flits are "
            "lost or corrupted",
            "one credit too many, in the first cycle",
            packet.input_port_harness,
            False,
            SWITCH_TIMEOUT,
        ),
        Proof(
            "packet.input_port.tail_timeout",
            "cover",
            14,
            "packet input port (tail timeout 8 cycles): a packet whose last flit the link lost "
            "is padded and ended by the timeout, with nothing else of its VC arriving",
            "the timeout never fires (no reader is told its VC went silent)",
            tail_timeout.tail_timeout_harness,
        ),
        Proof(
            "packet.control.seq_floor",
            "bmc",
            16,
            "packet control unit, P = 2, any consistent flow set written once, any heads, "
            "credits and ACK/NACKs within the flow's progress: E of the configured slot never "
            "falls below the least sequence number the flow's receivers have acknowledged",
            "a NACK before E rewinds E to its seq with no lift to the floor",
            seq_floor.floor_harness,
            False,
        ),
        Proof(
            "packet.switch.links",
            "bmc",
            12,
            "packet switch, P = 2: every tx link keeps the credit, framing and pkt rules; no "
            "FIFO overflows; each data packet runs whole within the phase its header names",
            "output port 0 names the next slot in its headers",
            partial(packet.switch_harness, False),
            False,
            SWITCH_TIMEOUT,
        ),
        Proof(
            "packet.switch.covers",
            "cover",
            16,
            "packet switch, P = 2: a data packet leaves; MP preempts a running phase; a NACK "
            "fans out to both ports",
            "no control packet reaches an output port (no NACK can fan out)",
            partial(packet.switch_harness, True),
            False,
            SWITCH_TIMEOUT,
        ),
    ]


def all_proofs() -> list[Proof]:
    proofs = _block_proofs() + _network_proofs() + _phase_proofs() + _packet_proofs()
    names = [p.name for p in proofs]
    if len(set(names)) != len(names):
        raise AssertionError("proof names must be unique")
    return proofs


def by_name() -> dict[str, Proof]:
    return {p.name: p for p in all_proofs()}
