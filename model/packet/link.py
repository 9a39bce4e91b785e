"""Link framing and credits of packet mode: the reference of what a sender puts on a link and
of how a receiver reads it back (docs/switch-rtl.md, "Ports" and "Input port").

``LinkSender`` is an NPU's (or a test's) transmitter: it frames packets into flits and holds
one credit per packet slot of the far end's buffer. ``LinkReceiver`` is the input port's
reader rules, also what an NPU endpoint runs on the switch's tx link. Both work per virtual
channel; flits of different VCs may interleave on one link.

Repair keeps one packet in = one packet out whatever the link lost, so that every buffer slot
the sender paid for comes back as exactly one credit:

* a flit is *good* when its CRC passes and its sender did not mark it ``bad``;
* a good head flit opens a data packet; its ``pkt`` counter shows how many packets
  of its VC were lost whole before it, whose credits are returned at once;
* a data packet takes body flits while it lacks flits; a body flit that is not good is kept,
  marked bad;
* an early ``last``, or a head flit arriving while the packet lacks flits, ends the packet,
  the missing flits padded as ``(0, bad)``;
* the packet's ``packet_flits``-th body flit ends it; if that flit lacks ``last`` the sender's
  framing disagrees with the format, so the flit is marked bad (a choice: it cannot be told
  from a damaged flit) and any body flits after it, having no packet, are dropped;
* the sender stamps its packet's ``pkt`` on every flit: a body flit whose ``pkt`` is not its
  open packet's belongs to a packet whose head was lost; it ends the open packet short;
* a body flit with no open packet whose ``pkt`` is the next one expected (the last counted
  plus one) *is* that packet, arriving without its head: it is counted (so the next head's
  ``pkt`` does not count it again), its flits are dropped, and its credit is returned when
  its run of flits ends by the rules above; a body flit with any other ``pkt`` is dropped;
* a head flit that is not good has no usable header: its packet (its body flits, framed by the
  same rules) is dropped when it ends; its ``pkt`` is still trusted, since ``pkt`` is a link
  control symbol that the link protects separately (model/packet/format.py);
* tail timeout: once ``tail_timeout(fmt)`` cycles have passed without a flit on a data VC,
  the packet open on it ends (padded, or dropped, and its credit returned), and body flits of
  that packet arriving later (the flit after the silence carries the same ``pkt`` as the
  one before it, and so do those following it) are dropped before the rules above see
  them: they neither fill nor end anything, nor count as a new packet;
* every flit of the control VC is one control packet: delivered when it is good,
  dropped when bad; one credit each;
* a sync flit (``sync``, any VC) is the sender saying "my next packet on this VC has
  ``pkt``": every flit it sent before has arrived or is lost, so the packet open on the VC
  ends (as at a tail timeout) and the packets between the last one counted and ``pkt`` were
  lost whole: their credits are returned and ``pkt - 1`` becomes the last one counted. A
  sync costs no credit and is not a packet.

A packet is emitted when its end is known (``last``, its flit count, the next flit of another
packet of its VC, or the tail timeout). The timeout needs a clock: ``tick(now)`` sets it
(flits pushed after it arrive in cycle ``now``) and ends the packets whose tail is overdue; a
receiver that is never ticked never times out, and a packet whose tail was lost then stays
open until the next flit of its VC. The RTL emits a packet when the control unit commits it;
content (header, flits, bad flags) and credit counts are the same, only timing differs.

Credits of packets lost whole come back with a later flit of their VC that counts them (a
head, the first body flit of the packet just after the last counted one, or a sync). A
sender with no credit left on a VC and nothing sent on it for ``sync_interval`` cycles sends
a sync (``LinkSender.sync_due``), and repeats it every ``sync_interval`` cycles while it
stays so: whatever pattern of heads and tails the link lost, and however long it was
silent, the credits come back within ``sync_interval`` cycles of the link carrying a flit
again. Without syncs, a VC whose first uncounted packet is lost whole and whose every later
packet of the credit window loses its head would stall for good.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fredfab.model.errors import InputError
from fredfab.model.packet.format import (
    DATA_VCS,
    KIND_DATA,
    N_VCS,
    PKT_MOD,
    VC_CTRL,
    Header,
    LinkFlit,
    PacketFormat,
)
from fredfab.model.packet.link_retry import replay_gap

#: The tail timeout, in packets' worth of link cycles (``packet_flits + 1`` each). A sender
#: may put flits of the other three VCs between two flits of a packet; one that finishes a
#: whole packet of each of them in between leaves a gap of 3 * (packet_flits + 1) cycles, and
#: the fourth packet covers control flits and idle cycles on top. A timeout shorter than a
#: sender's gap would cut intact packets; a longer one only delays a packet whose tail was
#: really lost (and its VC's credit), which is rare.
TAIL_TIMEOUT_PACKETS = 4


def tail_timeout(fmt: PacketFormat) -> int:
    """Cycles without a flit on a data VC after which the packet open on it ends: the gap a
    sender may leave (``TAIL_TIMEOUT_PACKETS`` packets' worth), and with link-level retry
    the gap a replay can add (model/packet/link_retry.py ``replay_gap``)."""
    return TAIL_TIMEOUT_PACKETS * fmt.data_packet_flits + replay_gap(fmt)


#: The sync interval, in packets' worth of link cycles: long against a credit round trip
#: (so a VC merely waiting for credits rarely sends one: at most one flit in this many
#: packets' worth of its link), short against the Go-Back-N timeouts (so the credits of a
#: lost window are back before a sender gives up on its packets).
SYNC_INTERVAL_PACKETS = 16


def sync_interval(fmt: PacketFormat) -> int:
    """Cycles a sender waits, out of credits on a VC and silent on it, before a sync."""
    return SYNC_INTERVAL_PACKETS * fmt.data_packet_flits


#: Reasons of ``Dropped`` events.
DROP_BAD_HEAD = "bad head"  # a whole data packet whose head flit failed its CRC
DROP_ORPHAN = "orphan body flit"  # one body flit of no packet being read (head lost, late)
DROP_BAD_CONTROL = "bad control"  # one control flit that failed its CRC


@dataclass(frozen=True)
class Packet:
    """A data packet read from the link: always ``packet_flits`` flits of ``(data, bad)``."""

    vc: int
    header: Header
    flits: list[tuple[int, bool]]

    @property
    def ok(self) -> bool:
        return not any(bad for _, bad in self.flits)


@dataclass(frozen=True)
class Control:
    """A control packet (ACK/NACK) whose CRC was good."""

    header: Header


@dataclass(frozen=True)
class Credit:
    """``n`` packet slots of VC ``vc`` freed: credits to return to the sender."""

    vc: int
    n: int


@dataclass(frozen=True)
class Dropped:
    """Something the reader discarded (``reason``: one of the DROP_* constants)."""

    vc: int
    reason: str


LinkEvent = Packet | Control | Credit | Dropped


def _check_vc(vc: int) -> None:
    if not 0 <= vc < N_VCS:
        raise ValueError(f"vc must be 0..{N_VCS - 1}, got {vc}")


@dataclass
class LinkSender:
    """Frames packets into link flits and keeps the credits of the far end's buffers.

    ``sent(flit, now)`` tells it when each flit went on the link: it keeps, per VC, whether
    a packet is half sent and the cycle of the VC's last flit, which ``sync_due`` needs."""

    fmt: PacketFormat
    data_bits: int
    credits: list[int] = field(init=False)
    pkt: list[int] = field(init=False)
    #: per VC: the cycle its last flit (or sync) went out (None: none yet), and whether a
    #: packet's head is out and its last flit not
    last_sent: list[int | None] = field(init=False)
    inside: list[bool] = field(init=False)

    def __post_init__(self) -> None:
        self.link = self.fmt.link(self.data_bits)
        self.credits = [self._depth(vc) for vc in range(N_VCS)]
        self.pkt = [0] * N_VCS
        self.last_sent = [None] * N_VCS
        self.inside = [False] * N_VCS

    def _depth(self, vc: int) -> int:
        return self.fmt.ctrl_depth if vc == VC_CTRL else self.fmt.data_depth

    def can_start(self, vc: int) -> bool:
        _check_vc(vc)
        return self.credits[vc] > 0

    def packet_flits(self, header: Header, payload: list[int]) -> list[LinkFlit]:
        """The flits of one packet, spending a credit of its VC.

        A data packet (kind DATA) goes on ``header.vc``: a head flit with the header in
        bits [0, 48), then exactly ``packet_flits`` payload flits, ``last`` on the final one.
        An ACK/NACK/REWIND is one flit, head and last, on the control VC, with an empty
        payload."""
        if header.kind == KIND_DATA:
            if header.vc not in DATA_VCS:
                raise ValueError(f"a data packet needs a data VC {DATA_VCS}, got {header.vc}")
            if len(payload) != self.fmt.packet_flits:
                raise ValueError(
                    f"a data packet carries exactly {self.fmt.packet_flits} payload flits "
                    f"(senders pad the last one), got {len(payload)}"
                )
            vc = header.vc
        else:
            if payload:
                raise ValueError("a control packet is one flit and carries no payload")
            vc = VC_CTRL
        for value in payload:
            if not 0 <= value < (1 << self.data_bits):
                raise ValueError(f"payload {value:#x} does not fit in {self.data_bits} bits")
        if not self.can_start(vc):
            raise ValueError(f"no credit left on VC {vc}: wait for one before sending")
        self.credits[vc] -= 1
        pkt = self.pkt[vc]
        self.pkt[vc] = (pkt + 1) % PKT_MOD
        words = [header.to_bits(), *payload]
        return [
            self.link.flit(w, head=i == 0, last=i == len(words) - 1, vc=vc, pkt=pkt)
            for i, w in enumerate(words)
        ]

    def sent(self, flit: LinkFlit, now: int) -> None:
        """``flit`` (of this sender) went on the link in cycle ``now``."""
        self.last_sent[flit.vc] = now
        if flit.head:
            self.inside[flit.vc] = not flit.last
        elif flit.last:
            self.inside[flit.vc] = False

    def sync_due(self, vc: int, now: int) -> bool:
        """A sync should go out on ``vc`` in cycle ``now``: no credit left, no packet half
        sent, and nothing sent on the VC for ``sync_interval`` cycles."""
        last = self.last_sent[vc]
        quiet = last is None or now - last >= sync_interval(self.fmt)
        return self.credits[vc] == 0 and not self.inside[vc] and quiet

    def sync_flit(self, vc: int) -> LinkFlit:
        """The credit-sync symbol of ``vc``: its next ``pkt``; spends no credit."""
        _check_vc(vc)
        return self.link.flit(0, vc=vc, pkt=self.pkt[vc], sync=True)

    def credit(self, vc: int, n: int = 1) -> None:
        """``n`` packet slots of ``vc`` freed at the far end."""
        _check_vc(vc)
        if self.credits[vc] + n > self._depth(vc):
            raise ValueError(
                f"VC {vc}: {n} credit(s) back would exceed the buffer's {self._depth(vc)} slots"
            )
        self.credits[vc] += n


@dataclass
class _Open:
    """The packet a VC's reader is filling: ``header`` None when its head failed its CRC or
    was lost (``headless``: its flits were reported dropped one by one)."""

    header: Header | None
    headless: bool = False
    flits: list[tuple[int, bool]] = field(default_factory=list)


@dataclass
class LinkReceiver:
    """The reader rules of a link's receiving end (module docstring) for flits of
    ``data_bits`` data bits. ``timeout`` is its tail timeout: ``tail_timeout(fmt)`` (the
    switch's input ports) unless given; an NPU reading a switch's link waits longer
    (model/packet/recovery.py ``npu_tail_timeout``: a switch forwards a packet with gaps of
    up to its own input's timeout)."""

    fmt: PacketFormat
    data_bits: int
    timeout: int | None = None
    last_pkt: list[int] = field(init=False)
    open: list[_Open | None] = field(init=False)
    #: the cycle flits arrive in; None until the first ``tick``: no tail timeout
    now: int | None = field(init=False, default=None)
    #: per VC: the cycle of the last flit (None: none yet), its ``pkt``, and whether late
    #: flits of the packet before a silence are being dropped
    arrived: list[int | None] = field(init=False)
    arrived_pkt: list[int] = field(init=False)
    dropping_late: list[bool] = field(init=False)

    def __post_init__(self) -> None:
        self.link = self.fmt.link(self.data_bits)
        if self.timeout is None:
            self.timeout = tail_timeout(self.fmt)
        elif self.timeout < 1:
            raise InputError(f"the tail timeout must be >= 1 cycle, got {self.timeout}")
        # The sender's first packet carries pkt 0, so "the one before" is -1 mod 16.
        self.last_pkt = [PKT_MOD - 1] * N_VCS
        self.open = [None] * N_VCS
        self.arrived = [None] * N_VCS
        self.arrived_pkt = [PKT_MOD - 1] * N_VCS
        self.dropping_late = [False] * N_VCS

    def tick(self, now: int) -> list[LinkEvent]:
        """Set the clock to cycle ``now`` (flits pushed from here on arrive in it) and end
        the packets whose VC is silent (``_silent``)."""
        if self.now is not None and now < self.now:
            raise ValueError(f"the clock runs forward: cycle {now} after {self.now}")
        self.now = now
        events: list[LinkEvent] = []
        for vc in DATA_VCS:
            if self.open[vc] is not None and self._silent(vc):
                events += self._close(vc)
        return events

    def _silent(self, vc: int) -> bool:
        """At least ``tail_timeout`` cycles without a flit on ``vc`` between its last flit
        and ``now`` (never without a clock)."""
        if self.now is None:
            return False
        last = self.arrived[vc]
        return last is None or self.now - last > self.timeout

    def push(self, flit: LinkFlit) -> list[LinkEvent]:
        """Read one flit; the events it causes, in link order."""
        _check_vc(flit.vc)
        vc = flit.vc
        events: list[LinkEvent] = []
        if flit.sync:
            return self._sync(flit)
        if vc == VC_CTRL:
            events += self._lost_before(flit)
            if self.link.good(flit):
                events.append(Control(flit.header))
            else:
                events.append(Dropped(vc, DROP_BAD_CONTROL))
            events.append(Credit(vc, 1))
            return events
        # (``tick`` has already ended the packet open on a silent VC.)
        silent = self._silent(vc)
        # A body flit of the packet that was open when the VC fell silent arrives late; it and
        # the rest of its packet are dropped (the RTL drops them before its FIFO).
        late = (
            not flit.head
            and flit.pkt == self.arrived_pkt[vc]
            and (silent or self.dropping_late[vc])
        )
        self.arrived[vc], self.arrived_pkt[vc] = self.now, flit.pkt
        self.dropping_late[vc] = late
        if late:
            return events + [Dropped(vc, DROP_ORPHAN)]
        if flit.head:
            if self.open[vc] is not None:
                events += self._close(vc)
            events += self._lost_before(flit)
            self.open[vc] = _Open(flit.header if self.link.good(flit) else None)
            if flit.last:  # a head that is also last: a packet with no payload, padded
                events += self._close(vc)
            return events
        if self.open[vc] is not None and flit.pkt != self.last_pkt[vc]:
            # The flit is another packet's (its head was lost): the open packet ends short.
            events += self._close(vc)
        pending = self.open[vc]
        if pending is None:
            if flit.pkt != (self.last_pkt[vc] + 1) % PKT_MOD:
                return events + [Dropped(vc, DROP_ORPHAN)]
            # The next packet, arriving without its head: counted now, credited at its end.
            self.last_pkt[vc] = flit.pkt
            pending = self.open[vc] = _Open(None, headless=True)
        full = len(pending.flits) + 1 == self.fmt.packet_flits
        pending.flits.append((flit.data, not self.link.good(flit) or (full and not flit.last)))
        if pending.headless:
            events.append(Dropped(vc, DROP_ORPHAN))
        if flit.last or full:
            events += self._close(vc)
        return events

    def _sync(self, flit: LinkFlit) -> list[LinkEvent]:
        """A sync: the packet open on its VC ends; those between the last one counted and
        the sync's ``pkt`` were lost whole (module docstring)."""
        vc = flit.vc
        events = self._close(vc) if vc != VC_CTRL and self.open[vc] is not None else []
        events += self._lost_before(flit)
        before = (flit.pkt - 1) % PKT_MOD
        self.last_pkt[vc] = before
        if vc != VC_CTRL:
            self.arrived[vc], self.arrived_pkt[vc] = self.now, before
            self.dropping_late[vc] = False
        return events

    def _lost_before(self, flit: LinkFlit) -> list[LinkEvent]:
        """Credits of the packets lost whole before this head flit (its ``pkt`` shows them)."""
        lost = (flit.pkt - self.last_pkt[flit.vc] - 1) % PKT_MOD
        self.last_pkt[flit.vc] = flit.pkt
        return [Credit(flit.vc, lost)] if lost else []

    def _close(self, vc: int) -> list[LinkEvent]:
        pending = self.open[vc]
        assert pending is not None
        self.open[vc] = None
        if pending.headless:
            return [Credit(vc, 1)]
        if pending.header is None:
            return [Dropped(vc, DROP_BAD_HEAD), Credit(vc, 1)]
        missing = self.fmt.packet_flits - len(pending.flits)
        flits = pending.flits + [(0, True)] * missing
        return [Packet(vc, pending.header, flits), Credit(vc, 1)]
