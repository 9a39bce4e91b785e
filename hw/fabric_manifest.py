"""Verilog and JSON manifest of a fabric: the switch's manifest keys, plus the fabric's own.

``generate(params, out_dir)`` writes ``<name>.v`` and ``<name>.json``. The manifest (schema
``fred-fabric-manifest/1``) carries every key the switch bench reads from a switch manifest
(hw/manifest.py): ``top``, ``clock``, ``reset``, ``ports``, ``streams`` (``i``/``o`` per
boundary port, ``cfg``, ``select``), ``status``, ``flit``, ``config`` (``word_width``,
``words_per_slot`` of the whole fabric, ``slots``, ``cfg_payload``) and ``latency_cycles``
(the longest boundary-to-boundary path with outputs ready), so the switch bench drives a
fabric as it drives a switch. The fabric's own keys:

* ``fabric``: name, description, the boundary ports (``boundary[k]``: fabric node name and
  kind of port k) and ``link_delay``;
* ``switches``: per switch, in configuration order: name, fabric node, level, instance name in
  the Verilog, its switch parameters, ``word_base`` (first fabric configuration address),
  ``words_per_slot``, ``latency_cycles`` and its ``config_fields`` (hw/manifest.py);
* ``wires``: every directed connection ``[src_switch, src_port, dst_switch, dst_port]``,
  switch -1 being the boundary (as the switch contract's links use -1 for the switch's ports);
* ``slot_copy_cycles``: what a phase change spends after draining (the largest switch copy
  plus the fabric's select and done cycles).
"""

from __future__ import annotations

from itertools import product
from pathlib import Path

from fredfab.hw.control import n_words
from fredfab.hw.fabric import FredFabric, fabric_cfg_layout, fabric_words, instance_name, word_bases
from fredfab.hw.fabric_params import FabricParams
from fredfab.hw.flit import flit_layout
from fredfab.hw.manifest import layout_fields, port_list, stream_map, write_generated

MANIFEST_SCHEMA = "fred-fabric-manifest/1"


def path_latency(params: FabricParams, src: int, dst: int) -> int:
    """Cycles from a flit accepted at boundary port ``src`` to valid at boundary port ``dst``
    with every output ready: ``link_delay`` per link plus each switch's latency."""
    fab = params.fabric
    links = fab.route(src, dst)
    sites = {s.node: s for s in params.wiring.switches}
    switches = [int(fab.link_dst[lk]) for lk in links[:-1]]
    return params.link_delay * len(links) + sum(
        params.switch_params(sites[s]).latency_cycles for s in switches
    )


def latency_cycles(params: FabricParams) -> int:
    """The longest boundary-to-boundary path (model/fabric latency, see path_latency)."""
    b = params.wiring.boundary
    return max(path_latency(params, s, d) for s, d in product(b, b) if s != d)


def manifest(fab: FredFabric) -> dict:
    p = fab.params
    w = p.wiring
    n = len(w.boundary)
    sp0 = fab.switches[0].params
    flit = flit_layout(sp0.element.bits, p.lanes)
    copy = max(n_words(sw.params) + 1 for sw in fab.switches)
    return {
        "schema": MANIFEST_SCHEMA,
        "top": p.name,
        "params": p.to_dict(),
        "clock": "clk",
        "reset": {"name": "rst", "synchronous": True, "active": "high"},
        "ports": port_list(fab),
        "streams": stream_map(n),
        "status": {"slot": "slot", "reconfiguring": "reconfiguring"},
        "flit": {
            "width": flit.size,
            "fields": layout_fields(flit),
            "lanes": p.lanes,
            "dtype": p.dtype,
            "element_bits": sp0.element.bits,
        },
        "config": {
            "word_width": p.word_width,
            "words_per_slot": fabric_words(p),
            "slots": p.slots,
            "cfg_payload": layout_fields(fabric_cfg_layout(p)),
        },
        "fabric": {
            "name": p.fabric.name,
            "description": p.fabric.description,
            "boundary": [
                {"node": p.fabric.nodes[u].name, "kind": p.fabric.nodes[u].kind} for u in w.boundary
            ],
            "link_delay": p.link_delay,
        },
        "switches": [
            {
                "name": site.name,
                "node": site.node,
                "level": site.level,
                "instance": instance_name(site.name),
                "params": sw.params.to_dict(),
                "word_base": base,
                "words_per_slot": n_words(sw.params),
                "latency_cycles": sw.latency_cycles,
                "config_fields": sw.topology.config_layout.to_list(),
            }
            for site, sw, base in zip(w.switches, fab.switches, word_bases(p), strict=True)
        ],
        "wires": [[x.src.switch, x.src.port, x.dst.switch, x.dst.port] for x in w.wires],
        "latency_cycles": latency_cycles(p),
        # DRAIN -> SELECT (1) + the slowest switch's drain check, copy and done + DONE (1).
        "slot_copy_cycles": copy + 3,
    }


def generate(params: FabricParams, out_dir: Path) -> tuple[Path, Path]:
    """Write ``<name>.v`` and ``<name>.json`` into ``out_dir``; return their paths."""
    fab = FredFabric(params)
    return write_generated(fab, params.name, manifest(fab), out_dir)
