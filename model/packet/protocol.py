"""Packet mode's protocol as an integrator needs it, machine-readable: the ``protocol`` entry
of the packet switch's manifest (hw/packet/manifest.py) and the source of the tables in
docs/switch-rtl.md ("What an NPU must do"). Every value comes from the definitions it
describes (format.py, link.py, recovery.py, slot_check.py, gbn.py), none is restated.
"""

from __future__ import annotations

from typing import Any

from fredfab.model.packet.format import (
    AUTO_CRC_UP_TO,
    CRCS,
    HEADER_BITS,
    HEADER_FIELDS,
    KIND_NAMES,
    PKT_BITS,
    SEQ_BITS,
    LinkFormat,
    PacketFormat,
    positions,
)
from fredfab.model.packet.gbn import ACK_EVERY
from fredfab.model.packet.link import sync_interval, tail_timeout
from fredfab.model.packet.recovery import notice_hold, npu_tail_timeout, tx_gap_bound
from fredfab.model.packet.slot_check import SLOT_CHECK, check_words


def _hex(value: int, bits: int) -> str:
    return f"0x{value:0{-(-bits // 4)}x}"


def protocol(fmt: PacketFormat, link: LinkFormat, n_words: int, word_width: int) -> dict[str, Any]:
    """The ``protocol`` manifest entry of a switch with this format and link, whose slots
    take ``n_words`` configuration words of ``word_width`` bits."""
    crc = link.crc
    return {
        "header": {
            "bits": HEADER_BITS,
            "fields": positions(HEADER_FIELDS),
            "where": "data bits [0, 48) of a packet's head flit; the data above is zero",
            "kinds": {name: k for k, name in KIND_NAMES.items()},
            "reserved": "zero",
        },
        "data_packet": {
            "flits": fmt.packet_flits + 1,
            "head_flit": "head=1 last=0, the header (kind data)",
            "payload_flits": f"{fmt.packet_flits} flits, head=0, last=1 on the final one only; "
            "always full (a sender pads)",
            "vc": "the header's vc, on every flit",
            "src": "the sending port (the switch writes the input port it came from)",
            "dst": "unicast (index 0): the destination port; else 0 (the switch writes the "
            "output port on what it sends)",
        },
        "control_packets": {
            "flits": "one flit, head=1 last=1, vc=3 (the control VC), the header in data[0:48)",
            "ack": {
                "from": "a receiver",
                "seq": "k: the receiver has every packet of the flow before k",
                "vc": "the flow's data VC",
                "index": "the flow's slot (0: unicast)",
                "src": "the receiver's port",
                "dst": "unicast: the port of the sender it answers; else 0",
            },
            "nack": {
                "from": "a receiver",
                "seq": "k: as an ACK of k, and send k again",
                "vc": "the flow's data VC",
                "index": "the flow's slot (0: unicast)",
                "src": "the receiver's port",
                "dst": "unicast: the port of the sender it answers; else 0",
            },
            "rewind": {
                "from": "the switch, to every sender of a configured flow",
                "seq": "k: go back to packet k (no acknowledgement)",
                "vc": "the flow's data VC",
                "index": "the flow's slot",
                "src": "the input port where the switch saw the gap",
                "dst": 0,
            },
            "switch_passes_on": "ACK as sent; a NACK of a configured flow as a NACK when it "
            "rewinds the switch's expected number or names it before the senders were told, "
            "else as an ACK of the same seq; unicast NACKs as sent",
        },
        "link_flit": {
            "fields": positions(link.fields),
            "pkt": {
                "bits": PKT_BITS,
                "after_reset": 0,
                "per": "VC",
                "advances": f"by 1 mod {1 << PKT_BITS} per packet, the same on every flit "
                "of a packet",
            },
            "sync": {
                "when": "a sender holds no credit of a VC and has sent nothing on it for "
                "sync_interval_cycles (and no packet of it is half sent): it sends one, and "
                "again every sync_interval_cycles while that lasts",
                "flit": "sync=1, vc, pkt = the sender's next pkt on that VC, head=0 last=0, "
                "data zero; it spends no credit",
                "receiver": "ends the packet open on the VC (padded) and returns the credits "
                "of the packets between the last one counted and pkt",
            },
            "bad": "set by a sender that knows the flit's data is bad (a switch forwarding, "
            "cut-through, a packet damaged or cut short on its way in); the CRC is still "
            "the data's, so link-level retry does not replay it",
            "control_symbols": "head, last, vc, pkt, sync, bad and lseq are trusted: a real "
            "link protects them with their own code; the CRC covers data only",
        },
        "crc": {
            "name": crc.name,
            "bits": crc.bits,
            "poly": _hex(crc.poly, crc.bits),
            "init": _hex(crc.init, crc.bits),
            "bit_order": "data bit W-1 first (most significant first), no reflection",
            "final_xor": 0,
            "covers": "the data field only",
            "distance_4_up_to_bits": crc.hd_bits,
            "chosen_by": f"crc_bits = {fmt.crc_bits}"
            + (" (sized to the flit: see auto)" if not fmt.crc_bits else ""),
            "auto": [{"data_bits_up_to": limit, "crc_bits": bits} for limit, bits in AUTO_CRC_UP_TO]
            + [{"data_bits_up_to": None, "crc_bits": max(CRCS)}],
            "choices": {
                str(c.bits): {"name": c.name, "poly": _hex(c.poly, c.bits)} for c in CRCS.values()
            },
        },
        "timing_cycles": {
            "rx_tail_timeout": tail_timeout(fmt),
            "tx_max_gap_in_packet": tx_gap_bound(fmt),
            "npu_tail_timeout_min": npu_tail_timeout(fmt),
            "sync_interval": sync_interval(fmt),
            "notice_hold": notice_hold(fmt),
        },
        "rx_rules": {
            "sender_gap": "a sender must not leave more than rx_tail_timeout cycles between "
            "two flits of one packet of a VC: after that many quiet cycles the switch ends "
            "the packet, padded bad, and drops its late flits",
            "credits": "one credit = one packet slot of a VC; start a packet only with one",
        },
        "tx_rules": {
            "credits": "a packet to several outputs starts only when every one of them holds "
            "a credit of its VC, spent at the start: no output waits for a credit inside a "
            "packet",
            "gaps": "at most tx_max_gap_in_packet cycles between two flits of one packet",
            "control": "inside a packet control flits take only idle cycles; one control "
            "flit may precede a header",
        },
        "go_back_n": {
            "ack_interval_packets": ACK_EVERY,
            "window": f"more than the ACK interval (>= {ACK_EVERY + 1}) and below "
            f"{1 << (SEQ_BITS - 1)} packets",
            "sequence_bits": SEQ_BITS,
            "sender": "go back to k on a NACK or a REWIND for k; on no acknowledgement "
            "progress for a timeout, go back to the oldest unacknowledged",
            "receiver": "deliver only the next packet in order and intact; NACK once per "
            "expected number on a damaged or out-of-order packet, again after a timeout; "
            "once complete, repeat the final ACK every timeout",
        },
        "numbering": {
            "configured": "per flow: every input of a flow sends the same sequence from 0, "
            "restarted when the loader writes the flow's rows",
            "unicast": "per (vc, source, destination): a sender numbers its packets to each "
            "destination from 0; a receiver expects one number per (vc, source)",
        },
        "slots": {
            "check": {
                "name": "CRC-16/CCITT",
                "poly": _hex(SLOT_CHECK.poly, SLOT_CHECK.bits),
                "init": _hex(SLOT_CHECK.init, SLOT_CHECK.bits),
                "over": f"the slot's {n_words} configuration words in address order, each "
                "most significant bit first",
                "words": check_words(word_width),
                "addresses": f"{n_words}..{n_words + check_words(word_width) - 1} of the slot, "
                "least significant part first",
            },
            "on_failure": "the slot is not selected: its heads are discarded, slot_error bit "
            "k is set until the slot is written again, the other phases go on",
        },
    }
