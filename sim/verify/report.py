"""The co-simulation report: what the cocotb bench measured, read back by the runner.

The bench (fredfab.sim.verify.cocotb_bench.switch_tb) fills one ``ScenarioReport`` per
scenario and rewrites the ``fred-cosim-report/1`` JSON file (``CosimReport.write``) after
every test, so that the runner (fredfab.sim.verify.cosim) reports without parsing logs and
even when the simulator dies in a later test. The timing card (fredfab.sim.verify.timing)
is computed from the ``PhaseStats`` of its scenario.

Cycles are counted from the end of the bench's reset (cycle 0 = the first cycle the bench
drives); "in cycle t" means sampled before rising edge t + 1, when the transfer happens.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fredfab.sim.atomic import write_text
from fredfab.sim.verify.scenario_file import Flit

REPORT_SCHEMA = "fred-cosim-report/1"
#: The environment variable naming the report file the bench writes.
REPORT_ENV = "FRED_COSIM_REPORT"


@dataclass
class PortStats:
    """One output port in one phase."""

    valid_first: int  # first cycle the port's valid was high
    flits: int = 0  # flits delivered
    first: int | None = None  # cycle of the first / last delivered flit
    last: int | None = None
    ready_first: int | None = None  # cycles the sink was ready, counted up to the first /
    ready_last: int | None = None  # last delivered flit (their difference + 1 is the
    #                                sink's opportunities over the delivery window)


@dataclass
class PhaseStats:
    """What one phase did, for the timing card."""

    label: str
    select_cycles: int | None = None  # select raised to select accepted, both inclusive
    slot_write_cycles: int | None = None  # first cfg word offered to the slot's last accepted
    in_first: int | None = None  # cycle of the phase's first / last accepted input flit
    in_last: int | None = None
    in_flits: int = 0
    out: dict[int, PortStats] = field(default_factory=dict)

    def to_json(self) -> dict:
        d = asdict(self)
        d["out"] = {str(p): asdict(s) for p, s in sorted(self.out.items())}
        return d

    @classmethod
    def from_json(cls, d: dict) -> PhaseStats:
        out = {int(p): PortStats(**s) for p, s in d["out"].items()}
        return cls(**{**d, "out": out})


@dataclass(frozen=True)
class FlitMismatch:
    """The first output flit the scoreboard rejected.

    ``what`` is ``mismatch`` (``expected`` and the phase are set), ``unexpected flit (none
    expected)`` or ``stale flit after reset``; ``index`` counts the port's output flits from
    0 over the whole scenario, ``phase_index`` within the phase."""

    what: str
    port: int
    index: int
    cycle: int
    got: Flit
    text: str
    expected: Flit | None = None
    phase: str | None = None
    phase_index: int | None = None

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> FlitMismatch:
        expected = d.get("expected")
        return cls(
            **{
                **d,
                "got": tuple(d["got"]),
                "expected": tuple(expected) if expected is not None else None,
            }
        )


@dataclass
class ScenarioReport:
    """The outcome of one scenario: passed, or the error and the first mismatching flit."""

    name: str
    passed: bool
    error: str | None = None
    first_mismatch: FlitMismatch | None = None
    cycles: int = 0
    wall_seconds: float = 0.0
    in_flits: int = 0  # input flits accepted
    out_flits: int = 0  # output flits delivered
    phases: list[PhaseStats] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            **asdict(self),
            "first_mismatch": self.first_mismatch.to_json() if self.first_mismatch else None,
            "phases": [ph.to_json() for ph in self.phases],
        }

    @classmethod
    def from_json(cls, d: dict) -> ScenarioReport:
        fm = d.get("first_mismatch")
        return cls(
            **{
                **d,
                "first_mismatch": FlitMismatch.from_json(fm) if fm else None,
                "phases": [PhaseStats.from_json(ph) for ph in d["phases"]],
            }
        )


@dataclass
class CosimReport:
    """Every scenario that reported, by name."""

    scenarios: dict[str, ScenarioReport] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "schema": REPORT_SCHEMA,
            "scenarios": {n: r.to_json() for n, r in self.scenarios.items()},
        }

    @classmethod
    def from_json(cls, d: dict) -> CosimReport:
        if d.get("schema") != REPORT_SCHEMA:
            raise ValueError(f"schema is {d.get('schema')!r}, expected {REPORT_SCHEMA!r}")
        return cls({n: ScenarioReport.from_json(r) for n, r in d["scenarios"].items()})

    def write(self, path: Path) -> None:
        """Replace ``path`` atomically: the runner may read it after the simulator died."""
        write_text(path, json.dumps(self.to_json(), indent=1) + "\n")

    @classmethod
    def read(cls, path: Path) -> CosimReport:
        try:
            return cls.from_json(json.loads(Path(path).read_text()))
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
