"""Generator parameters of a packet-mode switch: the circuit switch's plus the packet format."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from fredfab.hw.params import SwitchParams
from fredfab.model.errors import InputError
from fredfab.model.packet.format import (
    HEADER_BITS,
    UNICAST_INDEX,
    LinkFormat,
    PacketFormat,
    crc_for,
)

#: Packet mode keeps its flow tables and sequence registers in flip-flops, read by every
#: port at once; these bounds keep that within a few thousand bits (docs/switch-rtl.md).
MAX_PACKET_PORTS = 16
MAX_PACKET_SLOTS = 16


@dataclass(frozen=True)
class PacketParams:
    """switch -- the interconnect and configuration storage (hw/params.py); slot 0 is the
                 unicast index, user configurations go in slots 1..slots-1.
    fmt    -- packet sizes and buffer depths (model/packet/format.py)."""

    switch: SwitchParams
    fmt: PacketFormat = field(default_factory=PacketFormat)

    def __post_init__(self) -> None:
        s = self.switch
        if s.data_width < HEADER_BITS:
            raise InputError(
                f"packet mode needs flits of at least {HEADER_BITS} bits for the header; "
                f"{s.lanes} lanes of {s.dtype} are {s.data_width}"
            )
        if s.ports > MAX_PACKET_PORTS:
            raise InputError(f"packet mode supports up to {MAX_PACKET_PORTS} ports, got {s.ports}")
        if s.slots > MAX_PACKET_SLOTS:
            raise InputError(f"packet mode supports up to {MAX_PACKET_SLOTS} slots, got {s.slots}")

    @property
    def ports(self) -> int:
        return self.switch.ports

    @property
    def link(self) -> LinkFormat:
        """The link flits' format: the switch's data width and the format's CRC."""
        return self.fmt.link(self.switch.data_width)

    @property
    def user_slots(self) -> range:
        """Slots a phase can name; index 0 is all-unicast."""
        return range(UNICAST_INDEX + 1, self.switch.slots)

    @property
    def name(self) -> str:
        f = self.fmt
        # The CRC is named only when it is not the one sized to the flit.
        auto = crc_for(self.switch.data_width).bits
        crc = f"_crc{f.crc_bits}" if f.crc_bits not in (0, auto) else ""
        return f"{self.switch.name}_pk{f.packet_flits}_d{f.data_depth}{crc}"

    def to_dict(self) -> dict:
        return {"switch": self.switch.to_dict(), "fmt": asdict(self.fmt)}
