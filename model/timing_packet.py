"""What packet mode costs, as a timing card states it: measured values, or defaults derived
from the packet format and the circuit timing until co-simulation measures them.

A timing card (model/timing_card.py) may carry these optional fields; each one it lacks is
*derived* here, and reported as derived (``PacketCosts.derived``, the card's JSON ``derived``
object). The packet co-simulation fills measured values into the same fields.

=================  ==========================================================================
field              meaning
=================  ==========================================================================
packet_flits       payload flits of a data packet (after its header flit)
data_depth         packets each data VC of an input port buffers (its credits)
header_flits       flits of header per data packet (the header is the packet's first flit)
preempt_cycles     cycles a waiting higher-priority phase waits before it runs: the packet in
                   flight finishes, the interconnect drains, the slot is copied
credit_rtt_cycles  cycles from a sender spending a credit to getting it back
vc_share           share of its rate alone that the served phase keeps while a lower-priority
                   phase waits on the same switch
fault_rate         per-flit fault probability (drops and corruption) assumed on every link
retry_cycles       link cycles one faulted flit costs its link (link-level retry: the
                   round trip to the NAK and the flits sent again)
=================  ==========================================================================

Derived defaults (packet format: model/packet/format.py ``PacketFormat``; circuit timing:
the card's own fields):

* packet_flits, data_depth: ``PacketFormat()``'s (8 payload flits: the paper's 4 KB packets
  of 512 B flits; 4 packets per data VC).
* header_flits = 1: every data packet is one header flit followed by its payload
  (docs/switch-rtl.md, "Packet mode"), so the header overhead is 1 / (packet_flits + 1).
* preempt_cycles = (header_flits + packet_flits) + latency_cycles + (slot_write_cycles + 1):
  the switch stops committing at a packet boundary, so the worst packet in flight is a
  whole data packet (one flit per cycle); then the interconnect drains (its pipeline
  latency); then the new slot's configuration is copied into the active register, one word
  per cycle plus one (the control unit's ``n_words + 1``; slot_write_cycles is the number of
  words of one slot, written one per cycle).
* credit_rtt_cycles = data_depth * (header_flits + packet_flits): the round trip the
  design sizes the buffers to cover at full rate (PacketFormat: "4 covers this switch's
  credit round trip"); an upper bound until measured. A larger measured round trip throttles
  a VC to buffer / round trip (``credit_rate``).
* vc_share = 1.0: the interconnect serves one phase at a time, so the waiting phase's
  packets are assumed to stay at their NPUs and the served phase's VC alone streams through
  the switch. Co-simulation measures it (sim/verify/packet/timing.py: the served MP phase's
  payload rate with a DP phase competing for the same switch, over its rate alone); it is
  below 1 when an NPU's link also carries the waiting phase's packets until their credits
  run out. A phase served alone does not pay it: it keeps its rate alone. Control
  packets (ACK/NACK, one flit between any two data flits when there is one) are neglected
  either way: a cumulative ACK every 16 data packets is < 1 % of a link
  (paper §5.4).
* fault_rate = 0: the paper assumes reliable links and gives no error rate; a card (or a
  user) states one to ask what faults cost.
* retry_cycles = 2 * RETRY_ROUND_TRIP: a faulted flit is replayed from the receiving end's
  NAK, one round trip (2 cycles: a flit registered, its NAK registered) after it, and the
  flits sent meanwhile go again (model/packet/link_retry.py); co-simulation measures it
  (sim/verify/packet/timing.py). Links recover by themselves, so a fault costs its link
  ``retry_cycles`` of every ``1 / fault_rate`` flits whatever the fabric: the training
  model charges ``retry_fraction`` to every fabric's links, like the header
  (fredfab.model.training.packet_rate), not to FRED's phase rule alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from fredfab.model.errors import InputError
from fredfab.model.packet.format import PacketFormat

#: The optional packet-mode fields of a timing card, in JSON order.
PACKET_FIELDS = (
    "packet_flits",
    "data_depth",
    "header_flits",
    "preempt_cycles",
    "credit_rtt_cycles",
    "vc_share",
    "fault_rate",
    "retry_cycles",
)

#: One line per field: what it means (tables, --help, the card's documentation).
MEANINGS = {
    "packet_flits": "payload flits of a data packet, after its header flit",
    "data_depth": "packets each data VC of an input port buffers (its credits)",
    "header_flits": "header flits per data packet",
    "preempt_cycles": "cycles a waiting higher-priority phase waits for the switch",
    "credit_rtt_cycles": "cycles from spending a credit to getting it back",
    "vc_share": "share of its rate alone a served phase keeps while a lower one waits",
    "fault_rate": "per-flit fault probability assumed on every link",
    "retry_cycles": "link cycles one faulted flit costs (link-level retry)",
}

#: A flit's round trip on a link with retry: the flit registered, the NAK registered.
RETRY_ROUND_TRIP = 2

#: Integer fields, and the bounds a card's value must respect.
_INTS = {"packet_flits": (1, 64), "data_depth": (1, 15), "header_flits": (0, 64)}


class PacketCostError(InputError):
    """A packet-mode field of a timing card out of its range."""


@dataclass(frozen=True)
class PacketCosts:
    """The packet-mode costs that apply: every field resolved, ``derived`` naming those that
    were not given (so derived, see the module docstring)."""

    packet_flits: int
    data_depth: int
    header_flits: int
    preempt_cycles: float
    credit_rtt_cycles: float
    vc_share: float
    fault_rate: float = 0.0
    retry_cycles: float = 2 * RETRY_ROUND_TRIP
    derived: tuple[str, ...] = ()

    @property
    def data_packet_flits(self) -> int:
        """Flits of a data packet on the link: header + payload."""
        return self.header_flits + self.packet_flits

    @property
    def header_overhead(self) -> float:
        """Share of a link's flits that are headers: 1/(packet_flits+1) by default."""
        return self.header_flits / self.data_packet_flits

    @property
    def credit_rate(self) -> float:
        """Fraction of line rate the credits allow one VC: 1 while the buffer (data_depth
        packets) covers the credit round trip, buffer / round trip beyond."""
        cover = self.data_depth * self.data_packet_flits
        return min(1.0, cover / self.credit_rtt_cycles)

    @property
    def header_payload_fraction(self) -> float:
        """Fraction of a link's flits that carry payload, headers aside: 1 - header_overhead
        (8/9 by default). Every fabric's links carry these packets, so the training model
        charges this share to every fabric (fredfab.model.training.packet_rate)."""
        return 1.0 - self.header_overhead

    @property
    def retry_fraction(self) -> float:
        """Fraction of a link's cycles left to packets when every faulted flit costs the
        link ``retry_cycles``: 1 / (1 + fault_rate * retry_cycles); 1 on reliable links."""
        return 1.0 / (1.0 + self.fault_rate * self.retry_cycles)

    @property
    def link_fraction(self) -> float:
        """Fraction of every link's rate that carries payload, on every fabric: the header's
        share times the retry fraction (the training model divides communication by it)."""
        return self.header_payload_fraction * self.retry_fraction

    @property
    def switch_fraction(self) -> float:
        """Fraction of a port's rate a FRED switch gives the served phase's VC at any time:
        the credit rate (1.0 by default); the switch's own part of payload_fraction. The VC
        share is not in it: it applies only while a lower phase waits (competing_share)."""
        return self.credit_rate

    @property
    def competing_share(self) -> float:
        """Share of its rate alone the served phase keeps while a lower-priority phase waits
        on the same switch: the card's vc_share (the training model's phase rule applies it
        only then, fredfab.model.training.phase_priority)."""
        return self.vc_share

    @property
    def payload_fraction(self) -> float:
        """Fraction of a port's line rate that carries payload of a phase served alone:
        header share times credit rate (8/9 by default); competing_share scales it while a
        lower phase waits."""
        return self.header_payload_fraction * self.credit_rate

    def to_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in PACKET_FIELDS} | {
            "header_overhead": self.header_overhead,
            "payload_fraction": self.payload_fraction,
            "retry_fraction": self.retry_fraction,
            "derived": list(self.derived),
        }


