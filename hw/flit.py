"""The flit: the payload of every datapath stream of the switch.

Layout (``amaranth.lib.data``, least significant bits first):

======  ===================  ===========================================
field   bits                 meaning
======  ===================  ===========================================
data    lanes * element bits ``ArrayLayout(element, lanes)``: lane i is ``data[i]``, in bits
                             [i*W, (i+1)*W), W = element bits
last    1                    this flit ends its packet
======  ===================  ===========================================

Adders and benches index lanes (``data[i]``) rather than slicing bits; the Verilog port is
the whole payload, as wide as before (``lanes * W + 1``).
"""

from __future__ import annotations

from amaranth.hdl import unsigned
from amaranth.lib import data, stream


def lanes_layout(element_bits: int, lanes: int) -> data.ArrayLayout:
    """``lanes`` elements of ``element_bits`` each, lane 0 in the least significant bits."""
    return data.ArrayLayout(unsigned(element_bits), lanes)


def flit_layout(element_bits: int, lanes: int) -> data.StructLayout:
    return data.StructLayout({"data": lanes_layout(element_bits, lanes), "last": 1})


def flit_stream(element_bits: int, lanes: int) -> stream.Signature:
    return stream.Signature(flit_layout(element_bits, lanes))
