"""Verilog and its JSON manifest: the contract for testbenches and integrators.

``generate(params, out_dir)`` writes ``<name>.v`` and ``<name>.json``. The manifest
(schema ``fred-switch-manifest/1``) holds:

* ``params``: the generator parameters (hw/params.py) and ``top``, the module name;
* ``clock`` / ``reset``: ``clk``, and ``rst``, synchronous and active high;
* ``ports``: every top-level port with its Verilog name, direction and width;
* ``streams``: for each stream (``i``/``o`` per switch port, ``cfg``, ``select``) the names of
  its payload, valid and ready ports;
* ``flit``: the payload layout of ``i``/``o`` (field -> lsb, width; lanes and element type);
* ``config``: the configuration encoding: bits per configuration, word width, words per
  slot, slots, the ``cfg`` payload layout, the reset contents of slot 0 (words), and the
  topology (every node with its code width, in encoding order; model/switch/config.py documents
  the encoding; model/switch/topology.py the structure);
* ``config_fields``: where every node output's source code sits in a configuration, one
  entry per field in bit order: ``node`` (index), ``name``, ``kind``, ``output``, ``lsb``,
  ``width`` (model/switch/config_layout.py; the RTL's configuration layout is built from the same
  table; model/switch/node.py says what each code value means);
* ``latency_cycles``: input accepted to output valid on the longest path: one cycle per
  register slice and per adder stage on it (model/switch/latency.py; on the Clos every path
  crosses every stage, so this is every flow's latency; on the crossbar the longest path);
* ``node_cycles``: the cycles each node holds a flit, by node index (``regs_per_stage`` if the
  node is registered, plus ``adder_stages`` if its stage adds): a flow's latency is the sum
  along its path, which is what the co-simulation bench expects of every flit;
* ``slot_copy_cycles``: cycles a phase change spends copying the selected slot into the
  active register, after draining (``words_per_slot + 1``). Not the time to write a slot
  through ``cfg`` (one word per cycle, the timing card's ``slot_write_cycles``).
  ``load_cycles`` is the same number under its old name, kept for one release so that
  existing readers keep working; it will be removed: read ``slot_copy_cycles``;
* ``contract``: the behaviour at the ports that names and widths do not say (source codes,
  kind rules, link layout, cfg word order, ``last`` in sums, unused inputs, reset), as data
  and text (hw/contract.py).
"""

from __future__ import annotations

import json
import os
import sysconfig
from pathlib import Path

import amaranth
from amaranth.back import verilog
from amaranth.hdl import Signal
from amaranth.lib import data, wiring

from fredfab.hw.contract import contract
from fredfab.hw.control import cfg_layout, n_words
from fredfab.hw.flit import flit_layout
from fredfab.hw.params import SwitchParams
from fredfab.hw.switch import FredSwitch
from fredfab.model.errors import InputError
from fredfab.model.switch.config import CONFIG_SCHEMA
from fredfab.model.switch.latency import node_cycles

MANIFEST_SCHEMA = "fred-switch-manifest/1"


def layout_fields(layout: data.StructLayout) -> dict:
    return {name: {"lsb": f.offset, "width": f.width} for name, f in layout}


def port_list(component: wiring.Component) -> list[dict]:
    """Every top-level port of ``component``: Verilog name, direction and width."""
    ports = []
    for path, member, value in component.signature.flatten(component):
        value = value.as_value() if hasattr(value, "as_value") else value
        if not isinstance(value, Signal):
            continue  # the constant ready of an always-ready stream is no port
        width = len(value)
        direction = "input" if member.flow == wiring.In else "output"
        ports.append({"name": "__".join(map(str, path)), "direction": direction, "width": width})
    return ports


def signal_ports(component: wiring.Component) -> list:
    """The component's ports as values, for ``verilog.convert``: the constant ``ready`` of an
    always-ready stream is no port (convert cannot list it itself:
    amaranth-lang/amaranth#1574)."""
    out = []
    for _, _, value in component.signature.flatten(component):
        v = value.as_value() if hasattr(value, "as_value") else value
        if isinstance(v, Signal):
            out.append(v)
    return out


