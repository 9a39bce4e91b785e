"""The numbers of packet mode's loss recovery that the switch, the endpoints and the manifest
share (docs/switch-rtl.md, "Loss recovery").

* ``notice_hold(fmt)``: after the switch tells a configured flow's senders to go back to a
  packet (a REWIND, or a receiver's NACK passed on as a NACK), it tells them nothing more
  about that flow until the packet is committed, or for one to two ``notice_hold`` cycles
  (a power of two, so the RTL's epoch is a counter's top bit). The hold outlasts the
  packets the senders sent before they heard (up to ``data_depth`` packets buffered and two
  in flight per input), which would otherwise each look like a new gap; once it lapses, a
  notice that was lost on its way is made good by the next gap or NACK.
* ``npu_tail_timeout(fmt)`` and ``tx_gap_bound(fmt)``: the switch forwards a packet
  cut-through, so a gap between two flits of one packet on its ``tx`` can be as long as the
  gaps on the ``rx`` links it comes from, which its input ports bound by their tail
  timeout (model/packet/link.py): a gap longer than ``tail_timeout`` ends the packet there,
  padded. Add the cycles a flit takes from the input's FIFO to ``tx`` when the input pads
  (``PAD_CYCLES``, measured: tests/hw/packet/test_gaps.py) and the longest gap on ``tx``
  is ``tx_gap_bound``; an NPU reading the switch's link must time a tail out only after
  more cycles than that, ``npu_tail_timeout``.
"""

from __future__ import annotations

from fredfab.model.packet.format import PacketFormat
from fredfab.model.packet.link import tail_timeout

#: Packets per input that can still arrive after a notice: the buffered ones and two on
#: the link.
_IN_FLIGHT_PACKETS = 2


def notice_hold(fmt: PacketFormat) -> int:
    """Cycles of one hold epoch: the power of two at or above twice the packets that can
    still arrive from a sender after a notice, in link cycles."""
    cycles = 2 * (fmt.data_depth + _IN_FLIGHT_PACKETS) * fmt.data_packet_flits
    return 1 << (cycles - 1).bit_length()


#: Cycles between the tail timeout firing at an input port and the padded flit leaving on
#: ``tx``, beyond the gap the input saw: the reader's decision, the skid buffer, and the
#: output port's register (tests/hw/packet/test_gaps.py checks the bound it gives).
PAD_CYCLES = 3


def tx_gap_bound(fmt: PacketFormat) -> int:
    """The longest run of cycles without a flit of an open packet on a switch's ``tx``."""
    return tail_timeout(fmt) + PAD_CYCLES


def npu_tail_timeout(fmt: PacketFormat) -> int:
    """The least tail timeout an NPU reading a switch's ``tx`` may use."""
    return tx_gap_bound(fmt) + 1
