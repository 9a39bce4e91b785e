"""Link-level retry: every flit of a link carries a link sequence number ``lseq``; the receiving
end takes only the next one in order with a good CRC, and the sending end replays from the
first one not taken (docs/switch-rtl.md, "Link-level retry"). So a flit lost or damaged on
a link costs that link about one round trip (a few cycles), and the packets above never
see it: the way PCIe's data link layer (sequence numbers, LCRC, a replay buffer and
ACK/NAK), CXL's and NVLink's recover, not by an end-to-end timeout.

Receiving end (``RetryReceiver``), per cycle: a flit whose ``lseq`` is ``expect`` and whose
CRC is good is taken (``expect`` moves on, ``nak`` clears); one whose ``lseq`` comes after
``expect`` (a flit was lost) or that fails its CRC sets ``nak``; one before ``expect`` (a
replay of a flit already taken) is dropped quietly. It tells the sending end ``(expect,
nak)`` every cycle, on a wire of its own beside the credits (``ack``: ``LSEQ_BITS + 1``
bits, the receiving end's registers; like the credit pulses, a link control signal that the
fault model does not touch: a real link sends it as protected, repeated link packets).

Sending end (``RetrySender``), per cycle, with the ``(expect, nak)`` the receiving end showed
last cycle: every flit before ``expect`` is acknowledged and leaves the replay buffer. It
starts a replay from ``expect`` when ``nak`` is up and it has not replayed from that
``expect`` already, or when flits are outstanding and ``expect`` has not moved for
``RETRY_TIMEOUT`` cycles (a flit lost with nothing after it). A replay resends the
outstanding flits, one per cycle, before anything new; a new flit goes out only when no
replay is running and fewer than ``REPLAY_DEPTH`` flits are outstanding (``ready``).

Everything here is below packets and credits: a replayed head spends no credit again, and
the receiving end's buffers only ever see flits in order. A link that goes silent for
longer than a packet's tail timeout still loses packets (its replayed flits arrive late),
which the packet layer repairs (model/packet/link.py) and Go-Back-N resends.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from fredfab.model.packet.format import LSEQ_BITS, LinkFlit, LinkFormat, PacketFormat

#: Flits the sending end keeps for a replay: below half the sequence space, so ``expect``
#: always tells acknowledged from outstanding.
LSEQ_MOD = 1 << LSEQ_BITS
REPLAY_DEPTH = 16
#: Cycles without acknowledgement progress, flits outstanding, before a replay: the round
#: trip is 2 cycles (a flit registered, the receiving end's ``expect`` registered).
RETRY_TIMEOUT = 8


def replay_gap(fmt: PacketFormat) -> int:
    """The longest gap one replay puts between two flits of a packet on a link with retry:
    a lost flit with nothing after it is found after ``RETRY_TIMEOUT`` cycles without
    progress, and its replay takes the round trip and a cycle to reach the far end (a second
    loss of the same flit within a replay is not covered: its packet is cut and the packet
    layer repairs it). 0 without retry."""
    return RETRY_TIMEOUT + 4 if fmt.link_retry else 0


def lseq_after(a: int, b: int) -> bool:
    """``a`` comes strictly after ``b`` (within half the sequence space)."""
    return 0 < (a - b) % LSEQ_MOD < LSEQ_MOD // 2


@dataclass
class RetryReceiver:
    """The receiving end of a link: ``take`` one cycle's flit (or None); ``ack`` is what it
    shows the sending end from the next cycle on."""

    link: LinkFormat
    enabled: bool = True
    expect: int = field(default=0, init=False)
    nak: bool = field(default=False, init=False)
    rejected: int = field(default=0, init=False)  # lost or damaged flits noticed

    def take(self, flit: LinkFlit | None) -> LinkFlit | None:
        """The flit passed on to the packet layer, or None."""
        if flit is None or not self.enabled:
            return flit
        if flit.lseq == self.expect and self.link.ok(flit):
            self.expect = (self.expect + 1) % LSEQ_MOD
            self.nak = False
            return flit
        if flit.lseq == self.expect or lseq_after(flit.lseq, self.expect):
            self.nak = True
            self.rejected += 1
        return None

    @property
    def ack(self) -> tuple[int, bool]:
        return self.expect, self.nak


@dataclass
class RetrySender:
    """The sending end of a link: each cycle, ``ack`` (what the receiving end showed), then
    ``send(new)`` with the flit the packet layer would send (only when ``ready``); it returns
    the flit that goes on the link."""

    enabled: bool = True
    next: int = field(default=0, init=False)  # lseq of the next new flit
    acked: int = field(default=0, init=False)  # the receiving end's expect
    replays: int = field(default=0, init=False)
    replayed: int = field(default=0, init=False)  # flits sent again
    _buffer: dict[int, LinkFlit] = field(default_factory=dict, init=False)
    _replay: int | None = field(default=None, init=False)  # lseq to resend next
    _replayed_for: int | None = field(default=None, init=False)
    _quiet: int = field(default=0, init=False)  # cycles expect stood still, outstanding

    @property
    def outstanding(self) -> int:
        return (self.next - self.acked) % LSEQ_MOD

    def ack(self, expect: int, nak: bool) -> None:
        """The receiving end's ``(expect, nak)`` of this cycle; decides whether to replay."""
        if not self.enabled:
            return
        moved = expect != self.acked
        if moved:
            for k in range(self.acked, self.acked + (expect - self.acked) % LSEQ_MOD):
                self._buffer.pop(k % LSEQ_MOD, None)
            self.acked = expect
            self._replayed_for = None
        self._quiet = 0 if moved or not self.outstanding else self._quiet + 1
        if self._replay is not None and not lseq_after(self.next, self._replay):
            self._replay = None  # done
        if self._replay is not None and lseq_after(self.acked, self._replay):
            self._replay = self.acked  # acknowledged meanwhile: skip those
        start = (nak and self._replayed_for != self.acked) or self._quiet >= RETRY_TIMEOUT
        if self.outstanding and self._replay is None and start:
            self._replay = self.acked
            self._replayed_for = self.acked
            self._quiet = 0
            self.replays += 1

    @property
    def ready(self) -> bool:
        """A new flit may go out this cycle."""
        return not self.enabled or (self._replay is None and self.outstanding < REPLAY_DEPTH)

    def send(self, new: LinkFlit | None) -> LinkFlit | None:
        if not self.enabled:
            return new
        if self._replay is not None:
            if new is not None:
                raise ValueError("a new flit while a replay runs: check ready first")
            flit = self._buffer[self._replay]
            self._replay = (self._replay + 1) % LSEQ_MOD
            self.replayed += 1
            return flit
        if new is None:
            return None
        if self.outstanding >= REPLAY_DEPTH:
            raise ValueError("the replay buffer is full: check ready first")
        flit = replace(new, lseq=self.next)
        self._buffer[self.next] = flit
        self.next = (self.next + 1) % LSEQ_MOD
        return flit
