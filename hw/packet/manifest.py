"""Verilog and JSON manifest of a packet-mode switch (schema ``fred-packet-manifest/1``).

Like the circuit switch's (hw/manifest.py), plus what an NPU endpoint needs to talk to it:

* ``links``: per port the ``rx`` (into the switch) and ``tx`` (out of it) payload and valid
  port names, and the link flit layout (model/packet/format.py);
* ``credits``: the credit return path: ``rx_credit[p]`` (switch -> NPU, for what the NPU
  sends) and ``tx_credit[p]`` (NPU -> switch, for what the switch sends), one bit per VC,
  one pulse per packet slot freed, and the credits each side starts with;
* ``packet``: packet format (header fields, VCs, priority, kinds, packet and buffer sizes);
* ``flows``: the flow-table stream and its row layout (hw/packet/control.py);
* ``unicast_rounds``: the read-only slots of the unicast rounds;
* ``protocol``: everything an NPU must do and may expect (model/packet/protocol.py): header
  bit positions, control packets and their fields, flit framing, ``pkt``, syncs, the CRC,
  the timeouts and gap bounds, Go-Back-N's rules, sequence numbering, the slot check.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from amaranth.hdl import Fragment

from fredfab.hw.control import n_words
from fredfab.hw.manifest import layout_fields, port_list, write_generated
from fredfab.hw.packet.control import CTRL_QUEUE_DEPTH, flows_layout
from fredfab.hw.packet.layouts import link_layout
from fredfab.hw.packet.link_retry import ack_layout
from fredfab.hw.packet.params import PacketParams
from fredfab.hw.packet.slot_store import cfg_layout, stride
from fredfab.hw.packet.switch import PacketSwitch
from fredfab.model.packet.format import (
    DATA_VCS,
    HEADER_BITS,
    HEADER_FIELDS,
    KIND_NAMES,
    LSEQ_BITS,
    PRIORITY,
    UNICAST_INDEX,
    VC_CTRL,
    VC_NAMES,
)
from fredfab.model.packet.link_retry import REPLAY_DEPTH, RETRY_TIMEOUT, replay_gap
from fredfab.model.packet.protocol import protocol
from fredfab.model.switch.config import CONFIG_SCHEMA
from fredfab.model.switch.latency import node_cycles

PACKET_MANIFEST_SCHEMA = "fred-packet-manifest/2"


def _names(prefix: str, ready: bool = True) -> dict:
    keys = ("payload", "valid", "ready") if ready else ("payload", "valid")
    return {k: f"{prefix}__{k}" for k in keys}


def manifest(switch: PacketSwitch) -> dict:
    pp = switch.params
    s, fmt = pp.switch, pp.fmt
    P = s.ports
    depth = {VC_NAMES[v]: fmt.data_depth for v in DATA_VCS} | {VC_NAMES[VC_CTRL]: fmt.ctrl_depth}
    return {
        "schema": PACKET_MANIFEST_SCHEMA,
        "top": pp.name,
        "params": pp.to_dict(),
        "clock": "clk",
        "reset": {"name": "rst", "synchronous": True, "active": "high"},
        "ports": port_list(switch),
        "links": {
            "rx": [_names(f"rx__{p}", ready=False) for p in range(P)],
            "tx": [_names(f"tx__{p}", ready=False) for p in range(P)],
            "width": link_layout(pp).size,
            "fields": layout_fields(link_layout(pp)),
            "lanes": s.lanes,
            "dtype": s.dtype,
            "element_bits": s.element.bits,
        },
        "link_retry": {
            "enabled": fmt.link_retry,
            "rx_ack": [f"rx_ack__{p}" for p in range(P)],
            "tx_ack": [f"tx_ack__{p}" for p in range(P)],
            "ack_fields": layout_fields(ack_layout),
            "lseq_bits": LSEQ_BITS,
            "replay_depth": REPLAY_DEPTH,
            "retry_timeout_cycles": RETRY_TIMEOUT,
            "replay_gap_cycles": replay_gap(fmt),
            "rules": "every flit carries lseq, consecutive per link; the receiving end takes "
            "only the flit with lseq = expect and a good CRC (expect += 1, nak = 0), sets nak "
            "on a flit with that or a later lseq that it does not take, drops earlier ones; "
            "it shows (expect, nak) every cycle from its registers; the sending end frees "
            "flits before expect, replays from expect when nak is up and it has not replayed "
            "from that expect yet, or when expect stood still retry_timeout_cycles with flits "
            "outstanding, and sends nothing new while a replay runs or replay_depth flits "
            "are outstanding",
        },
        "credits": {
            "rx_credit": [f"rx_credit__{p}" for p in range(P)],
            "tx_credit": [f"tx_credit__{p}" for p in range(P)],
            "bit_per_vc": True,
            "unit": "packet",
            "switch_buffers": depth,
            "npu_buffers_assumed": depth,
        },
        "packet": {
            "header_bits": HEADER_BITS,
            "header_fields": dict(HEADER_FIELDS),
            "vcs": {name: vc for vc, name in VC_NAMES.items()},
            "priority": [VC_NAMES[v] for v in PRIORITY],
            "kinds": {name: k for k, name in KIND_NAMES.items()},
            "unicast_index": UNICAST_INDEX,
            **asdict(fmt),
            "crc_bits": pp.link.crc.bits,  # resolved: the one the links carry
        },
        "streams": {"cfg": _names("cfg"), "flows": _names("flows")},
        "status": {
            "phase_valid": "phase_valid",
            "phase_vc": "phase_vc",
            "phase_index": "phase_index",
            "reconfiguring": "reconfiguring",
            "slot_error": "slot_error",
        },
        "config": {
            "schema": CONFIG_SCHEMA,
            "config_bits": switch.topology.config_bits,
            "word_width": s.word_width,
            "words_per_slot": n_words(s),
            "check_words_per_slot": stride(s) - n_words(s),
            "slots": s.slots,
            "user_slots": list(pp.user_slots),
            "cfg_payload": layout_fields(cfg_layout(s)),
            "topology": switch.topology.to_dict(),
        },
        "flows": {
            "payload": layout_fields(flows_layout(pp)),
            "tables": ["inputs_of_input", "inputs_of_output"],
        },
        "unicast_rounds": P,
        "ctrl_queue_depth": CTRL_QUEUE_DEPTH,
        "config_fields": switch.topology.config_layout.to_list(),
        "stages": switch.topology.stages,
        "latency_cycles": s.latency_cycles,
        "node_cycles": list(node_cycles(switch.topology, s.regs_per_stage, s.adder_stages)),
        "slot_copy_cycles": stride(s) + 1,
        "protocol": protocol(fmt, pp.link, n_words(s), s.word_width),
    }


def manifest_of(params: PacketParams) -> dict:
    """The manifest of the switch ``params`` describe, without writing its Verilog. The
    switch is elaborated too: one never elaborated warns when collected, in whatever runs
    then."""
    switch = PacketSwitch(params)
    info = manifest(switch)
    Fragment.get(switch, None)
    return info


def generate(params: PacketParams, out_dir: Path) -> tuple[Path, Path]:
    """Write ``<name>.v`` and ``<name>.json`` into ``out_dir``; return their paths."""
    switch = PacketSwitch(params)
    return write_generated(switch, params.name, manifest(switch), out_dir)