def stream_map(ports: int) -> dict:
    """The payload/valid/ready port names of the data, configuration and select streams."""

    def names(prefix: str) -> dict:
        return {k: f"{prefix}__{k}" for k in ("payload", "valid", "ready")}

    return {
        "i": [names(f"i__{k}") for k in range(ports)],
        "o": [names(f"o__{k}") for k in range(ports)],
        "cfg": names("cfg"),
        "select": names("select"),
    }


def portable_sources(text: str) -> str:
    """``text`` with the source locations of its ``src`` attributes relative to the folder
    that holds the generator (``hw/packet/control.py:208``), to Amaranth's
    (``amaranth/lib/fifo.py:310``) and to the standard library (``contextlib.py:137``), not
    absolute: the Verilog is then the same from any
    checkout or install (it keys the simulator build caches), and about a quarter smaller
    (every other line carries one)."""
    folders = {
        Path(__file__).resolve().parent.parent,
        Path(amaranth.__file__).resolve().parent.parent,
        Path(sysconfig.get_paths()["stdlib"]).resolve(),  # contextlib.py, behind `with m.If`
    }
    # The deepest folder first: Amaranth may sit inside the checkout (a .venv there).
    for folder in sorted(folders, key=lambda f: len(str(f)), reverse=True):
        text = text.replace(f"{folder}{os.sep}", "")
    return text


def write_generated(
    component: wiring.Component, name: str, info: dict, out_dir: Path
) -> tuple[Path, Path]:
    """Convert ``component`` to ``<name>.v`` and write its manifest ``info`` as
    ``<name>.json`` into ``out_dir``, after checking that the manifest names only ports the
    Verilog has; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    text = portable_sources(verilog.convert(component, name=name, ports=signal_ports(component)))
    missing = [port["name"] for port in info["ports"] if f" {port['name']};" not in text]
    if missing:  # the manifest must describe the Verilog actually written
        raise RuntimeError(f"ports missing from the generated Verilog: {missing[:5]}")
    v_path = out_dir / f"{name}.v"
    j_path = out_dir / f"{name}.json"
    v_path.write_text(text)
    info["verilog"] = v_path.name
    j_path.write_text(json.dumps(info, indent=1) + "\n")
    return v_path, j_path


def manifest(switch: FredSwitch) -> dict:
    p = switch.params
    topo = switch.topology
    return {
        "schema": MANIFEST_SCHEMA,
        "top": p.name,
        "params": p.to_dict(),
        "clock": "clk",
        "reset": {"name": "rst", "synchronous": True, "active": "high"},
        "ports": port_list(switch),
        "streams": stream_map(p.ports),
        "status": {"slot": "slot", "reconfiguring": "reconfiguring"},
        "flit": {
            "width": flit_layout(p.element.bits, p.lanes).size,
            "fields": layout_fields(flit_layout(p.element.bits, p.lanes)),
            "lanes": p.lanes,
            "dtype": p.dtype,
            "element_bits": p.element.bits,
        },
        "config": {
            "schema": CONFIG_SCHEMA,
            "config_bits": topo.config_bits,
            "word_width": p.word_width,
            "words_per_slot": n_words(p),
            "slots": p.slots,
            "cfg_payload": layout_fields(cfg_layout(p)),
            "reset_slot": 0,
            "reset_words": switch.control.default.to_words(p.word_width),
            "topology": topo.to_dict(),
        },
        "config_fields": topo.config_layout.to_list(),
        "stages": topo.stages,
        "latency_cycles": switch.latency_cycles,
        "node_cycles": list(node_cycles(topo, p.regs_per_stage, p.adder_stages)),
        "slot_copy_cycles": n_words(p) + 1,
        "load_cycles": n_words(p) + 1,  # deprecated alias of slot_copy_cycles
        "contract": contract(),
    }


def generate(params: SwitchParams, out_dir: Path) -> tuple[Path, Path]:
    """Write ``<name>.v`` and ``<name>.json`` into ``out_dir``; return their paths."""
    switch = FredSwitch(params)
    return write_generated(switch, params.name, manifest(switch), out_dir)


def load_manifest(path: Path) -> dict:
    try:
        info = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read manifest {path}: {exc}") from None
    if info.get("schema") != MANIFEST_SCHEMA:
        raise InputError(f"{path} is not a {MANIFEST_SCHEMA} manifest")
    return info
