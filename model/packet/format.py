"""Packet and link-flit formats of the packet-mode switch: one definition for the RTL
(hw/packet/layouts.py builds its ``amaranth.lib.data`` layouts from these tables), the
endpoints, the benches and the manifest (model/packet/protocol.py describes it there).

Virtual channels (paper §5.4): three data channels, one per phase kind
of 3D parallelism, and one control channel for ACK/NACK. Priority when phases compete for
the interconnect: MP > PP > DP (the paper's rule).

Header (6 bytes, the paper's size), least significant bits first, in bits [0, 48) of the
first flit of every packet:

========  =====  ========================================================================
field     bits   meaning
========  =====  ========================================================================
vc        0-1    traffic class: the data VC of the phase (ACK/NACK/REWIND: of the flow)
kind      2-3    DATA, ACK, NACK or REWIND
index     4-13   configuration slot of the phase; 0 = all unicast, routed by ``dst``
seq       14-29  sequence number of the packet in its stream (ACK/NACK/REWIND: the one named)
src       30-35  data: the sending port; ACK/NACK: the receiver's port; REWIND: the input
                 port where the switch saw the gap
dst       36-41  unicast data: the destination port; ACK/NACK of unicast: the original
                 sender; otherwise 0
reserved  42-47  zero
========  =====  ========================================================================

Control packets: an ACK for ``seq = k`` says "I have every packet before k"; a NACK for k
says the same and "send k again"; both come from a receiver (``src``) and name its flow
(``vc``, ``index``; unicast: ``dst``, the sender). A REWIND for k comes from the switch to
the senders of a configured flow: "go back to k" (it says nothing of what receivers have).

Link flit (one per cycle per direction on a port; credit-based, so no ready wire), least
significant first:

========  ==========  =================================================================
field     bits        meaning
========  ==========  =================================================================
data      data bits   the flit's data (header in bits [0, 48) of a head flit)
head      1           first flit of a packet
last      1           last flit of a packet (a control packet is one flit: head and last)
vc        2           the virtual channel whose buffer the flit goes to
pkt       4           per-VC packet counter of the sender: 0 for the first packet after
                      reset, +1 (mod 16) per packet, the same on every flit of a packet;
                      a gap shows packets lost whole, whose credits the receiver returns
sync      1           a credit-sync symbol, not a packet: ``pkt`` is the sender's *next*
                      counter on ``vc`` (model/packet/link.py); data zero, no credit spent
bad       1           the sender knows the flit's data is bad (a switch forwarding a
                      packet cut-through that was damaged or cut short on its way in)
lseq      6           link sequence number of the flit, for link-level retry
                      (model/packet/link_retry.py)
crc       8, 16, 32   the CRC of ``data`` (``Crc``)
========  ==========  =================================================================

``head``, ``last``, ``vc``, ``pkt``, ``sync``, ``bad`` and ``lseq`` are link control
symbols: a real link protects them with their own code, so the CRC covers ``data`` only and
the fault model does not corrupt them (it drops whole flits or flips data bits;
docs/switch-rtl.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from fredfab.model.errors import InputError

VC_MP, VC_DP, VC_PP, VC_CTRL = 0, 1, 2, 3
DATA_VCS = (VC_MP, VC_DP, VC_PP)
N_VCS = 4
VC_NAMES = {VC_MP: "mp", VC_DP: "dp", VC_PP: "pp", VC_CTRL: "ctrl"}
#: Highest priority first: MP > PP > DP (paper §5.4).
PRIORITY = (VC_MP, VC_PP, VC_DP)

KIND_DATA, KIND_ACK, KIND_NACK, KIND_REWIND = 0, 1, 2, 3
KIND_NAMES = {KIND_DATA: "data", KIND_ACK: "ack", KIND_NACK: "nack", KIND_REWIND: "rewind"}

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
PKT_MOD = 1 << PKT_BITS
#: Bits of a flit's link sequence number (model/packet/link_retry.py).
LSEQ_BITS = 6


def positions(fields: tuple[tuple[str, int], ...]) -> dict[str, dict[str, int]]:
    """``{name: {"lsb": ..., "width": ...}}`` of fields packed least significant first."""
    out, lsb = {}, 0
    for name, width in fields:
        out[name] = {"lsb": lsb, "width": width}
        lsb += width
    return out


# -- CRC -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Crc:
    """A CRC of ``bits`` bits with generator ``poly`` (its x^bits term implied), computed
    most significant data bit first, register preset to all ones, no reflection and no
    final XOR: the check of a flit's ``data`` field.

    Every polynomial here is divisible by x + 1, so every odd number of flipped bits is
    caught; ``hd_bits`` is the longest data word (bits) on which every 2- and 3-bit error
    is caught too (Hamming distance 4 at least), from the order of the polynomial's
    other factor (``tests/model/packet/test_crc.py`` checks the weight-2 and weight-4
    claims it makes for the widths it uses)."""

    bits: int
    poly: int
    name: str
    hd_bits: int

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1

    @property
    def init(self) -> int:
        return self.mask

    @cached_property
    def _table(self) -> tuple[int, ...]:
        top, table = 1 << (self.bits - 1), []
        for byte in range(256):
            c = byte << (self.bits - 8)
            for _ in range(8):
                c = ((c << 1) ^ self.poly) if c & top else (c << 1)
            table.append(c & self.mask)
        return tuple(table)

    def value(self, data: int, width: int) -> int:
        """The CRC of ``data`` taken as a ``width``-bit word (its bit width-1 first)."""
        return self.step(self.init, data, width)

    def step(self, crc: int, data: int, width: int) -> int:
        """The register after ``width`` more bits (``data``, most significant first) from
        ``crc``: a CRC over several words is ``step`` word after word from ``init``."""
        if data >> width:
            raise ValueError(f"data {data:#x} does not fit in {width} bits")
        shift = self.bits - 8
        head = width % 8
        for k in range(width - 1, width - head - 1, -1):  # the bits above whole bytes
            top = ((crc >> (self.bits - 1)) ^ (data >> k)) & 1
            crc = ((crc << 1) & self.mask) ^ (self.poly if top else 0)
        table = self._table
        for k in range(width - head - 8, -1, -8):
            byte = (data >> k) & 0xFF
            crc = ((crc << 8) & self.mask) ^ table[((crc >> shift) ^ byte) & 0xFF]
        return crc

    def step_matrix(self, width: int) -> list[int]:
        """``step`` as XOR trees: new register bit j = parity((data | crc << width) &
        rows[j]) for ``width``-bit data (``step`` is linear in the register and the data)."""
        rows = [0] * self.bits
        for b in range(width + self.bits):
            c = self.step((1 << b) >> width, (1 << b) & ((1 << width) - 1), width)
            for j in range(self.bits):
                if (c >> j) & 1:
                    rows[j] |= 1 << b
        return rows

    def matrix(self, width: int) -> tuple[list[int], int]:
        """The CRC as XOR trees: ``(rows, const)`` with CRC bit j = parity(data & rows[j])
        ^ bit j of ``const`` (the CRC of zero data: the preset's share)."""
        const = self.value(0, width)
        rows = [0] * self.bits
        for b in range(width):
            c = self.value(1 << b, width) ^ const
            for j in range(self.bits):
                if (c >> j) & 1:
                    rows[j] |= 1 << b
        return rows, const


#: The checks a link may carry (``PacketFormat.crc_bits``). CRC-8: x^8 + x^2 + x + 1 = (x +
#: 1)(x^7 + x^6 + x^5 + x^4 + x^3 + x^2 + 1), whose primitive factor of period 127 gives
#: distance 4 up to 119 data bits. CRC-16/CCITT (ITU-T V.41): (x + 1) times a primitive of
#: degree 15, distance 4 up to 32,751 bits. CRC-32C (Castagnoli, Braeuer and Herrmann,
#: IEEE Trans. Commun. 41(6), 1993; iSCSI, RFC 3385): distance 4 up to 2^31 bits and 6 up to
#: 5,243 (Koopman, "32-bit cyclic redundancy codes for Internet applications", DSN 2002),
#: so every error of up to 5 bits in a 512 B flit.
CRCS: dict[int, Crc] = {
    8: Crc(8, 0x07, "CRC-8 (x^8+x^2+x+1)", 119),
    16: Crc(16, 0x1021, "CRC-16/CCITT (x^16+x^12+x^5+1)", 32_751),
    32: Crc(32, 0x1EDC6F41, "CRC-32C (Castagnoli)", (1 << 31) - 1),
}

#: The automatic choice (``crc_bits = 0``), by data bits: CRC-8 up to the project's default
#: 64-bit flit (distance 4 there, an eighth of the data), CRC-16 up to 512 bits, CRC-32C
#: beyond (distance 6 on the paper's 512 B flits). A choice, stated in the manifest; a
#: format can name any of the three instead.
AUTO_CRC_UP_TO = ((64, 8), (512, 16))


def crc_for(data_bits: int) -> Crc:
    """The CRC a link of ``data_bits`` data bits carries when the format leaves it to the
    width: CRC-8 up to 64 bits, CRC-16 up to 512, CRC-32C beyond (the paper's 512 B flits)."""
    for limit, bits in AUTO_CRC_UP_TO:
        if data_bits <= limit:
            return CRCS[bits]
    return CRCS[32]


# -- header and link flit ------------------------------------------------------------------


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
    sync: bool = False
    bad: bool = False
    lseq: int = 0

    @property
    def header(self) -> Header:
        return Header.from_bits(self.data & ((1 << HEADER_BITS) - 1))


@dataclass(frozen=True)
class LinkFormat:
    """The flits of one link: ``data_bits`` of data and the CRC that checks them."""

    data_bits: int
    crc: Crc

    @property
    def fields(self) -> tuple[tuple[str, int], ...]:
        """The link flit's fields, least significant first."""
        return (
            ("data", self.data_bits),
            ("head", 1),
            ("last", 1),
            ("vc", 2),
            ("pkt", PKT_BITS),
            ("sync", 1),
            ("bad", 1),
            ("lseq", LSEQ_BITS),
            ("crc", self.crc.bits),
        )

    @property
    def width(self) -> int:
        return sum(w for _, w in self.fields)

    def check(self, data: int) -> int:
        """The CRC a sender writes for ``data``."""
        return self.crc.value(data, self.data_bits)

    def ok(self, flit: LinkFlit) -> bool:
        """The flit's data passes its CRC."""
        return flit.crc == self.check(flit.data)

    def good(self, flit: LinkFlit) -> bool:
        """The flit's data can be used: its CRC passes and its sender did not mark it bad."""
        return not flit.bad and self.ok(flit)

    def encode(self, flit: LinkFlit) -> int:
        return _pack(self.fields, flit.__dict__)

    def decode(self, bits: int) -> LinkFlit:
        v = _unpack(self.fields, bits)
        return LinkFlit(
            v["data"],
            bool(v["head"]),
            bool(v["last"]),
            v["vc"],
            v["pkt"],
            v["crc"],
            bool(v["sync"]),
            bool(v["bad"]),
            v["lseq"],
        )

    def flit(self, data: int, **symbols) -> LinkFlit:
        """A flit of ``data`` with a good CRC and the given control symbols."""
        return LinkFlit(data, crc=self.check(data), **symbols)


def seq_add(seq: int, n: int) -> int:
    return (seq + n) % SEQ_MOD


def seq_before(a: int, b: int) -> bool:
    """``a`` comes strictly before ``b`` in serial-number order (RFC 1982): streams stay far
    shorter than half the sequence space ahead of any receiver (the window is small)."""
    return 0 < (b - a) % SEQ_MOD < SEQ_MOD // 2


#: Inclusive bounds of PacketFormat's integer fields. The pkt counter must tell a gap of
#: lost packets from a wrap, so no more than 2**PKT_BITS - 1 packets are outstanding per VC.
FORMAT_LIMITS: dict[str, tuple[int, int]] = {
    "packet_flits": (1, 64),
    "data_depth": (1, (1 << PKT_BITS) - 1),
    "ctrl_depth": (1, (1 << PKT_BITS) - 1),
}
#: ``crc_bits``: one of CRCS, or 0 to size the check to the flit (``crc_for``).
CRC_CHOICES = (0, *CRCS)


@dataclass(frozen=True)
class PacketFormat:
    """Packet sizes, buffer depths and the link check of packet mode.

    packet_flits -- payload flits of a data packet, after its header flit. The paper's 4 KB
                    data packets of 512 B flits are 8 flits; every data packet is full
                    (senders pad the last one), so a receiver knows where a packet ends
                    even when its last flit is lost.
    data_depth   -- packets each data VC of an input port buffers (its credits). The paper
                    sizes 24 KB = 6 packets at link bandwidth x round trip; 4 covers this
                    switch's credit round trip at full rate (docs/switch-rtl.md).
    ctrl_depth   -- control packets (one flit each) the control VC buffers; the paper's
                    2 KB of 512 B flits is 4.
    crc_bits     -- the flit check: 8, 16 or 32 (``CRCS``); 0 (default) sizes it to the
                    flit's data (``crc_for``).
    link_retry   -- every link replays what it lost or damaged (model/packet/link_retry.py;
                    default); without it a loss reaches the packets, which the packet
                    layer repairs and Go-Back-N resends end to end.
    """

    packet_flits: int = 8
    data_depth: int = 4
    ctrl_depth: int = 4
    crc_bits: int = 0
    link_retry: bool = True

    def __post_init__(self) -> None:
        for name, (low, high) in FORMAT_LIMITS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise InputError(f"{name} must be an integer >= {low} and <= {high}, got {value!r}")
        if not isinstance(self.link_retry, bool):
            raise InputError(f"link_retry must be True or False, got {self.link_retry!r}")
        if isinstance(self.crc_bits, bool) or self.crc_bits not in CRC_CHOICES:
            raise InputError(
                f"crc_bits must be one of {', '.join(map(str, CRC_CHOICES))} "
                f"(0: sized to the flit), got {self.crc_bits!r}"
            )

    @property
    def data_packet_flits(self) -> int:
        """Flits of a data packet on the link: header + payload."""
        return self.packet_flits + 1

    def link(self, data_bits: int) -> LinkFormat:
        """The link format of flits with ``data_bits`` of data."""
        if data_bits < HEADER_BITS:
            raise InputError(f"flits need at least {HEADER_BITS} data bits, got {data_bits}")
        crc = CRCS[self.crc_bits] if self.crc_bits else crc_for(data_bits)
        return LinkFormat(data_bits, crc)
