"""Loss notices of the packet control unit: the REWINDs it sends the senders of a configured
flow when it sees a gap in their sequence numbers, and the hold that keeps one loss to one
notice (docs/switch-rtl.md, "Loss recovery").

A head of slot k at input p whose ``seq`` comes after ``E[k][p]`` means the packets from E up
to it were lost on p's link (the input port dropped them, or their heads): the control unit
discards the head (it does already) and reports a ``gap``. Unless the flow's senders were
told already, a REWIND for E goes to every input of the flow (``in_of_in[k][p]``), one
control packet, through the control network; every sender goes back to E, and so the packet
a loss cost comes again about one round trip after it was due, not after a timeout.

``notified[k][p]``: the senders of the flow of input p in slot k were told to go back to
``E[k][p]`` (a REWIND sent, or a receiver's NACK passed on as a NACK: ``told``). While it
holds, gaps there raise nothing (they are packets the senders sent before they heard), and
the control unit passes a receiver's NACK for E on as an ACK. It holds until E advances (a
commit), the flow's row is written, or it lapses: one to two epochs of
model/packet/recovery.py ``notice_hold`` cycles, so a notice lost on its way is repeated at
the next gap or NACK.

An ordinary elaboratable, built by the control unit with the signals it shares (so the
control unit's flow tables and ``E`` stay where they are): see ``PacketControl``.
"""

from __future__ import annotations

from collections.abc import Sequence

from amaranth.hdl import Cat, Elaboratable, Module, Signal, Value

from fredfab.hw.packet.params import PacketParams
from fredfab.model.packet.format import SEQ_BITS
from fredfab.model.packet.recovery import notice_hold


class LossNotices(Elaboratable):
    """Inputs (the control unit's signals, per slot k >= 1 and input p): ``E``, ``in_of_in``,
    ``gap`` and ``gap_vc`` (this cycle's gaps and, per slot, the VC of the head that showed
    one), ``advanced`` (E moves on by a commit), ``written`` (the row is rewritten),
    ``told`` (a NACK for this flow is passed on as a NACK now: the senders hear it) and
    ``served`` (the control network takes ``req`` this cycle).

    Outputs: ``notified`` and the request, ``req_valid`` with ``req_slot``, ``req_port``,
    ``req_vc``, ``req_seq`` and ``req_targets`` (the flow's inputs)."""

    def __init__(
        self,
        params: PacketParams,
        E: Sequence[Sequence[Value]],
        in_of_in: Sequence[Sequence[Value]],
        gap: Sequence[Sequence[Value]],
        gap_vc: Sequence[Value],
        advanced: Sequence[Sequence[Value]],
        written: Sequence[Sequence[Value]],
        told: Sequence[Sequence[Value]],
        served: Value,
    ) -> None:
        self.params = params
        self.E, self.in_of_in, self.gap, self.gap_vc = E, in_of_in, gap, gap_vc
        self.advanced, self.written, self.told, self.served = advanced, written, told, served
        P, K = params.ports, params.switch.slots
        self.notified = [[Signal(name=f"notified_s{k}_p{p}") for p in range(P)] for k in range(K)]
        self.req_valid = Signal()
        self.req_slot = Signal(range(K))
        self.req_port = Signal(range(P))
        self.req_vc = Signal(2)
        self.req_seq = Signal(SEQ_BITS)
        self.req_targets = Signal(P)

    def elaborate(self, platform) -> Module:
        m = Module()
        P, K = self.params.ports, self.params.switch.slots
        hold = notice_hold(self.params.fmt)
        epoch = Signal(range(hold))
        epoch_lsb = Signal()
        wrap = epoch == hold - 1
        m.d.sync += epoch.eq(epoch + 1)
        with m.If(wrap):
            m.d.sync += epoch_lsb.eq(~epoch_lsb)
        new_lsb = epoch_lsb ^ wrap  # the epoch a flag set now belongs to

        pending = [[Signal(name=f"rewind_pending_s{k}_p{p}") for p in range(P)] for k in range(K)]
        stamp = [[Signal(name=f"notified_epoch_s{k}_p{p}") for p in range(P)] for k in range(K)]
        vc = [Signal(2, name=f"rewind_vc_s{k}") for k in range(K)]

        # The first pending (slot, port), slots first.
        first = True
        for k in range(1, K):
            for p in range(P):
                with (m.If if first else m.Elif)(pending[k][p]):
                    m.d.comb += [
                        self.req_valid.eq(1),
                        self.req_slot.eq(k),
                        self.req_port.eq(p),
                        self.req_vc.eq(vc[k]),
                        self.req_seq.eq(self.E[k][p]),
                        self.req_targets.eq(self.in_of_in[k][p]),
                    ]
                first = False

        for k in range(1, K):
            with m.If(Cat(self.gap[k]).any()):
                m.d.sync += vc[k].eq(self.gap_vc[k])
            for p in range(P):
                sent = self.served & (self.req_slot == k) & self.req_targets[p]
                tell = sent | self.told[k][p]
                ends = self.advanced[k][p] | self.written[k][p]
                lapses = wrap & (stamp[k][p] != epoch_lsb)
                notified = self.notified[k][p]
                m.d.sync += [
                    notified.eq(tell | (notified & ~ends & ~lapses)),
                    pending[k][p].eq(
                        (self.gap[k][p] & ~notified & ~tell) | (pending[k][p] & ~tell & ~ends)
                    ),
                ]
                with m.If(tell):
                    m.d.sync += stamp[k][p].eq(new_lsb)
        return m
