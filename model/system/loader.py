"""Fabrics from TOML: the shipped ones (model/system/data/*.toml) and a user's file.

Schema ``fred-fabric/1``. Units are in the key names: bandwidths in GB/s (1e9 bytes/s, per
direction), latencies in ns. A file describes the fabric in exactly one of three ways::

    schema = "fred-fabric/1"
    name = "mesh-5x4"
    description = "..."

    [mesh]                         # a W x H mesh (generators.mesh)
    width = 5
    height = 4
    link_bandwidth_GBps = 750
    link_latency_ns = 10           # optional, default generators.LINK_LATENCY
    io_controllers = 18            # optional, default 2 (W + H)
    io_bandwidth_GBps = 128        # optional
    io_latency_ns = 100            # optional

    [tree]                         # a FRED switch tree (generators.fred_tree)
    radix = [4, 5]
    bandwidth_GBps = [3000, 1500]
    latency_ns = 10                # number or one per level
    io_controllers = 18
    io_bandwidth_GBps = 128
    io_latency_ns = 100
    in_switch_collectives = true
    switch_m = 3

    # or an explicit graph:
    routing = "tree"               # or "xy"
    in_switch_collectives = false
    switch_m = 3
    [[nodes]]                      # kind npu | switch | io; switches need level,
    name = "npu0"                  # xy meshes need x and y on NPUs
    kind = "npu"
    [[links]]                      # both directions unless bidirectional = false
    a = "npu0"
    b = "sw"
    bandwidth_GBps = 3000
    latency_ns = 10

    [switch]                       # optional, any form with switches
    timing_card = "default"        # or a JSON path (relative to this file) or a variant
    clock_GHz = 1.0                # name looked up under build/timing/
    flit_bytes = 512
    throughput_condition = "ready"
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from fredfab.model.system.fabric import (
    Fabric,
    FabricError,
    Link,
    Node,
    SwitchTiming,
)
from fredfab.model.system.generators import IO_BW, IO_LATENCY, LINK_LATENCY, fred_tree, mesh
from fredfab.model.timing_card import TimingCardError, default_card, load_timing_card

SCHEMA = "fred-fabric/1"
DATA_DIR = Path(__file__).with_name("data")
#: Short names accepted wherever a fabric is named.
ALIASES = {"mesh": "mesh-5x4"}

_TOP = {
    "schema",
    "name",
    "description",
    "mesh",
    "tree",
    "routing",
    "in_switch_collectives",
    "switch_m",
    "nodes",
    "links",
    "switch",
}
_MESH = {
    "width",
    "height",
    "link_bandwidth_GBps",
    "link_latency_ns",
    "io_controllers",
    "io_bandwidth_GBps",
    "io_latency_ns",
}
_TREE = {
    "radix",
    "bandwidth_GBps",
    "latency_ns",
    "io_controllers",
    "io_bandwidth_GBps",
    "io_latency_ns",
    "in_switch_collectives",
    "switch_m",
}
_SWITCH = {"timing_card", "clock_GHz", "flit_bytes", "throughput_condition"}
_NODE = {"name", "kind", "level", "x", "y"}
_LINK = {"a", "b", "bandwidth_GBps", "latency_ns", "bidirectional"}


def shipped_fabrics() -> list[str]:
    """Names of the fabrics shipped with the package."""
    return sorted(p.stem for p in DATA_DIR.glob("*.toml"))


def load_fabric(spec: str | Path, timing_card: str | Path | None = None) -> Fabric:
    """A shipped fabric by name (``mesh``, ``mesh-5x4``, ``fred-a`` .. ``fred-d``) or a TOML file.

    ``timing_card`` overrides the file's [switch] timing_card (a JSON path).
    """
    name = ALIASES.get(str(spec).lower(), str(spec).lower())
    shipped = DATA_DIR / f"{name}.toml"
    path = shipped if shipped.is_file() else Path(spec)
    if not path.is_file():
        raise FabricError(
            f"fabric {str(spec)!r} is neither a shipped fabric ({', '.join(shipped_fabrics())}, "
            "or 'mesh') nor a TOML file"
        )
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise FabricError(f"{path}: not valid TOML: {exc}") from None
    return fabric_from_dict(data, source=str(path), base=path.parent, timing_card=timing_card)


def fabric_from_dict(
    data: dict[str, Any],
    source: str = "<dict>",
    base: Path | None = None,
    timing_card: str | Path | None = None,
) -> Fabric:
    """Build a fabric from a parsed ``fred-fabric/1`` document (see the module docstring)."""
    where = source
    _keys(data, _TOP, where)
    if data.get("schema") != SCHEMA:
        raise FabricError(f"{where}: 'schema' must be {SCHEMA!r}, got {data.get('schema')!r}")
    name = _get(data, "name", str, where)
    desc = data.get("description", "")
    forms = [k for k in ("mesh", "tree", "nodes") if k in data]
    if len(forms) != 1:
        raise FabricError(
            f"{where}: describe the fabric with exactly one of [mesh], [tree] or [[nodes]]"
            f" (found {forms or 'none'})"
        )
    timing = _timing(data.get("switch", {}), where, base, timing_card)
    try:
        if forms == ["mesh"]:
            m = data["mesh"]
            _keys(m, _MESH, f"{where} [mesh]")
            if "switch" in data:
                raise FabricError(f"{where}: a mesh has no switches; drop [switch]")
            return mesh(
                _get(m, "width", int, f"{where} [mesh]"),
                _get(m, "height", int, f"{where} [mesh]"),
                link_bandwidth=_num(m, "link_bandwidth_GBps", where) * 1e9,
                link_latency=_num(m, "link_latency_ns", where, LINK_LATENCY * 1e9) * 1e-9,
                io_controllers=m.get("io_controllers"),
                io_bandwidth=_num(m, "io_bandwidth_GBps", where, IO_BW / 1e9) * 1e9,
                io_latency=_num(m, "io_latency_ns", where, IO_LATENCY * 1e9) * 1e-9,
                name=name,
                description=desc,
            )
        if forms == ["tree"]:
            t = data["tree"]
            _keys(t, _TREE, f"{where} [tree]")
            radix = _get(t, "radix", list, f"{where} [tree]")
            bw = _get(t, "bandwidth_GBps", list, f"{where} [tree]")
            lat = t.get("latency_ns", LINK_LATENCY * 1e9)
            lat = [x * 1e-9 for x in lat] if isinstance(lat, list) else float(lat) * 1e-9
            return fred_tree(
                radix,
                [float(b) * 1e9 for b in bw],
                latency=lat,
                io_controllers=int(t.get("io_controllers", 0)),
                io_bandwidth=_num(t, "io_bandwidth_GBps", where, IO_BW / 1e9) * 1e9,
                io_latency=_num(t, "io_latency_ns", where, IO_LATENCY * 1e9) * 1e-9,
                in_switch=_get(t, "in_switch_collectives", bool, f"{where} [tree]"),
                switch_m=int(t.get("switch_m", 3)),
                timing=timing,
                name=name,
                description=desc,
            )
        return _explicit(data, name, desc, timing, where)
    except FabricError as exc:
        msg = str(exc)
        raise FabricError(msg if msg.startswith(where) else f"{where}: {msg}") from None
    except (TypeError, ValueError) as exc:
        raise FabricError(f"{where}: {exc}") from None


def _explicit(data: dict, name: str, desc: str, timing: SwitchTiming, where: str) -> Fabric:
    routing = _get(data, "routing", str, where)
    raw_nodes = _get(data, "nodes", list, where)
    raw_links = _get(data, "links", list, where)
    order = {"npu": 0, "io": 1, "switch": 2}
    parsed = []
    for i, nd in enumerate(raw_nodes):
        w = f"{where} nodes[{i}]"
        if not isinstance(nd, dict):
            raise FabricError(f"{w}: must be a table")
        _keys(nd, _NODE, w)
        kind = _get(nd, "kind", str, w)
        if kind not in order:
            raise FabricError(f"{w}: kind {kind!r} not in {sorted(order)}")
        if kind == "switch" and "level" not in nd:
            raise FabricError(f"{w}: a switch needs 'level' (1 = next to NPUs)")
        parsed.append((order[kind], i, nd))
    parsed.sort(key=lambda t: (t[0], t[1]))
    nodes = []
    index: dict[str, int] = {}
    for new_id, (_, i, nd) in enumerate(parsed):
        nm = _get(nd, "name", str, f"{where} nodes[{i}]")
        if nm in index:
            raise FabricError(f"{where}: node name {nm!r} used twice")
        index[nm] = new_id
        nodes.append(
            Node(new_id, nm, nd["kind"], int(nd.get("level", 0)), nd.get("x"), nd.get("y"))
        )
    links: list[Link] = []
    for i, lk in enumerate(raw_links):
        w = f"{where} links[{i}]"
        if not isinstance(lk, dict):
            raise FabricError(f"{w}: must be a table")
        _keys(lk, _LINK, w)
        ends = []
        for end in ("a", "b"):
            nm = _get(lk, end, str, w)
            if nm not in index:
                raise FabricError(f"{w}: node {nm!r} is not declared in [[nodes]]")
            ends.append(index[nm])
        bw = _num(lk, "bandwidth_GBps", w) * 1e9
        lat = _num(lk, "latency_ns", w, LINK_LATENCY * 1e9) * 1e-9
        links.append(Link(len(links), ends[0], ends[1], bw, lat))
        if lk.get("bidirectional", True):
            links.append(Link(len(links), ends[1], ends[0], bw, lat))
    return Fabric(
        name,
        nodes,
        links,
        routing,
        in_switch=bool(data.get("in_switch_collectives", False)),
        switch_m=int(data.get("switch_m", 3)),
        timing=timing,
        description=desc,
    )


def _timing(sw: Any, where: str, base: Path | None, override: str | Path | None) -> SwitchTiming:
    if not isinstance(sw, dict):
        raise FabricError(f"{where}: [switch] must be a table")
    _keys(sw, _SWITCH, f"{where} [switch]")
    card_spec = override if override is not None else sw.get("timing_card", "default")
    try:
        if card_spec == "default":
            card = load_timing_card(None)
        elif str(card_spec).endswith(".json"):
            p = Path(card_spec)
            if not p.is_absolute() and base is not None and override is None:
                p = base / p
            card = load_timing_card(p)
        else:
            card = load_timing_card(None, variant=str(card_spec))
            if card.simulator == "default":
                card = default_card()
    except TimingCardError as exc:
        raise FabricError(f"{where}: {exc}") from None
    return SwitchTiming(
        card,
        clock_hz=_num(sw, "clock_GHz", where, 1.0) * 1e9,
        flit_bytes=int(sw.get("flit_bytes", 512)),
        condition=str(sw.get("throughput_condition", "ready")),
    )


def _keys(d: Any, allowed: set[str], where: str) -> None:
    if not isinstance(d, dict):
        raise FabricError(f"{where}: must be a table")
    unknown = sorted(set(d) - allowed)
    if unknown:
        raise FabricError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")


def _get(d: dict, key: str, typ: type, where: str) -> Any:
    if key not in d:
        raise FabricError(f"{where}: missing '{key}'")
    v = d[key]
    if typ is int and (isinstance(v, bool) or not isinstance(v, int)):
        raise FabricError(f"{where}: '{key}' must be an integer, got {v!r}")
    if typ is not int and not isinstance(v, typ):
        raise FabricError(f"{where}: '{key}' must be a {typ.__name__}, got {v!r}")
    return v


def _num(d: dict, key: str, where: str, default: float | None = None) -> float:
    if key not in d:
        if default is None:
            raise FabricError(f"{where}: missing '{key}'")
        return float(default)
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise FabricError(f"{where}: '{key}' must be a number, got {v!r}")
    return float(v)
