"""Packet and link-flit formats of the packet-mode switch: one definition for the RTL
(hw/packet/layouts.py builds its ``amaranth.lib.data`` layouts from these tables), the
endpoints and the benches.

Virtual channels (paper §5.4): three data channels, one per phase kind
of 3D parallelism, and one control channel for ACK/NACK. Priority when phases compete for
the interconnect: MP > PP > DP (the paper's rule).

Header (6 bytes, the paper's size), least significant bits first, in bits [0, 48) of the
first flit of every packet:

========  ====  =========================================================================
field     bits  meaning
========  ====  =========================================================================
vc        2     traffic class: the data VC of the phase (for ACK/NACK: of the acked flow)
kind      2     DATA, ACK or NACK
index     10    configuration slot of the phase; 0 = all unicast, routed by ``dst``
seq       16    sequence number of the packet in its stream (ACK/NACK: the one acked)
src       6     port that sent it (data: the sender; ACK/NACK: the receiver)
dst       6     destination port (unicast data; ACK/NACK of unicast: the original sender)
reserved  6     zero
========  ====  =========================================================================

Link flit (one per cycle per direction on a port; credit-based, so no ready wire):

========  =========  ==================================================================
field     bits       meaning
========  =========  ==================================================================
data      data bits  the flit's data (header in bits [0, 48) of a head flit)
head      1          first flit of a packet
last      1          last flit of a packet (a control packet is one flit: head and last)
vc        2          the virtual channel whose buffer the flit goes to
pkt       4          per-VC packet counter of the sender, on head flits: a gap shows
                     packets lost whole, whose credits the receiver then returns
crc       8          CRC-8 (polynomial 0x07) of ``data``; ``crc ^ STOMP`` marks a flit
                     known bad (a switch forwarding a damaged packet cut-through)
========  =========  ==================================================================

``head``, ``last``, ``vc`` and ``pkt`` are link control symbols: a real link protects them
with their own code, and the fault model does not corrupt them (it drops whole flits or
flips data bits; docs/switch-rtl.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from fredfab.model.errors import InputError

VC_MP, VC_DP, VC_PP, VC_CTRL = 0, 1, 2, 3
DATA_VCS = (VC_MP, VC_DP, VC_PP)
N_VCS = 4
VC_NAMES = {VC_MP: "mp", VC_DP: "dp", VC_PP: "pp", VC_CTRL: "ctrl"}
#: Highest priority first: MP > PP > DP (paper §5.4).
PRIORITY = (VC_MP, VC_PP, VC_DP)

KIND_DATA, KIND_ACK, KIND_NACK = 0, 1, 2
KIND_NAMES = {KIND_DATA: "data", KIND_ACK: "ack", KIND_NACK: "nack"}

#: The configuration index meaning "all unicast, routed online by destination".
UNICAST_INDEX = 0

HEADER_FIELDS: tuple[tuple[str, int], ...] = (
    ("vc", 2),
    ("kind", 2),
    ("index", 10),
    ("seq", 16),
    ("src", 6),
    ("dst", 6),
    ("reserved", 6),
)
HEADER_BITS = sum(w for _, w in HEADER_FIELDS)  # 48 = the paper's 6 bytes
SEQ_BITS = dict(HEADER_FIELDS)["seq"]
SEQ_MOD = 1 << SEQ_BITS

PKT_BITS = 4
CRC_BITS = 8
CRC_POLY = 0x07  # CRC-8 (ITU / SMBus polynomial x^8 + x^2 + x + 1), init 0, no reflection
STOMP = 0xFF


def link_fields(data_bits: int) -> tuple[tuple[str, int], ...]:
    """The link flit's fields, least significant first."""
    return (
        ("data", data_bits),
        ("head", 1),
        ("last", 1),
        ("vc", 2),
        ("pkt", PKT_BITS),
        ("crc", CRC_BITS),
    )


def _pack(fields: tuple[tuple[str, int], ...], values: dict[str, int]) -> int:
    bits, lsb = 0, 0
    for name, width in fields:
        value = int(values.get(name, 0))
        if not 0 <= value < (1 << width):
            raise ValueError(f"{name} = {value} does not fit in {width} bits")
        bits |= value << lsb
        lsb += width
    return bits


def _unpack(fields: tuple[tuple[str, int], ...], bits: int) -> dict[str, int]:
    out, lsb = {}, 0
    for name, width in fields:
        out[name] = (bits >> lsb) & ((1 << width) - 1)
        lsb += width
    return out


