"""``amaranth.lib.data`` layouts of packet mode, built from the field tables of
model/packet/format.py so the RTL and the Python endpoints read the same bits."""

from __future__ import annotations

from amaranth.lib import data, stream

from fredfab.hw.flit import lanes_layout
from fredfab.hw.packet.params import PacketParams
from fredfab.model.packet.format import HEADER_FIELDS, N_VCS

header_layout = data.StructLayout(dict(HEADER_FIELDS))


def link_layout(params: PacketParams) -> data.StructLayout:
    return data.StructLayout(dict(params.link.fields))


def link_signature(params: PacketParams) -> stream.Signature:
    """A link direction: valid + payload, no ready (credit-based flow control)."""
    return stream.Signature(link_layout(params), always_ready=True)


def payload_flit_layout(params: PacketParams) -> data.StructLayout:
    """A payload flit inside the switch: the circuit flit (hw/flit.py: ``data`` lanes,
    ``last``) plus sideband that crosses the interconnect with it. A sum keeps the first
    operand's sideband (both operands have the same ``seq``: hw/packet/control.py commits a
    flow's inputs together) and ORs ``bad``."""
    s = params.switch
    return data.StructLayout(
        {
            "data": lanes_layout(s.element.bits, s.lanes),
            "last": 1,
            "bad": 1,
            "seq": dict(HEADER_FIELDS)["seq"],
            "src": dict(HEADER_FIELDS)["src"],
        }
    )


def payload_flit_stream(params: PacketParams) -> stream.Signature:
    return stream.Signature(payload_flit_layout(params))


def head_layout(params: PacketParams) -> data.StructLayout:
    """What an input port shows the control unit of the packet at the head of a data VC."""
    return data.StructLayout({"valid": 1, "header": header_layout})


CREDIT_BITS = N_VCS  # one pulse bit per VC
