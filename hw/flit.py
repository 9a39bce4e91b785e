"""The flit: the payload of every datapath stream of the switch.

Layout (``amaranth.lib.data``, least significant bits first):

======  ===================  ===========================================
field   bits                 meaning
======  ===================  ===========================================
data    lanes * element bits lane i in bits [i*W, (i+1)*W), W = element bits
last    1                    this flit ends its packet
======  ===================  ===========================================
"""

from __future__ import annotations

from amaranth.lib import data, stream


def flit_layout(data_width: int) -> data.StructLayout:
    return data.StructLayout({"data": data_width, "last": 1})


def flit_stream(data_width: int) -> stream.Signature:
    return stream.Signature(flit_layout(data_width))
