"""ASTRA-sim's system-layer file (JSON; ``--system-configuration`` of ASTRA-sim 2.x), read
for `fred collective` and `fred estimate` on Chakra traces.

The keys are those astra-sim/system/Sys.cc (Sys::initialize_sys) and
system/astraccl/CollectiveImplLookup.cc read. Each is mapped onto this project's model or
said, in one line, not to be modelled (``AstraSystem.mapping``):

* ``all-reduce-implementation``, ``reduce-scatter-implementation``,
  ``all-gather-implementation``, ``all-to-all-implementation``: one implementation per
  network dimension (ring, direct, halvingDoubling, doubleBinaryTree; oneRing is the plain
  one-way ``ring`` over the whole group): the algorithm that runs that collective, on an
  ASTRA-sim topology (model/system/dims_algorithms.py, ``per_dimension``).
* ``preferred-dataset-splits``: the chunks a collective is split into (``--chunks``).
* ``active-chunks-per-dimension`` of 1: the file's algorithms run a dimension's phase one
  chunk at a time (other values: chunks pipeline as ours do).
* ``roofline-enabled`` with ``peak-perf`` (TFLOP/s) and ``local-mem-bw`` (GB/s): the NPU
  roofline of trace compute nodes that give FLOPs instead of a duration (efficiency 1,
  ASTRA-sim's Roofline has none).
* The rest is not modelled: scheduling-policy, endpoint-delay,
  collective-optimization (ours is localBWAware), local-reduction-delay, the LogGP memory
  bus (L, o, g, G, model-shared-bus), boost-mode, replay-only, trace and memory tracking,
  custom implementations.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.errors import InputError
from fredfab.model.input_files import read_text
from fredfab.model.system.dims_algorithms import IMPLEMENTATIONS, per_dimension

#: The implementation keys and the collective each configures.
IMPLEMENTATION_KEYS = {
    "all-reduce-implementation": CollectiveKind.ALL_REDUCE,
    "reduce-scatter-implementation": CollectiveKind.REDUCE_SCATTER,
    "all-gather-implementation": CollectiveKind.ALL_GATHER,
    "all-to-all-implementation": CollectiveKind.ALL_TO_ALL,
}
#: Implementation names ASTRA-sim accepts (generate_collective_impl_from_input).
KNOWN_IMPLEMENTATIONS = (
    "ring",
    "oneRing",
    "direct",
    "oneDirect",
    "halvingDoubling",
    "oneHalvingDoubling",
    "doubleBinaryTree",
)
#: Keys read but not modelled, with the reason printed for each.
NOT_MODELLED = {
    "scheduling-policy": "not modelled: concurrent collectives share links max-min, no stream "
    "priority",
    "active-chunks-per-dimension": "not modelled but for 1: a chunk starts on a dimension "
    "once the chunk before it has been sent there",
    "endpoint-delay": "not modelled: no per-message endpoint cost (the paper ignores it, "
    "paper §7.3)",
    "collective-optimization": "localBWAware is what runs (Reduce-Scatter up the dimensions, "
    "All-Gather down); baseline is not modelled",
    "local-reduction-delay": "not modelled: reductions cost no time at the NPU",
    "L": "not modelled: the LogGP memory bus",
    "o": "not modelled: the LogGP memory bus",
    "g": "not modelled: the LogGP memory bus",
    "G": "not modelled: the LogGP memory bus",
    "model-shared-bus": "not modelled: the LogGP memory bus",
    "boost-mode": "not modelled (a simulation shortcut of ASTRA-sim)",
    "replay-only": "not modelled: compute durations are replayed, communication simulated",
    "trace-enabled": "not modelled: use --timeline",
    "track-local-mem": "not modelled: memory usage is not tracked",
    "local-mem-trace-filename": "not modelled: memory usage is not tracked",
    "all-reduce-implementation-custom": "not modelled: custom (Chakra) collectives",
    "reduce-scatter-implementation-custom": "not modelled: custom (Chakra) collectives",
    "all-gather-implementation-custom": "not modelled: custom (Chakra) collectives",
    "all-to-all-implementation-custom": "not modelled: custom (Chakra) collectives",
    "per-node-custom-implementation": "not modelled: custom (Chakra) collectives",
}
#: Not-modelled keys ASTRA-sim reads as numbers (Sys.cc assigns them to ints and doubles
#: or compares them with 0: a number or a boolean passes, a string stops it), and those it
#: reads as strings; each is checked so.
NUMBER_KEYS = (
    "active-chunks-per-dimension",
    "endpoint-delay",
    "local-reduction-delay",
    "L",
    "o",
    "g",
    "G",
    "model-shared-bus",
    "boost-mode",
    "replay-only",
    "trace-enabled",
    "track-local-mem",
)
STRING_KEYS = ("local-mem-trace-filename",)
#: The values ASTRA-sim accepts for these (anything else is its sys_panic).
CHOICES = {
    "scheduling-policy": ("LIFO", "FIFO", "EXPLICIT"),
    "collective-optimization": ("baseline", "localBWAware"),
}
_ROOFLINE = ("roofline-enabled", "peak-perf", "local-mem-bw")
#: What ASTRA-sim does with local-mem-bw besides its roofline (measured, docs/astra-sim.md).
_LOCAL_MEM = (
    "not modelled for collectives: ASTRA-sim passes every received message through local "
    "memory at this bandwidth (+5% on a 64 MiB ring All-Reduce over 8 NPUs at 1600 GB/s)"
)
KNOWN_KEYS = (*IMPLEMENTATION_KEYS, "preferred-dataset-splits", *_ROOFLINE, *NOT_MODELLED)


@dataclass(frozen=True)
class AstraSystem:
    source: str
    #: per collective, its implementation name per network dimension, as written
    implementations: dict[CollectiveKind, tuple[str, ...]] = field(default_factory=dict)
    chunks: int | None = None
    #: (peak FLOP/s, memory bytes/s) when the roofline is enabled
    roofline: tuple[float, float] | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    def mapping(self) -> list[tuple[str, str]]:
        """(key, what it does here) for every key of the file, in the file's order."""
        out = []
        for key, value in self.raw.items():
            if key in IMPLEMENTATION_KEYS:
                out.append(
                    (key, f"{value}: the {IMPLEMENTATION_KEYS[key]} algorithm per dimension")
                )
            elif key == "preferred-dataset-splits":
                out.append((key, f"{value}: chunks per collective"))
            elif key == "active-chunks-per-dimension" and value == 1:
                out.append(
                    (
                        key,
                        "1: a phase on a dimension runs one chunk at a time (the system "
                        "file's algorithms)",
                    )
                )
            elif key == "local-mem-bw" and self.roofline is None:
                out.append((key, _LOCAL_MEM))
            elif key in _ROOFLINE:
                if self.roofline is None:
                    out.append((key, "roofline off: compute nodes need their durations"))
                else:
                    peak, mem = self.roofline
                    out.append(
                        (
                            key,
                            f"the roofline of FLOP-counted compute: {peak / 1e12:g} TFLOP/s, "
                            f"{mem / 1e9:g} GB/s",
                        )
                    )
            else:
                out.append((key, NOT_MODELLED[key]))
        return out


