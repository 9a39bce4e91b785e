"""The numbers of packet mode's loss recovery that the switch, the endpoints and the manifest
share (docs/switch-rtl.md, "Loss recovery").

* ``notice_hold(fmt)``: after the switch tells a configured flow's senders to go back to a
  packet (a REWIND, or a receiver's NACK passed on as a NACK), it tells them nothing more
  about that flow until the packet is committed, or for one to two ``notice_hold`` cycles
  (a power of two, so the RTL's epoch is a counter's top bit). The hold outlasts the
  packets the senders sent before they heard (up to ``data_depth`` packets buffered and two
  in flight per input), which would otherwise each look like a new gap; once it lapses, a
  notice that was lost on its way is made good by the next gap or NACK.
* ``tx_gap_bound(fmt)`` and ``npu_tail_timeout(fmt)``: the switch forwards a packet
  cut-through, so a gap between two flits of one packet on its ``tx`` can be as long as
  the gaps on the ``rx`` links it comes from, which its input ports bound by their tail
  timeout (model/packet/link.py): a longer gap ends the packet there, padded, and the
  padding follows at once. Credits are reserved before a packet starts and control flits
  take only idle cycles inside a packet, so the switch adds no gap of its own: on a link
  without faults the longest gap on ``tx`` is the tail timeout (tests/hw/packet/test_gaps.py
  measures the worst cases). A replay on the switch's own ``tx`` can add
  ``replay_gap`` (model/packet/link_retry.py); an NPU reading the switch's link must time
  a tail out only after more cycles than both, ``npu_tail_timeout``.
"""

from __future__ import annotations

from fredfab.model.packet.format import PacketFormat
from fredfab.model.packet.link import tail_timeout
from fredfab.model.packet.link_retry import replay_gap

#: Packets per input that can still arrive after a notice: the buffered ones and two on
#: the link.
_IN_FLIGHT_PACKETS = 2


def notice_hold(fmt: PacketFormat) -> int:
    """Cycles of one hold epoch: the power of two at or above twice the packets that can
    still arrive from a sender after a notice, in link cycles."""
    cycles = 2 * (fmt.data_depth + _IN_FLIGHT_PACKETS) * fmt.data_packet_flits
    return 1 << (cycles - 1).bit_length()


def tx_gap_bound(fmt: PacketFormat) -> int:
    """The longest run of cycles without a flit of an open packet on a switch's ``tx`` link
    while that link loses nothing."""
    return tail_timeout(fmt)


def npu_tail_timeout(fmt: PacketFormat) -> int:
    """The least tail timeout an NPU reading a switch's ``tx`` may use."""
    return tx_gap_bound(fmt) + replay_gap(fmt) + 1