def check_packet_field(name: str, value: Any) -> None:
    """Raise PacketCostError unless ``value`` is allowed for the card field ``name``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PacketCostError(f"timing card field {name!r} must be a number, got {value!r}")
    if name in _INTS:
        lo, hi = _INTS[name]
        if not isinstance(value, int) or not lo <= value <= hi:
            raise PacketCostError(
                f"timing card field {name!r} must be an integer in [{lo}, {hi}], got {value!r}"
            )
    elif not math.isfinite(value) or value < 0:
        raise PacketCostError(f"timing card field {name!r} must be a finite number >= 0")
    elif name == "credit_rtt_cycles" and value == 0:
        raise PacketCostError("timing card field 'credit_rtt_cycles' must be > 0")
    elif name == "vc_share" and not 0 < value <= 1:
        raise PacketCostError(f"timing card field 'vc_share' must be in (0, 1], got {value!r}")
    elif name == "fault_rate" and not value < 1:
        raise PacketCostError(f"timing card field 'fault_rate' must be in [0, 1), got {value!r}")


def derive_packet_costs(
    given: dict[str, Any], latency_cycles: float, slot_write_cycles: float
) -> PacketCosts:
    """The costs with every field of ``given`` that is None (or absent) derived from the
    packet format and the card's circuit timing (module docstring)."""
    fmt = PacketFormat()
    v = {f: given.get(f) for f in PACKET_FIELDS}
    derived = tuple(f for f in PACKET_FIELDS if v[f] is None)
    if v["packet_flits"] is None:
        v["packet_flits"] = fmt.packet_flits
    if v["data_depth"] is None:
        v["data_depth"] = fmt.data_depth
    if v["header_flits"] is None:
        v["header_flits"] = 1
    packet = v["header_flits"] + v["packet_flits"]
    if v["preempt_cycles"] is None:
        v["preempt_cycles"] = packet + latency_cycles + slot_write_cycles + 1
    if v["credit_rtt_cycles"] is None:
        v["credit_rtt_cycles"] = v["data_depth"] * packet
    if v["vc_share"] is None:
        v["vc_share"] = 1.0
    if v["fault_rate"] is None:
        v["fault_rate"] = 0.0
    if v["retry_cycles"] is None:
        v["retry_cycles"] = 2 * RETRY_ROUND_TRIP
    return PacketCosts(**v, derived=derived)
