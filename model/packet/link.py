"""Link framing and credits of packet mode: the reference of what a sender puts on a link and
of how a receiver reads it back (docs/switch-rtl.md, "Ports" and "Input port").

``LinkSender`` is an NPU's (or a test's) transmitter: it frames packets into flits and holds
one credit per packet slot of the far end's buffer. ``LinkReceiver`` is the input port's
reader rules, also what an NPU endpoint runs on the switch's tx link. Both work per virtual
channel; flits of different VCs may interleave on one link.

Repair keeps one packet in = one packet out whatever the link lost, so that every buffer slot
the sender paid for comes back as exactly one credit:

* a head flit with a good CRC opens a data packet; its ``pkt`` counter shows how many packets
  of its VC were lost whole before it, whose credits are returned at once;
* a data packet takes body flits while it lacks flits; a body flit with a bad CRC is kept,
  marked bad;
* an early ``last``, or a head flit arriving while the packet lacks flits, ends the packet,
  the missing flits padded as ``(0, bad)``;
* the packet's ``packet_flits``-th body flit ends it; if that flit lacks ``last`` the sender's
  framing disagrees with the format, so the flit is marked bad (a choice: it cannot be told
  from a damaged flit) and any body flits after it, having no packet, are dropped;
* the sender stamps its packet's ``pkt`` on every flit: a body flit whose ``pkt`` is not its
  open packet's belongs to a packet whose head was lost; it ends the open packet short and,
  like every body flit with no open packet, is dropped;
* a head flit with a bad CRC has no usable header: its packet (its body flits, framed by the
  same rules) is dropped when it ends; its ``pkt`` is still trusted, since ``pkt`` is a link
  control symbol that the link protects separately (model/packet/format.py);
* every flit of the control VC is one control packet: delivered when its CRC is good,
  dropped when bad; one credit each.

A packet is emitted when its end is known (``last``, its flit count, or the next head of its
VC), so a stream whose final packet lost its tail leaves that packet open. The RTL emits a
packet when the control unit commits it; content (header, flits, bad flags) and credit counts
are the same, only timing differs.

A limit of these rules: the credits of packets lost whole come back only at the next head
of their VC, and a packet whose tail was lost ends only then. If every packet the sender's
credits allow is lost whole (the last one possibly keeping its head), no head can follow and
the VC stalls: probability about drop_rate ** (data_depth * (packet_flits + 1)).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .format import (
    DATA_VCS,
    HEADER_BITS,
    KIND_DATA,
    N_VCS,
    PKT_BITS,
    VC_CTRL,
    Header,
    LinkFlit,
    PacketFormat,
    crc8,
)

PKT_MOD = 1 << PKT_BITS

#: Reasons of ``Dropped`` events.
DROP_BAD_HEAD = "bad head"  # a whole data packet whose head flit failed its CRC
DROP_ORPHAN = "orphan body flit"  # one body flit whose packet's head was lost
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
    """Frames packets into link flits and keeps the credits of the far end's buffers."""

    fmt: PacketFormat
    data_bits: int
    credits: list[int] = field(init=False)
    pkt: list[int] = field(init=False)

    def __post_init__(self) -> None:
        if self.data_bits < HEADER_BITS:
            raise ValueError(f"flits need at least {HEADER_BITS} data bits, got {self.data_bits}")
        self.credits = [self._depth(vc) for vc in range(N_VCS)]
        self.pkt = [0] * N_VCS

    def _depth(self, vc: int) -> int:
        return self.fmt.ctrl_depth if vc == VC_CTRL else self.fmt.data_depth

    def can_start(self, vc: int) -> bool:
        _check_vc(vc)
        return self.credits[vc] > 0

    def packet_flits(self, header: Header, payload: list[int]) -> list[LinkFlit]:
        """The flits of one packet, spending a credit of its VC.

        A data packet (kind DATA) goes on ``header.vc``: a head flit with the header in
        bits [0, 48), then exactly ``packet_flits`` payload flits, ``last`` on the final one.
        An ACK/NACK is one flit, head and last, on the control VC, with an empty payload."""
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
            LinkFlit(
                data=w,
                head=i == 0,
                last=i == len(words) - 1,
                vc=vc,
                pkt=pkt,
                crc=crc8(w, self.data_bits),
            )
            for i, w in enumerate(words)
        ]

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
    """The packet a VC's reader is filling: ``header`` None when its head failed its CRC."""

    header: Header | None
    flits: list[tuple[int, bool]] = field(default_factory=list)


@dataclass
class LinkReceiver:
    """The reader rules of a link's receiving end (module docstring)."""

    fmt: PacketFormat
    last_pkt: list[int] = field(init=False)
    open: list[_Open | None] = field(init=False)

    def __post_init__(self) -> None:
        # The sender's first packet carries pkt 0, so "the one before" is -1 mod 16.
        self.last_pkt = [PKT_MOD - 1] * N_VCS
        self.open = [None] * N_VCS

    def push(self, flit: LinkFlit) -> list[LinkEvent]:
        """Read one flit; the events it causes, in link order."""
        _check_vc(flit.vc)
        vc = flit.vc
        events: list[LinkEvent] = []
        if vc == VC_CTRL:
            events += self._lost_before(flit)
            if flit.crc_ok:
                events.append(Control(flit.header))
            else:
                events.append(Dropped(vc, DROP_BAD_CONTROL))
            events.append(Credit(vc, 1))
            return events
        if flit.head:
            if self.open[vc] is not None:
                events += self._close(vc)
            events += self._lost_before(flit)
            self.open[vc] = _Open(flit.header if flit.crc_ok else None)
            if flit.last:  # a head that is also last: a packet with no payload, padded
                events += self._close(vc)
            return events
        pending = self.open[vc]
        if pending is None or flit.pkt != self.last_pkt[vc]:
            # No open packet, or the flit is another packet's (its head was lost): the open
            # packet ends short and the flit has no packet.
            if pending is not None:
                events += self._close(vc)
            return events + [Dropped(vc, DROP_ORPHAN)]
        full = len(pending.flits) + 1 == self.fmt.packet_flits
        pending.flits.append((flit.data, not flit.crc_ok or (full and not flit.last)))
        if flit.last or full:
            events += self._close(vc)
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
        if pending.header is None:
            return [Dropped(vc, DROP_BAD_HEAD), Credit(vc, 1)]
        missing = self.fmt.packet_flits - len(pending.flits)
        flits = pending.flits + [(0, True)] * missing
        return [Packet(vc, pending.header, flits), Credit(vc, 1)]