@dataclass(frozen=True)
class Header:
    vc: int
    kind: int = KIND_DATA
    index: int = UNICAST_INDEX
    seq: int = 0
    src: int = 0
    dst: int = 0

    def to_bits(self) -> int:
        return _pack(HEADER_FIELDS, self.__dict__)

    @classmethod
    def from_bits(cls, bits: int) -> Header:
        values = _unpack(HEADER_FIELDS, bits)
        values.pop("reserved")
        return cls(**values)


@dataclass(frozen=True)
class LinkFlit:
    data: int
    head: bool = False
    last: bool = False
    vc: int = 0
    pkt: int = 0
    crc: int = 0

    def to_bits(self, data_bits: int) -> int:
        return _pack(link_fields(data_bits), {**self.__dict__})

    @classmethod
    def from_bits(cls, bits: int, data_bits: int) -> LinkFlit:
        v = _unpack(link_fields(data_bits), bits)
        return cls(v["data"], bool(v["head"]), bool(v["last"]), v["vc"], v["pkt"], v["crc"])

    @property
    def crc_ok(self) -> bool:
        return self.crc == crc8(self.data, None)

    @property
    def header(self) -> Header:
        return Header.from_bits(self.data & ((1 << HEADER_BITS) - 1))


def crc8(data: int, width: int | None) -> int:
    """CRC-8 of ``data`` taken as a ``width``-bit word, most significant bit first.

    Init 0 and no final XOR make it linear in the data bits, so the RTL computes it as one
    XOR tree per CRC bit (``crc_matrix``); zero data has CRC 0. ``width`` only fixes how
    many leading zero bits are fed, which do not change a CRC with init 0, so ``None``
    (any width) gives the same value."""
    crc = 0
    for k in range(max(data.bit_length(), 1) - 1, -1, -1):
        top = ((crc >> (CRC_BITS - 1)) & 1) ^ ((data >> k) & 1)
        crc = (crc << 1) & ((1 << CRC_BITS) - 1)
        if top:
            crc ^= CRC_POLY
    return crc


def crc_matrix(width: int) -> list[int]:
    """Row j: the mask of data bits whose XOR is CRC bit j (the CRC is linear)."""
    rows = [0] * CRC_BITS
    for bit in range(width):
        c = crc8(1 << bit, width)
        for j in range(CRC_BITS):
            if (c >> j) & 1:
                rows[j] |= 1 << bit
    return rows


def seq_add(seq: int, n: int) -> int:
    return (seq + n) % SEQ_MOD


def seq_before(a: int, b: int) -> bool:
    """``a`` comes strictly before ``b`` in serial-number order (RFC 1982): streams stay far
    shorter than half the sequence space ahead of any receiver (the window is small)."""
    return 0 < (b - a) % SEQ_MOD < SEQ_MOD // 2


#: Inclusive bounds of PacketFormat's fields. The pkt counter must tell a gap of lost
#: packets from a wrap, so no more than 2**PKT_BITS - 1 packets are outstanding per VC.
FORMAT_LIMITS: dict[str, tuple[int, int]] = {
    "packet_flits": (1, 64),
    "data_depth": (1, (1 << PKT_BITS) - 1),
    "ctrl_depth": (1, (1 << PKT_BITS) - 1),
}


@dataclass(frozen=True)
class PacketFormat:
    """Packet sizes and buffer depths of packet mode.

    packet_flits -- payload flits of a data packet, after its header flit. The paper's 4 KB
                    data packets of 512 B flits are 8 flits; every data packet is full
                    (senders pad the last one), so a receiver knows where a packet ends
                    even when its last flit is lost.
    data_depth   -- packets each data VC of an input port buffers (its credits). The paper
                    sizes 24 KB = 6 packets at link bandwidth x round trip; 4 covers this
                    switch's credit round trip at full rate (docs/switch-rtl.md).
    ctrl_depth   -- control packets (one flit each) the control VC buffers; the paper's
                    2 KB of 512 B flits is 4.
    """

    packet_flits: int = 8
    data_depth: int = 4
    ctrl_depth: int = 4

    def __post_init__(self) -> None:
        for name, (low, high) in FORMAT_LIMITS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise InputError(f"{name} must be an integer >= {low} and <= {high}, got {value!r}")

    @property
    def data_packet_flits(self) -> int:
        """Flits of a data packet on the link: header + payload."""
        return self.packet_flits + 1
