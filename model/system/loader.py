"""Fabrics from TOML: the shipped ones (model/system/data/*.toml) and a user's file.

Schema ``fred-fabric/1``. Units are in the key names: bandwidths in GB/s (1e9 bytes/s, per
direction), latencies in ns. A file describes the fabric in exactly one of four ways::

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
    numbering = "serpentine"       # optional, or "row-major" (generators.MESH_NUMBERING)

    [tree]                         # a FRED switch tree (generators.fred_tree)
    radix = [4, 5]
    bandwidth_GBps = [3000, 1500]
    latency_ns = 10                # number or one per level; optional, as for the mesh
    io_controllers = 18            # optional, default 0
    io_bandwidth_GBps = 128        # optional
    io_latency_ns = 100            # optional
    in_switch_collectives = true
    switch_m = 3                   # optional, default fabric.SWITCH_M (the paper's 3)

    [dims]                         # an ASTRA-sim topology (fredfab.model.system.astra_yaml)
    topology = ["Ring", "Switch"]  # Ring, FullyConnected or Switch per dimension
    npus_count = [4, 8]
    bandwidth_GBps = [100, 50]
    latency_ns = [500, 500]

    # or an explicit graph:
    routing = "tree"               # or "xy"
    in_switch_collectives = false  # optional, default false
    switch_m = 3                   # optional, default fabric.SWITCH_M
    [[nodes]]                      # kind npu | switch | io; switches need level,
    name = "npu0"                  # xy meshes need x and y on NPUs
    kind = "npu"
    [[links]]                      # both directions unless bidirectional = false
    a = "npu0"
    b = "sw"
    bandwidth_GBps = 3000
    latency_ns = 10

    [collectives]                  # optional, any form: what the collective library adds
    library = "nccl-2.17"          # a name for the output
    fixed_cost_us = 8.6            # per collective (launch and synchronisation)
    source = "..."                 # where the numbers come from
    [[collectives.protocols]]      # one or more; the fastest runs each collective
    name = "Simple"
    base_latency_us = 8.4
    step_latency_us = 3.4          # per dependent step of the algorithm
    bandwidth_fraction = 1.0       # share of the links' rate the protocol leaves
    channels = 24                  # optional, with the next: fewer channels for small
    channel_threshold_bytes_per_rank = 4096  # messages (a channel per this x ranks bytes)
    max_bus_GBps = 87.7            # optional: a cap on the protocol's bus bandwidth
    # (fredfab.model.system.collective_library and channel_rule; without the table: no
    # cost added)

    packet_headers = true          # optional, any form: the links carry FRED's packet mode
                                   # (a header flit per packet). Default: true for [mesh],
                                   # [tree] and explicit graphs (the wafer), false for [dims]
    # [dims] may add achievable_fraction = [0.78, 0.94]: per dimension, the share of the
    # link bandwidth its links sustain (a measured, calibrated number); default 1

    [switch]                       # optional, any form with switches
    timing_card = "default"        # the built-in card, or a JSON path relative to this file
                                   # (a card co-simulation measured); nothing else is searched
    clock_GHz = 2.0                # optional, default the card's clock_hz, else 1 GHz
    flit_bytes = 256               # optional, default fabric.SwitchTiming (512)
    throughput_condition = "ready" # optional, or "backpressure"

Fields are read strictly (fredfab.model.toml_fields): numbers are numbers (not true, not
"3000"), counts are integers, and sizes are bounded (fabric.MAX_NPUS and the other limits
in fabric.py): a fabric has at most 4096 NPUs, 1024 I/O controllers, 4096 switches and 12
tree levels.

A file ending in .yml or .yaml is an ASTRA-sim analytical network file instead
(fredfab.model.system.astra_yaml; its GB is 2^30 bytes).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from fredfab.model.system.astra_yaml import (
    DIMS_TABLE_KEYS,
    YAML_SUFFIXES,
    fabric_from_dims_table,
    load_astra_yaml,
)
from fredfab.model.system.channel_rule import MAX_CHANNELS, ChannelRule
from fredfab.model.system.collective_library import MAX_PROTOCOLS, CollectiveLibrary, Protocol
from fredfab.model.system.elements import (
    MAX_IO_CONTROLLERS,
    MAX_LINK_GBPS,
    MAX_NPUS,
    MAX_SWITCHES,
    MAX_TREE_LEVELS,
    NODE_KINDS,
    NODE_ORDER,
    FabricError,
    Link,
    Node,
    check_counts,
)
from fredfab.model.system.fabric import MAX_SWITCH_M, ROUTINGS, Fabric
from fredfab.model.system.generators import LINK_LATENCY, MESH_NUMBERINGS, fred_tree, mesh
from fredfab.model.system.switch_timing import MAX_CLOCK_GHZ, MAX_FLIT_BYTES, SwitchTiming
from fredfab.model.system.units import GB, GHZ, NS, US
from fredfab.model.timing_card import CONDITIONS, TimingCardError, load_timing_card
from fredfab.model.toml_fields import Table, read_toml

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
    "dims",
    "routing",
    "in_switch_collectives",
    "switch_m",
    "nodes",
    "links",
    "switch",
    "collectives",
    "packet_headers",
}
_MESH = {
    "width",
    "height",
    "link_bandwidth_GBps",
    "link_latency_ns",
    "io_controllers",
    "io_bandwidth_GBps",
    "io_latency_ns",
    "numbering",
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
_COLLECTIVES = {"library", "fixed_cost_us", "source", "protocols"}
_PROTOCOL = {
    "name",
    "base_latency_us",
    "step_latency_us",
    "bandwidth_fraction",
    "channels",
    "channel_threshold_bytes_per_rank",
    "max_bus_GBps",
}
_NODE = {"name", "kind", "level", "x", "y"}
_LINK = {"a", "b", "bandwidth_GBps", "latency_ns", "bidirectional"}


def shipped_fabrics() -> list[str]:
    """Names of the fabrics shipped with the package."""
    return sorted(p.stem for p in DATA_DIR.glob("*.toml"))


def load_fabric(spec: str | Path, timing_card: str | Path | None = None) -> Fabric:
    """A shipped fabric by name (``mesh``, ``mesh-5x4``, ``fred-a`` .. ``fred-d``), a TOML file
    or an ASTRA-sim network file (.yml, .yaml).

    ``timing_card`` overrides the file's [switch] timing_card (a JSON path, taken as given,
    not relative to the fabric file). Without either, the built-in card applies.
    """
    name = ALIASES.get(str(spec).lower(), str(spec).lower())
    shipped = DATA_DIR / f"{name}.toml"
    path = shipped if shipped.is_file() else Path(spec)
    if not path.is_file():
        raise FabricError(
            f"fabric {str(spec)!r} is neither a shipped fabric ({', '.join(shipped_fabrics())}, "
            "or 'mesh') nor a TOML or ASTRA-sim YAML file"
        )
    if path.suffix.lower() in YAML_SUFFIXES:
        return load_astra_yaml(path)
    data = read_toml(path, FabricError, "the fabric")
    return fabric_from_dict(data, source=str(path), base=path.parent, timing_card=timing_card)


def fabric_from_dict(
    data: dict[str, Any],
    source: str = "<dict>",
    base: Path | None = None,
    timing_card: str | Path | None = None,
) -> Fabric:
    """Build a fabric from a parsed ``fred-fabric/1`` document (see the module docstring)."""
    where = source
    top = Table.read(data, where, _TOP, FabricError)
    if data.get("schema") != SCHEMA:
        raise FabricError(f"{where}: 'schema' must be {SCHEMA!r}, got {data.get('schema')!r}")
    name = top.string("name", nonempty=True)
    desc = top.string("description", "")
    forms = [k for k in ("mesh", "tree", "dims", "nodes") if k in data]
    if len(forms) != 1:
        raise FabricError(
            f"{where}: describe the fabric with exactly one of [mesh], [tree], [dims] or [[nodes]]"
            f" (found {forms or 'none'})"
        )
    try:
        fab = _form(top, forms[0], name, desc, base, timing_card)
        if "collectives" in data:
            fab.library = _library(top.table("collectives", _COLLECTIVES))
        fab.packet_headers = top.boolean("packet_headers", fab.packet_headers)
        return fab
    except FabricError as exc:
        msg = str(exc)
        raise FabricError(msg if msg.startswith(where) else f"{where}: {msg}") from None


def _form(
    top: Table, form: str, name: str, desc: str, base: Path | None, timing_card: str | Path | None
) -> Fabric:
    where = top.where
    if form == "mesh":
        if "switch" in top:
            raise FabricError(f"{where}: a mesh has no switches; drop [switch]")
        return _mesh(top.table("mesh", _MESH), name, desc)
    if form == "dims":
        if "switch" in top:
            raise FabricError(f"{where}: ASTRA-sim switches are ideal; drop [switch]")
        return fabric_from_dims_table(top.table("dims", DIMS_TABLE_KEYS), name, desc)
    timing = _timing(top.table("switch", _SWITCH), base, timing_card)
    if form == "tree":
        return _tree(top.table("tree", _TREE), name, desc, timing)
    return _explicit(top, name, desc, timing)


def _library(t: Table) -> CollectiveLibrary:
    protocols = [
        Protocol(
            p.string("name", nonempty=True),
            p.number("base_latency_us", lo=0) * US,
            p.number("step_latency_us", lo=0) * US,
            p.number("bandwidth_fraction", lo=0, hi=1, lo_open=True),
            _channel_rule(p),
            _scaled(p, "max_bus_GBps", GB, positive=True, hi=MAX_LINK_GBPS)
            or math.inf,  # absent: no cap
        )
        for p in t.tables("protocols", _PROTOCOL, max_len=MAX_PROTOCOLS)
    ]
    return CollectiveLibrary(
        t.string("library", nonempty=True),
        t.number("fixed_cost_us", lo=0) * US,
        tuple(protocols),
        t.string("source", ""),
    )


def _channel_rule(p: Table) -> ChannelRule | None:
    """A protocol's channel rule: ``channels`` and ``channel_threshold_bytes_per_rank``
    together, or neither."""
    given = [k for k in ("channels", "channel_threshold_bytes_per_rank") if k in p]
    if not given:
        return None
    if len(given) == 1:
        raise FabricError(
            f"{p.where}: '{given[0]}' needs its pair: give both 'channels' and "
            "'channel_threshold_bytes_per_rank', or neither"
        )
    return ChannelRule(
        p.integer("channels", lo=1, hi=MAX_CHANNELS),
        p.number("channel_threshold_bytes_per_rank", lo=0, lo_open=True),
    )


def _given(**kw: Any) -> dict[str, Any]:
    """The keyword arguments a file states (None = absent: the generator's default applies)."""
    return {k: v for k, v in kw.items() if v is not None}


def _scaled(
    t: Table, key: str, unit: float, *, positive: bool, hi: float | None = None
) -> float | None:
    """Field ``key`` (at most ``hi``) times ``unit`` (GB/s, ns, GHz), or None when absent."""
    v = t.number(key, None, lo=0, lo_open=positive, hi=hi)
    return None if v is None else v * unit


def _mesh(m: Table, name: str, desc: str) -> Fabric:
    return mesh(
        m.integer("width", lo=1, hi=MAX_NPUS),
        m.integer("height", lo=1, hi=MAX_NPUS),
        link_bandwidth=m.number("link_bandwidth_GBps", lo=0, lo_open=True, hi=MAX_LINK_GBPS) * GB,
        name=name,
        description=desc,
        **_given(
            link_latency=_scaled(m, "link_latency_ns", NS, positive=False),
            io_controllers=m.integer("io_controllers", None, lo=0, hi=MAX_IO_CONTROLLERS),
            io_bandwidth=_scaled(m, "io_bandwidth_GBps", GB, positive=True, hi=MAX_LINK_GBPS),
            io_latency=_scaled(m, "io_latency_ns", NS, positive=False),
            numbering=m.string("numbering", None, choices=MESH_NUMBERINGS),
        ),
    )


def _tree(t: Table, name: str, desc: str, timing: SwitchTiming) -> Fabric:
    radix = t.integers("radix", lo=1, hi=MAX_NPUS, max_len=MAX_TREE_LEVELS)
    bw = t.numbers("bandwidth_GBps", lo=0, lo_open=True, hi=MAX_LINK_GBPS, max_len=MAX_TREE_LEVELS)
    latency: float | list[float] | None = None
    if isinstance(t.data.get("latency_ns"), list):
        latency = [x * NS for x in t.numbers("latency_ns", lo=0, max_len=MAX_TREE_LEVELS)]
    elif "latency_ns" in t:
        latency = t.number("latency_ns", lo=0) * NS
    return fred_tree(
        radix,
        [b * GB for b in bw],
        in_switch=t.boolean("in_switch_collectives"),
        timing=timing,
        name=name,
        description=desc,
        **_given(
            latency=latency,
            io_controllers=t.integer("io_controllers", None, lo=0, hi=MAX_IO_CONTROLLERS),
            io_bandwidth=_scaled(t, "io_bandwidth_GBps", GB, positive=True, hi=MAX_LINK_GBPS),
            io_latency=_scaled(t, "io_latency_ns", NS, positive=False),
            switch_m=t.integer("switch_m", None, lo=2, hi=MAX_SWITCH_M),
        ),
    )


def _explicit(top: Table, name: str, desc: str, timing: SwitchTiming) -> Fabric:
    routing = top.string("routing", choices=ROUTINGS)
    limit = MAX_NPUS + MAX_IO_CONTROLLERS + MAX_SWITCHES  # nodes; links are counted per pair
    raw_nodes = top.tables("nodes", _NODE, max_len=limit)
    raw_links = top.tables("links", _LINK, max_len=2 * limit)
    parsed = []
    for i, nd in enumerate(raw_nodes):
        kind = nd.string("kind", choices=NODE_KINDS)
        if kind == "switch" and "level" not in nd:
            raise FabricError(f"{nd.where}: a switch needs 'level' (1 = next to NPUs)")
        parsed.append((NODE_ORDER[kind], i, nd, kind))
    check_counts(*(sum(p[3] == k for p in parsed) for k in ("npu", "io", "switch")), top.where)
    parsed.sort(key=lambda t: (t[0], t[1]))
    nodes = []
    index: dict[str, int] = {}
    for new_id, (_, _, nd, kind) in enumerate(parsed):
        nm = nd.string("name", nonempty=True)
        if nm in index:
            raise FabricError(f"{top.where}: node name {nm!r} used twice")
        index[nm] = new_id
        level = nd.integer("level", lo=1) if kind == "switch" else nd.integer("level", 0, lo=0)
        x = nd.integer("x", None, lo=0)
        y = nd.integer("y", None, lo=0)
        nodes.append(Node(new_id, nm, kind, level, x, y))
    links: list[Link] = []
    for lk in raw_links:
        ends = []
        for end in ("a", "b"):
            nm = lk.string(end)
            if nm not in index:
                raise FabricError(f"{lk.where}: node {nm!r} is not declared in [[nodes]]")
            ends.append(index[nm])
        bw = lk.number("bandwidth_GBps", lo=0, lo_open=True, hi=MAX_LINK_GBPS) * GB
        lat = _scaled(lk, "latency_ns", NS, positive=False)
        lat = LINK_LATENCY if lat is None else lat
        links.append(Link(len(links), ends[0], ends[1], bw, lat))
        if lk.boolean("bidirectional", True):
            links.append(Link(len(links), ends[1], ends[0], bw, lat))
    return Fabric(
        name,
        nodes,
        links,
        routing,
        timing=timing,
        description=desc,
        **_given(
            in_switch=top.boolean("in_switch_collectives", None),
            switch_m=top.integer("switch_m", None, lo=2, hi=MAX_SWITCH_M),
        ),
    )


def _timing(sw: Table, base: Path | None, override: str | Path | None) -> SwitchTiming:
    if override is not None:
        card_path: Path | None = Path(override)
    else:
        spec = sw.string("timing_card", "default")
        if spec == "default":
            card_path = None
        elif spec.endswith(".json"):
            card_path = Path(spec)
            if not card_path.is_absolute() and base is not None:
                card_path = base / card_path
        else:
            raise FabricError(
                f'{sw.where}: timing_card {spec!r}: give "default" (the built-in card) or '
                "the path of a .json card, relative to this file"
            )
    try:
        card = load_timing_card(card_path)
    except TimingCardError as exc:
        if override is not None:  # the user's own card: the error is about it alone
            raise
        raise FabricError(f"{sw.where}: {exc}") from None
    clock = _scaled(sw, "clock_GHz", GHZ, positive=True, hi=MAX_CLOCK_GHZ)
    return SwitchTiming(
        card,
        **_given(
            clock_hz=clock,
            clock_source=None if clock is None else f"{sw.where} clock_GHz",
            flit_bytes=sw.integer("flit_bytes", None, lo=1, hi=MAX_FLIT_BYTES),
            condition=sw.string("throughput_condition", None, choices=CONDITIONS),
        ),
    )
