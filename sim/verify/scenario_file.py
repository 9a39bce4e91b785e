"""The scenario file: what the runner (fredfab.sim.verify.cosim) hands the cocotb bench.

``Scenario`` and ``Phase`` are built by fredfab.sim.verify.scenarios (and the timing
scenario, fredfab.sim.verify.timing), written by the runner as a ``fred-cosim-scenarios/1``
JSON file with ``ScenarioFile.write`` and read back in the simulator process by the bench
(fredfab.sim.verify.cocotb_bench.switch_tb) with ``ScenarioFile.read``. How a scenario runs
is described in fredfab.sim.verify.cocotb_bench.sequencer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from fredfab.sim.verify.cocotb_bench.patterns import Always, Pattern, pattern_from_json

SCENARIO_SCHEMA = "fred-cosim-scenarios/1"
#: The environment variable naming the scenario file in the simulator process.
SCENARIOS_ENV = "FRED_COSIM_SCENARIOS"

Flit = tuple[int, int]
"""(data, last), as in fredfab.sim.verify.traffic."""


def _flits_to_json(flits: dict[int, list[Flit]]) -> dict[str, list[list[int]]]:
    return {str(p): [[d, last] for d, last in v] for p, v in flits.items()}


def _flits_from_json(flits: dict[str, list[list[int]]]) -> dict[int, list[Flit]]:
    return {int(p): [(int(d), int(last)) for d, last in v] for p, v in flits.items()}


@dataclass
class Phase:
    """One configuration and the traffic that runs on it.

    ``slot`` None keeps the active configuration (no select, no ``words``). ``idle`` and
    ``stall`` override the scenario's input idle and output backpressure patterns from this
    phase on. ``drain``, ``wait_before`` and ``reset_after`` are described in
    fredfab.sim.verify.cocotb_bench.sequencer.
    """

    label: str
    slot: int | None
    words: list[int] | None
    flows: list[str] = field(default_factory=list)
    send: dict[int, list[Flit]] = field(default_factory=dict)
    expect: dict[int, list[Flit]] = field(default_factory=dict)
    idle: Pattern | None = None
    stall: Pattern | None = None
    drain: bool = False
    wait_before: int = 0
    reset_after: int | None = None

    def __post_init__(self) -> None:
        if (self.slot is None) != (self.words is None):
            raise ValueError(f"phase {self.label!r}: a slot needs its words and words a slot")

    @property
    def sent_flits(self) -> int:
        return sum(len(v) for v in self.send.values())

    @property
    def expected_flits(self) -> int:
        return sum(len(v) for v in self.expect.values())

    def to_json(self) -> dict:
        return {
            "label": self.label,
            "slot": self.slot,
            "words": self.words,
            "flows": self.flows,
            "send": _flits_to_json(self.send),
            "expect": _flits_to_json(self.expect),
            "idle": self.idle.to_json() if self.idle else None,
            "stall": self.stall.to_json() if self.stall else None,
            "drain": self.drain,
            "wait_before": self.wait_before,
            "reset_after": self.reset_after,
        }

    @classmethod
    def from_json(cls, d: dict) -> Phase:
        return cls(
            label=d["label"],
            slot=d["slot"],
            words=d["words"],
            flows=list(d.get("flows", [])),
            send=_flits_from_json(d["send"]),
            expect=_flits_from_json(d["expect"]),
            idle=pattern_from_json(d["idle"]) if d.get("idle") else None,
            stall=pattern_from_json(d["stall"]) if d.get("stall") else None,
            drain=bool(d.get("drain", False)),
            wait_before=int(d.get("wait_before", 0)),
            reset_after=d.get("reset_after"),
        )


@dataclass
class Scenario:
    """Phases run one after the other on one switch, under input idle and output
    backpressure patterns; ``seed`` seeds the patterns, ``timeout_cycles`` bounds the run.
    ``latency_skew`` cycles are added to every flit's due cycle (the bench's latency check,
    fredfab.sim.verify.cocotb_bench.latency): 0 but in tests that show a wrong expectation
    of the latency is caught."""

    name: str
    phases: list[Phase]
    doc: str = ""
    seed: int = 1
    idle: Pattern = field(default_factory=Always)
    stall: Pattern = field(default_factory=Always)
    timeout_cycles: int = 20000
    latency_skew: int = 0

    @property
    def sent_flits(self) -> int:
        return sum(ph.sent_flits for ph in self.phases)

    @property
    def expected_flits(self) -> int:
        return sum(ph.expected_flits for ph in self.phases)

    @property
    def resets(self) -> bool:
        """Whether a phase resets the switch in the middle of its traffic."""
        return any(ph.reset_after is not None for ph in self.phases)

    def corrupt_one_expected_flit(self) -> None:
        """Flip the lowest data bit of the middle expected flit of the busiest port of the
        first phase that expects any: a known-wrong expectation, so that a bench can show it
        catches a mismatch (``fred cosim --inject-error``)."""
        for ph in self.phases:
            if ph.expect:
                port = max(ph.expect, key=lambda p: len(ph.expect[p]))
                flits = ph.expect[port]
                data, last = flits[len(flits) // 2]
                flits[len(flits) // 2] = (data ^ 1, last)
                return
        raise ValueError("the scenario expects no flit to corrupt")

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "doc": self.doc or self.name,
            "seed": self.seed,
            "idle": self.idle.to_json(),
            "stall": self.stall.to_json(),
            "timeout_cycles": self.timeout_cycles,
            "latency_skew": self.latency_skew,
            "phases": [ph.to_json() for ph in self.phases],
        }

    @classmethod
    def from_json(cls, d: dict) -> Scenario:
        return cls(
            name=d["name"],
            phases=[Phase.from_json(ph) for ph in d["phases"]],
            doc=d.get("doc", ""),
            seed=int(d.get("seed", 0)),
            idle=pattern_from_json(d.get("idle") or {"kind": "none"}),
            stall=pattern_from_json(d.get("stall") or {"kind": "none"}),
            timeout_cycles=int(d.get("timeout_cycles", 20000)),
            latency_skew=int(d.get("latency_skew", 0)),
        )


@dataclass
class ScenarioFile:
    """The switch manifest (hw/manifest.py) the scenarios run on, and the scenarios."""

    manifest: Path
    scenarios: list[Scenario]

    def to_json(self) -> dict:
        return {
            "schema": SCENARIO_SCHEMA,
            "manifest": str(self.manifest),
            "scenarios": [s.to_json() for s in self.scenarios],
        }

    @classmethod
    def from_json(cls, d: dict) -> ScenarioFile:
        if d.get("schema") != SCENARIO_SCHEMA:
            raise ValueError(f"schema is {d.get('schema')!r}, expected {SCENARIO_SCHEMA!r}")
        return cls(Path(d["manifest"]), [Scenario.from_json(s) for s in d["scenarios"]])

    def write(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self.to_json()) + "\n")

    @classmethod
    def read(cls, path: Path) -> ScenarioFile:
        try:
            return cls.from_json(json.loads(Path(path).read_text()))
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
