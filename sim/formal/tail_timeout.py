"""The tail timeout of the packet input port is reachable: a packet whose last flit was lost
on the link is padded and ended by the timeout (hw/packet/input_port.py, "Tail timeout").

The input port alone, with the format of the switch-level proofs (``SWITCH_FORMAT``: one
payload flit per packet), whose tail timeout (model/packet/link.py ``tail_timeout``) is 8
cycles, so a cover search of a few more cycles reaches it. The sender is any NPU
(``NpuSender``: any flit may be lost or corrupted) sending data on VC 0 only, so that ``o``
carries that VC's packets; the control unit is any that keeps the rules
(``any_control_unit``); ``o`` is always ready.

Covered: ``o`` hands over a packet's final slot (``last``) marked bad, while the last flit
the sender put on VC 0 was a packet's ``last`` that the link lost and nothing of VC 0 has
come since: nothing but the timeout can have ended that packet (no later flit, head or sync
of its VC arrived). Then, with that packet ended, the sender gets its credit back (a head
may follow). ``mutant``: the writer never raises ``expired`` (the timeout never fires):
the cover must be unreachable.
"""

from __future__ import annotations

from amaranth.hdl import Assume, Cover, Module, Signal

from fredfab.hw.packet.input_port import InputPort
from fredfab.model.packet.format import DATA_VCS
from fredfab.sim.formal.mutation import mutated
from fredfab.sim.formal.packet import (
    SWITCH_FORMAT,
    NpuSender,
    any_control_unit,
    packet_params,
    stated_depths,
)
from fredfab.sim.formal.runner import harness_module

#: The data VC the sender uses.
VC = DATA_VCS[0]


def _never_expires(m: Module, port: InputPort) -> None:
    """A fault: no data VC's reader is ever told its VC has been silent for the timeout."""
    for vc in DATA_VCS:
        m.d.comb += m.submodules[f"reader{vc}"].expired.eq(0)


def tail_timeout_harness(mutant: bool = False) -> Module:
    """The cover of the module docstring."""
    params = packet_params(ports=2, fmt=SWITCH_FORMAT)
    m = harness_module()
    port = InputPort(params)
    m.submodules.port = mutated(port, _never_expires) if mutant else port
    sender = NpuSender(m, port.rx, port.credit, params.fmt, stated_depths(params), "rx")
    m.d.comb += Assume(~sender.advance | (sender.vc == VC), "the sender uses one data VC")
    any_control_unit(m, port)
    m.d.comb += port.o.ready.eq(1)
    f = port.rx.payload
    # The last flit the sender put on the VC was a packet's last, lost on the link, and no
    # flit before it was lost: every earlier packet's head reached the port.
    lost_before, tail_lost = Signal(name="lost_before"), Signal(name="tail_lost")
    with m.If(sender.advance):
        m.d.sync += [
            lost_before.eq(lost_before | sender.lose),
            tail_lost.eq(sender.lose & f.last & ~lost_before),
        ]
    # Packets the port has settled: ended on ``o`` or discarded by the control unit. The
    # port settles its packets in order, so the one ending now is the sender's latest (the
    # one whose tail was lost) exactly when all the others are settled.
    settled = Signal.like(sender.pkts[VC], name="settled")
    ends = port.o.valid & port.o.ready & port.o.payload.last
    discards = port.head[VC].valid & port.discard[VC] & ~port.commit[VC]
    m.d.sync += settled.eq(settled + ends + discards)
    latest = settled == (sender.pkts[VC] - 1)[: len(settled)]
    padded_end = ends & port.o.payload.bad
    m.d.comb += Cover(
        tail_lost & latest & padded_end, "a packet whose last flit was lost is ended by the timeout"
    )
    return m