def load_astra_system(path: str | Path) -> AstraSystem:
    """Read an ASTRA-sim system file strictly: known keys (KNOWN_KEYS), values of the types
    ASTRA-sim reads; every mistake one line naming the file and the key."""
    p = Path(path)
    try:
        raw = json.loads(read_text(p, InputError, "the system file"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise InputError(f"{p}: an ASTRA-sim system file is a JSON object of keys")
    unknown = [k for k in raw if k not in KNOWN_KEYS]
    if unknown:
        raise InputError(
            f"{p}: unknown key {unknown[0]!r}; ASTRA-sim's system layer reads "
            f"{', '.join(KNOWN_KEYS)}"
        )
    _check_not_modelled(raw, p)
    impls: dict[CollectiveKind, tuple[str, ...]] = {}
    for key, op in IMPLEMENTATION_KEYS.items():
        if key not in raw:
            continue
        v = raw[key]
        if not (isinstance(v, list) and v and all(isinstance(x, str) for x in v)):
            raise InputError(
                f"{p}: {key!r} must be a list of implementation names, one per dimension"
            )
        for x in v:
            base = x[:6] if x.startswith("direct") and x[6:].isdigit() else x
            base = x[:9] if x.startswith("oneDirect") and x[9:].isdigit() else base
            if base not in KNOWN_IMPLEMENTATIONS:
                raise InputError(
                    f"{p}: {key!r}: {x!r} is not an ASTRA-sim implementation "
                    f"({', '.join(KNOWN_IMPLEMENTATIONS)})"
                )
        impls[op] = tuple(v)
    chunks = raw.get("preferred-dataset-splits")
    if chunks is not None and not (type(chunks) is int and 1 <= chunks <= 1024):
        raise InputError(f"{p}: 'preferred-dataset-splits' must be a whole number 1..1024")
    roofline = None
    if raw.get("roofline-enabled", 0):
        vals = []
        for key in ("peak-perf", "local-mem-bw"):
            v = raw.get(key)
            if not (isinstance(v, int | float) and not isinstance(v, bool) and v > 0):
                raise InputError(f"{p}: {key!r} must be a number > 0 when roofline-enabled")
            vals.append(float(v))
        roofline = (vals[0] * 1e12, vals[1] * 1e9)  # Sys.cc: TFLOPS, GB/s (10^9)
    return AstraSystem(str(p), impls, chunks, roofline, raw)


def _check_not_modelled(raw: dict[str, Any], p: Path) -> None:
    """The keys this model does not use still hold what ASTRA-sim would read, so a file
    that runs here runs there too."""
    for key in NUMBER_KEYS:
        v = raw.get(key, 0)
        if not isinstance(v, int | float):  # bool is an int: nlohmann converts it too
            raise InputError(f"{p}: {key!r} must be a number, got {v!r}")
    for key in STRING_KEYS:
        v = raw.get(key, "")
        if not isinstance(v, str):
            raise InputError(f"{p}: {key!r} must be a string, got {v!r}")
    for key, choices in CHOICES.items():
        v = raw.get(key, choices[0])
        if not (isinstance(v, str) and v in choices):
            raise InputError(
                f"{p}: {key!r} must be {', '.join(repr(c) for c in choices)}, got {v!r}"
            )


def algorithm_for(system: AstraSystem, op: str, dims: int | None) -> tuple[str | None, str]:
    """The algorithm the file configures for ``op`` on a fabric of ``dims`` ASTRA-sim
    dimensions (None: not such a fabric), and a note ("" if none): (None, why) when the
    choice stays ours."""
    key = next((k for k, o in IMPLEMENTATION_KEYS.items() if o == op), None)
    impls = system.implementations.get(op) if key else None
    if not impls:
        return None, ""
    if impls == ("oneRing",) or (impls and all(x == "oneRing" for x in impls)):
        return "ring", ""
    if dims is None:
        return None, f"{key}: applies to ASTRA-sim topologies (.yml networks); not here"
    if len(impls) != dims:
        return None, f"{key}: {len(impls)} implementations for a network of {dims} dimensions"
    methods = []
    for x in impls:
        name = "direct" if x.startswith("direct") else x
        if name not in IMPLEMENTATIONS:
            return None, f"{key}: {x} is not modelled; the fastest algorithm runs"
        methods.append(IMPLEMENTATIONS[name])
    return per_dimension(methods, system.raw.get("active-chunks-per-dimension") == 1), ""
