"""Switch timing card: what one FRED switch costs in cycles, in a versioned JSON schema.

Co-simulation of a generated switch (fredfab.sim.verify.timing) measures these numbers and writes a
card to ``build/timing/<variant>.json``. The system model reads a card and turns it into a
per-hop latency and a sustainable bandwidth (fredfab.model.system.fabric.SwitchTiming).

Which card applies is always explicit: the built-in card (default_card) unless a measured card
is named, by a path given to a command (``--timing-card``) or in a fabric file
(``[switch] timing_card``). Nothing looks in the working directory for cards, so a command
gives the same numbers wherever it runs.

Schema ``fred-switch-timing/2`` (all keys required unless noted)::

    {
      "schema": "fred-switch-timing/2",
      "generator": {"arch": "clos", "ports": 8, "m": 3, "lanes": 4, "dtype": "bf16",
                    ...},                        # free-form generator parameters
      "simulator": "verilator 5.048",            # or "default" for the built-in card
      "latency_cycles": 5,                       # input accepted -> output valid
      "throughput": {                            # flits / cycle / port
        "all-reduce": {"ready": 1.0, "backpressure": 1.0},
        "reduce":     {"ready": 1.0, "backpressure": 1.0},
        "multicast":  {"ready": 1.0, "backpressure": 1.0},
        "unicast":    {"ready": 1.0, "backpressure": 1.0}
      },
      "reconfiguration_cycles": 4,
      "slot_write_cycles": 5,                    # one slot written through the cfg port
      "clock_hz": 37.6e6,                        # optional: a clock measured by a tool
      "clock_source": "nextpnr-ecp5 Fmax, ...",  # optional: where clock_hz comes from
      "preempt_cycles": 20,                      # optional packet-mode costs (below)
      "derived": {"packet_flits": 8, ...}        # written, not read: the derived ones
    }

``ready`` is measured with every output always ready, ``backpressure`` with outputs that
stall; 1.0 means one flit per cycle per port, i.e. line rate for a datapath sized to the link.

``slot_write_cycles`` is the time to write one configuration slot through the ``cfg`` port
(first word offered to last word accepted), which is what co-simulation measures. It is not
the switch manifest's ``slot_copy_cycles`` (a phase change copying a stored slot into the
active register) and not the time to fill the whole configuration memory.

``clock_hz`` (optional, with ``clock_source`` saying where it comes from) is a switch clock
measured by a tool, e.g. the Fmax of an FPGA place and route (``fred cost --fpga
--timing-card``). The system model uses it instead of its assumed clock when the card has
one. An FPGA Fmax is not the clock of the paper's ASIC switch; writing it into a card is the
user's choice. Cards without the two fields are as before.

Packet mode's costs (model/timing_packet.py: ``packet_flits``, ``data_depth``,
``header_flits``, ``preempt_cycles``, ``credit_rtt_cycles``, ``vc_share``, ``fault_rate``,
``retry_cycles``, one line each in
its ``MEANINGS``) are optional: a card states the ones co-simulation measured, and every one
it lacks is derived from the packet format and the card's circuit timing (``packet_costs``).
``to_dict`` writes the measured ones as fields and the derived ones, with their values, under
``derived``, which ``from_dict`` accepts and ignores (they are derived again, from the card's
own fields), so a card round-trips and a card without them reads as before.

Version 1 called that field ``config_load_cycles``. ``from_dict`` still reads
``fred-switch-timing/1`` cards and maps the field to ``slot_write_cycles``: a /1 card that
co-simulation wrote measured exactly that; the /1 built-in card's 192 (the whole 1.5 KB
memory over a 64-bit port) is carried over as it was, which overstates one slot's write.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from fredfab.model import defaults
from fredfab.model.collective_kind import FLOW_KINDS
from fredfab.model.errors import InputError
from fredfab.model.input_files import read_text
from fredfab.model.switch.arches import build_topology
from fredfab.model.switch.config import Configuration
from fredfab.model.switch.latency import latency_cycles
from fredfab.model.timing_packet import (
    PACKET_FIELDS,
    PacketCostError,
    PacketCosts,
    check_packet_field,
    derive_packet_costs,
)

SCHEMA = "fred-switch-timing/2"

#: Optional fields: absent in a card that has no measured clock (every card before them).
OPTIONAL_FIELDS = ("clock_hz", "clock_source", *PACKET_FIELDS)

#: Written by to_dict (the derived packet costs, for readers) and ignored by from_dict.
DERIVED_KEY = "derived"

#: Older schema versions from_dict still reads, each with its renamed fields (old -> new).
LEGACY_SCHEMAS: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {"fred-switch-timing/1": MappingProxyType({"config_load_cycles": "slot_write_cycles"})}
)

#: The fields of a card besides "schema".
FIELDS = (
    "generator",
    "simulator",
    "latency_cycles",
    "throughput",
    "reconfiguration_cycles",
    "slot_write_cycles",
)

#: The collective kinds a card gives throughput for (Flow.kind values).
KINDS: tuple[str, ...] = FLOW_KINDS

#: The two measurement conditions per kind.
CONDITIONS = ("ready", "backpressure")

#: Where co-simulation writes cards (``fred cosim --timing-card``). Only a writer's default:
#: no reader looks here, a measured card applies only where its path is given.
TIMING_DIR = Path("build/timing")

#: What tables and JSON call the card default_card() returns.
BUILTIN = "built-in"


class TimingCardError(InputError):
    """A timing card that is malformed, of an unknown schema version, or missing a field."""


@dataclass(frozen=True)
class TimingCard:
    """Measured (or assumed) timing of one switch configuration. See the module docstring."""

    schema: str
    generator: Mapping[str, Any]
    simulator: str
    latency_cycles: float
    throughput: Mapping[str, Mapping[str, float]]
    reconfiguration_cycles: float
    slot_write_cycles: float
    #: A measured switch clock (Hz) and what measured it; None: no measured clock (the
    #: system model then assumes one). Not the paper's ASIC clock when it is an FPGA Fmax.
    clock_hz: float | None = None
    clock_source: str = ""
    #: Packet-mode costs (model/timing_packet.py); None: not measured, derived.
    packet_flits: int | None = None
    data_depth: int | None = None
    header_flits: int | None = None
    preempt_cycles: float | None = None
    credit_rtt_cycles: float | None = None
    vc_share: float | None = None
    fault_rate: float | None = None
    retry_cycles: float | None = None
    source: str = field(default="", compare=False)  # file it came from, "" for built-in

    def __post_init__(self) -> None:
        if self.schema != SCHEMA:
            raise TimingCardError(
                f"timing card schema {self.schema!r} is not supported (expected {SCHEMA!r})"
            )
        if not isinstance(self.generator, Mapping):
            raise TimingCardError("timing card field 'generator' must be an object")
        if not isinstance(self.simulator, str) or not self.simulator:
            raise TimingCardError("timing card field 'simulator' must be a non-empty string")
        for name in ("latency_cycles", "reconfiguration_cycles", "slot_write_cycles"):
            _nonneg(getattr(self, name), name)
        if self.clock_hz is not None:
            _nonneg(self.clock_hz, "clock_hz", positive=True)
        if not isinstance(self.clock_source, str):
            raise TimingCardError("timing card field 'clock_source' must be a string")
        if (self.clock_hz is None) != (not self.clock_source):
            raise TimingCardError(
                "timing card fields 'clock_hz' and 'clock_source' come together: a measured "
                "clock and what measured it"
            )
        for name in PACKET_FIELDS:
            if getattr(self, name) is not None:
                try:
                    check_packet_field(name, getattr(self, name))
                except PacketCostError as exc:
                    raise TimingCardError(str(exc)) from None
        if not isinstance(self.throughput, Mapping):
            raise TimingCardError("timing card field 'throughput' must be an object")
        missing = [str(k) for k in KINDS if k not in self.throughput]
        extra = [str(k) for k in self.throughput if k not in KINDS]
        if missing or extra:
            raise TimingCardError(
                f"timing card 'throughput' needs exactly the kinds {', '.join(map(str, KINDS))}; "
                f"missing {', '.join(missing) or 'none'}, unknown {', '.join(extra) or 'none'}"
            )
        frozen: dict[str, Mapping[str, float]] = {}
        for kind in KINDS:
            entry = self.throughput[kind]
            if not isinstance(entry, Mapping) or set(entry) != set(CONDITIONS):
                raise TimingCardError(
                    f"timing card throughput['{kind}'] needs exactly {list(CONDITIONS)}"
                )
            for cond in CONDITIONS:
                v = _nonneg(entry[cond], f"throughput['{kind}'][{cond!r}]")
                if v == 0 or v > 1.0 + 1e-9:
                    raise TimingCardError(
                        f"timing card throughput['{kind}'][{cond!r}] = {v}: "
                        "flits/cycle/port must be in (0, 1]"
                    )
            frozen[kind] = MappingProxyType({c: float(entry[c]) for c in CONDITIONS})
        object.__setattr__(self, "throughput", MappingProxyType(frozen))
        object.__setattr__(self, "generator", MappingProxyType(dict(self.generator)))

    @property
    def name(self) -> str:
        """The file the card came from, or "built-in" for default_card()."""
        if self.source:
            return self.source
        return BUILTIN if self.simulator == "default" else f"unsaved card ({self.simulator})"

    def fraction(self, kind: str, condition: str = "ready") -> float:
        """Throughput of ``kind`` as a fraction of line rate (flits/cycle/port)."""
        if kind not in self.throughput:
            raise TimingCardError(
                f"unknown collective kind {kind!r}; have {', '.join(map(str, KINDS))}"
            )
        return self.throughput[kind][condition]

    @property
    def packet_costs(self) -> PacketCosts:
        """Packet mode's costs: the card's measured ones, the others derived."""
        return derive_packet_costs(
            {f: getattr(self, f) for f in PACKET_FIELDS},
            self.latency_cycles,
            self.slot_write_cycles,
        )

    def to_dict(self) -> dict[str, Any]:
        costs = self.packet_costs
        measured = {f: getattr(self, f) for f in PACKET_FIELDS if getattr(self, f) is not None}
        return (
            {
                "schema": self.schema,
                "generator": _plain(self.generator),
                "simulator": self.simulator,
                "latency_cycles": self.latency_cycles,
                "throughput": {k: dict(v) for k, v in self.throughput.items()},
                "reconfiguration_cycles": self.reconfiguration_cycles,
                "slot_write_cycles": self.slot_write_cycles,
            }
            | (
                {"clock_hz": self.clock_hz, "clock_source": self.clock_source}
                if self.clock_hz is not None
                else {}
            )
            | measured
            | {DERIVED_KEY: {f: getattr(costs, f) for f in costs.derived}}
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    @classmethod
    def from_dict(cls, data: Any, source: str = "") -> TimingCard:
        where = f" in {source}" if source else ""
        if not isinstance(data, Mapping):
            raise TimingCardError(f"timing card{where} must be a JSON object")
        if "schema" not in data:
            raise TimingCardError(f"timing card{where} has no 'schema' field")
        if data["schema"] in LEGACY_SCHEMAS:
            renamed = LEGACY_SCHEMAS[data["schema"]]
            clash = sorted(set(renamed.values()) & set(data))
            if clash:
                raise TimingCardError(
                    f"timing card{where}: {data['schema']!r} has no field(s) {clash} "
                    f"(its name(s): {sorted(renamed)})"
                )
            data = {renamed.get(k, k): v for k, v in data.items()}
            data["schema"] = SCHEMA
        if data["schema"] != SCHEMA:
            known = [SCHEMA, *LEGACY_SCHEMAS]
            raise TimingCardError(
                f"timing card{where}: schema {data['schema']!r} is not supported "
                f"(expected one of {known})"
            )
        missing = [f for f in FIELDS if f not in data]
        if missing:
            raise TimingCardError(f"timing card{where} is missing field(s) {missing}")
        if not isinstance(data.get(DERIVED_KEY, {}), Mapping):
            raise TimingCardError(f"timing card{where}: {DERIVED_KEY!r} must be an object")
        known = set(FIELDS) | set(OPTIONAL_FIELDS) | {"schema", DERIVED_KEY}
        unknown = sorted(set(data) - known)
        if unknown:
            raise TimingCardError(f"timing card{where} has unknown field(s) {unknown}")
        try:
            return cls(
                schema=data["schema"],
                source=source,
                **{f: data[f] for f in FIELDS},
                **{f: data[f] for f in OPTIONAL_FIELDS if f in data},
            )
        except TimingCardError as exc:
            raise TimingCardError(f"{exc}{where}") from None

    @classmethod
    def from_json(cls, text: str, source: str = "") -> TimingCard:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            where = f" {source}" if source else ""
            raise TimingCardError(f"timing card{where} is not valid JSON: {exc}") from None
        return cls.from_dict(data, source)


#: Ports of the built-in card's switch: about one FRED L1 switch (4 NPUs + its I/O
#: controllers + the uplink). Ports have no generator default; every other parameter does.
DEFAULT_CARD_PORTS = 8


def default_card() -> TimingCard:
    """The built-in card, used until co-simulation measures a real one.

    * generator: the switch ``fred generate -P 8`` builds, i.e. the default generator
      parameters (model/defaults.py: Fred_3(P), the paper's m = 3, 4 bf16 lanes, one
      register slice per stage, combinational adders, 32-bit configuration words) with 8
      ports (``DEFAULT_CARD_PORTS``).
    * latency_cycles: the generator's formula (model/switch/latency.py), register slices and
      adder stages on the longest path: Fred_m(8) has 2*log2(8) - 1 = 5 uSwitch columns, one
      register slice after each and no adder stages, so 5 cycles; the same number the
      generated RTL declares in its manifest and shows in simulation (tests/hw/test_timing.py).
    * throughput 1.0 flit/cycle/port for every kind in both conditions: the paper says
      reduction happens step by step inside the uSwitches so the switch runs at link rate
      (an assumption; the paper gives no figure, paper §4).
    * reconfiguration_cycles = 4: read the next phase's configuration index from the packet
      header (6 B), fetch it from the 1.5 KB configuration SRAM, and apply it; a few cycles
      (an assumption; the paper gives no figure).
    * slot_write_cycles: one slot written through the cfg port, one word per cycle (the
      port is always ready, hw/control.py): the configuration's words at the default word
      width, what co-simulation measures.
    """
    ones = {k: {"ready": 1.0, "backpressure": 1.0} for k in KINDS}
    generator = {
        "ports": DEFAULT_CARD_PORTS,
        "m": defaults.M,
        "lanes": defaults.LANES,
        "dtype": defaults.DTYPE,
        "regs_per_stage": defaults.REGS_PER_STAGE,
        "adder_stages": defaults.ADDER_STAGES,
        "slots": defaults.SLOTS,
        "word_width": defaults.WORD_WIDTH,
        "arch": defaults.ARCH,
    }
    graph = build_topology(DEFAULT_CARD_PORTS, defaults.M, defaults.ARCH)
    return TimingCard(
        schema=SCHEMA,
        generator=generator,
        simulator="default",
        latency_cycles=latency_cycles(graph, defaults.REGS_PER_STAGE, defaults.ADDER_STAGES),
        throughput=ones,
        reconfiguration_cycles=4,
        slot_write_cycles=len(Configuration.idle(graph).to_words(defaults.WORD_WIDTH)),
    )


def load_timing_card(path: str | Path | None = None) -> TimingCard:
    """The card in the JSON file ``path``, or the built-in default_card() when ``path`` is None.

    There is no search: a card applies only when its path is given (errors if that file is
    missing or malformed).
    """
    if path is None:
        return default_card()
    p = Path(path)
    if not p.is_file():
        raise TimingCardError(f"timing card {p} does not exist")
    return TimingCard.from_json(read_text(p, TimingCardError, "the timing card"), source=str(p))


def _nonneg(v: Any, name: str, positive: bool = False) -> float:
    """``v`` as a float if it is a finite number >= 0 (> 0 if ``positive``)."""
    if (
        isinstance(v, bool)
        or not isinstance(v, int | float)
        or not math.isfinite(v)
        or v < 0
        or (positive and v == 0)
    ):
        bound = "> 0" if positive else ">= 0"
        raise TimingCardError(
            f"timing card field {name!r} must be a finite number {bound}, got {v!r}"
        )
    return float(v)


def _plain(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items()}
    return v
