"""ASTRA-sim's analytical network files, and the ``[dims]`` table of our fabric files.

An ASTRA-sim network file (github.com/astra-sim/astra-sim, inputs/network/analytical/*.yml;
read by astra-network-analytical's NetworkParser) lists one entry per dimension::

    topology: [ Ring, FullyConnected, Switch ]   # Ring, FullyConnected or Switch
    npus_count: [ 2, 8, 4 ]                      # NPUs per dimension (each >= 2)
    bandwidth: [ 200.0, 100.0, 50.0 ]            # GB/s per link and direction
    latency: [ 50.0, 500.0, 2000.0 ]             # ns per link

Units: ASTRA-sim's ``bw_GBps_to_Bpns`` (astra-network-analytical, common/NetworkFunction.cc)
converts the bandwidth with "1 GB is 2^30 B" and "1 s is 10^9 ns", so ``bandwidth: [50]`` is
50 * 2^30 bytes/s; latency is in ns. The mapping onto a fabric is
fredfab.model.system.topologies (routing ``dims``). The file is read strictly, like our TOML
files: exactly these four keys, lists of equal length, numbers that are numbers, each
dimension of 2 to fabric.MAX_NPUS NPUs and at most fabric.MAX_NPUS in all.

Our own TOML files describe the same topologies in their units (GB = 10^9 bytes, as
everywhere in fred-fabric/1)::

    [dims]
    topology = ["Ring", "Ring"]
    npus_count = [4, 8]
    bandwidth_GBps = [80, 80]
    latency_ns = [1000, 1000]
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from fredfab.model.input_files import read_text
from fredfab.model.system.dims import DIM_KINDS, MAX_DIMS, Dim
from fredfab.model.system.elements import MAX_LINK_GBPS, MAX_NPUS, FabricError
from fredfab.model.system.fabric import Fabric
from fredfab.model.system.topologies import dims_fabric
from fredfab.model.system.units import GB, GIB, NS
from fredfab.model.toml_fields import Table, check_choice

#: File suffixes read as ASTRA-sim network files (fredfab.model.system.loader.load_fabric).
YAML_SUFFIXES = (".yml", ".yaml")
#: Bytes/s of ASTRA-sim's "GB/s" (see the module docstring).
ASTRA_GBPS = GIB
_YAML_KEYS = ("topology", "npus_count", "bandwidth", "latency")
#: Keys of the [dims] table of a fred-fabric/1 file (the four lists of ASTRA-sim's file).
DIMS_KEYS = ("topology", "npus_count", "bandwidth_GBps", "latency_ns")
#: ... and the optional one: per dimension, the share of its links' bandwidth they sustain.
DIMS_TABLE_KEYS = (*DIMS_KEYS, "achievable_fraction")


class AstraLoader(yaml.SafeLoader):
    """YAML as ASTRA-sim reads it: yaml-cpp converts a plain scalar to a double with a C++
    stream (yaml-cpp convert.h, ``YAML_DEFINE_CONVERT_STREAMABLE``), so ``1e3``, ``5.``,
    ``.5`` and ``1.0e3`` are numbers there, while YAML 1.1 (PyYAML) reads them as strings
    (its floats need a dot and a signed exponent). Plain scalars of that C++ form resolve to
    floats here too; quoted strings stay strings, and words such as ``fast`` are refused as
    before."""


#: What a C++ stream reads as a double, whole (yaml-cpp requires the whole scalar to convert).
CXX_DOUBLE = re.compile(r"^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$")
AstraLoader.add_implicit_resolver("tag:yaml.org,2002:float", CXX_DOUBLE, list("-+0123456789."))


def load_astra_yaml(path: str | Path) -> Fabric:
    """The fabric of an ASTRA-sim analytical network file, named after the file."""
    path = Path(path)
    text = read_text(path, FabricError, "the network file")
    try:
        data = yaml.load(text, Loader=AstraLoader)
    except yaml.YAMLError as exc:
        raise FabricError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    return fabric_from_astra(data, source=str(path), name=path.stem)


def fabric_from_astra(data: Any, source: str = "<yaml>", name: str = "astra") -> Fabric:
    """The fabric of a parsed ASTRA-sim network file (see the module docstring)."""
    if not isinstance(data, dict):
        raise FabricError(
            f"{source}: an ASTRA-sim network file is a mapping of {', '.join(_YAML_KEYS)}; "
            f"got {type(data).__name__}"
        )
    t = Table.read(data, source, _YAML_KEYS, FabricError)
    dims = _dims(t, _YAML_KEYS, ASTRA_GBPS)
    return _build(dims, source, name, f"ASTRA-sim network {Path(source).name}")


def fabric_from_dims_table(t: Table, name: str, description: str = "") -> Fabric:
    """The fabric of a ``[dims]`` table of a fred-fabric/1 file (GB = 10^9 bytes). Its
    optional ``achievable_fraction`` (one per dimension, in (0, 1]) scales each dimension's
    bandwidth: the links run at the rate they sustain, the file keeps the datasheet's."""
    dims = _dims(t, DIMS_KEYS, GB)
    fracs = t.numbers("achievable_fraction", None, lo=0, hi=1, lo_open=True, max_len=MAX_DIMS)
    if fracs is not None:
        if len(fracs) != len(dims):
            raise FabricError(
                f"{t.where}: 'achievable_fraction' has {len(fracs)} entries, "
                f"'topology' {len(dims)} dimensions"
            )
        dims = [replace(d, bandwidth=d.bandwidth * f) for d, f in zip(dims, fracs, strict=True)]
    return _build(dims, t.where, name, description)


def _build(dims: list[Dim], where: str, name: str, description: str) -> Fabric:
    try:
        return dims_fabric(dims, name=name, description=description)
    except FabricError as exc:
        msg = str(exc)
        raise FabricError(msg if msg.startswith(where) else f"{where}: {msg}") from None


def _dims(t: Table, keys: tuple[str, ...], bandwidth_unit: float) -> list[Dim]:
    """One Dim per entry of the four lists ``keys`` (topology, count, bandwidth, latency)."""
    k_topo, k_npus, k_bw, k_lat = keys
    for k in keys:
        if k not in t:
            raise FabricError(f"{t.where}: missing '{k}' (need {', '.join(keys)})")
    raw = t.data[k_topo]
    if not isinstance(raw, list) or not raw:
        raise FabricError(f"{t.where}: '{k_topo}' must be a non-empty list, got {raw!r}")
    if len(raw) > MAX_DIMS:
        raise FabricError(f"{t.where}: '{k_topo}': at most {MAX_DIMS} dimensions, got {len(raw)}")
    kinds = [
        check_choice(x, f"{t.where}: '{k_topo}'[{i}]", DIM_KINDS, error=FabricError)
        for i, x in enumerate(raw)
    ]
    sizes = t.integers(k_npus, lo=2, hi=MAX_NPUS, max_len=MAX_DIMS)
    bws = t.numbers(k_bw, lo=0, lo_open=True, hi=MAX_LINK_GBPS, max_len=MAX_DIMS)
    lats = t.numbers(k_lat, lo=0, max_len=MAX_DIMS)
    for k, v in ((k_npus, sizes), (k_bw, bws), (k_lat, lats)):
        if len(v) != len(kinds):
            raise FabricError(
                f"{t.where}: '{k}' has {len(v)} entries, '{k_topo}' {len(kinds)} dimensions"
            )
    return [
        Dim(kind, size, bw * bandwidth_unit, lat * NS)
        for kind, size, bw, lat in zip(kinds, sizes, bws, lats, strict=True)
    ]
