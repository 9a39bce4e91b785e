"""A switch timing card turned into seconds and bandwidth for the system model: per-hop
latency, reconfiguration and preemption time, the fraction of line rate each collective
kind sustains, and the one-line description tables print."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fredfab.model.system.elements import FabricError
from fredfab.model.system.units import GHZ, to_ns
from fredfab.model.timing_card import CONDITIONS, TimingCard, default_card
from fredfab.model.toml_fields import check_choice, check_int, check_number

#: Flit width in bytes (the paper's is 512).
MAX_FLIT_BYTES = 65536


#: Switch clock when neither the fabric nor the timing card gives one. Assumption: the paper
#: gives none; 1 GHz is a conservative clock for the 15 nm NanGate library the paper's
#: post-layout numbers use.
DEFAULT_CLOCK_HZ = 1 * GHZ
DEFAULT_CLOCK_SOURCE = "assumed: the paper gives no switch clock"
#: Most GHz a fabric file may give its switch clock: a thousand times the assumed 1 GHz, so a
#: typo (or 1e300, infinite in Hz) fails at once, naming its key.
MAX_CLOCK_GHZ = 1000.0


@dataclass(frozen=True)
class SwitchTiming:
    """A switch timing card turned into seconds and bandwidth.

    The switch datapath is assumed sized to carry its links' rate at ``clock_hz``; the card's
    throughput (flits/cycle/port, 1.0 = one flit per cycle = line rate) scales the bandwidth a
    link leaving the switch can sustain for a given collective kind.
    """

    card: TimingCard = field(default_factory=default_card)
    #: Switch clock in Hz. None (the default) takes the card's measured clock when it has one
    #: (TimingCard.clock_hz, e.g. an FPGA Fmax the user wrote into it), else DEFAULT_CLOCK_HZ;
    #: after construction it is always a number. Fabric files state ``[switch] clock_GHz``
    #: only to differ from both.
    clock_hz: float | None = None
    #: Where clock_hz comes from, for reports; filled in when empty.
    clock_source: str = field(default="", compare=False)
    #: Flit width, paper §5.4 (flit 512 B). Used to report the datapath
    #: lanes a link rate implies; the bandwidth model itself needs only the fraction. The one
    #: default: fabric files state ``[switch] flit_bytes`` only to differ from it.
    flit_bytes: int = 512
    #: Which measured throughput applies: "ready" (outputs always ready: the switch's own
    #: capability; congestion is modelled by the network simulator) or "backpressure".
    condition: str = "ready"

    def __post_init__(self) -> None:
        if self.clock_hz is None:
            measured = self.card.clock_hz is not None
            object.__setattr__(self, "clock_hz", self.card.clock_hz or DEFAULT_CLOCK_HZ)
            object.__setattr__(
                self,
                "clock_source",
                f"timing card: {self.card.clock_source}" if measured else DEFAULT_CLOCK_SOURCE,
            )
        elif not self.clock_source:
            object.__setattr__(self, "clock_source", "given")
        check_number(self.clock_hz, "switch clock (Hz)", lo=0, lo_open=True, error=FabricError)
        check_int(self.flit_bytes, "flit width (bytes)", lo=1, hi=MAX_FLIT_BYTES, error=FabricError)
        check_choice(self.condition, "throughput condition", CONDITIONS, error=FabricError)

    def describe_clock(self) -> str:
        """The clock and where it comes from, e.g. ``1 GHz (assumed: ...)``."""
        hz = float(self.clock_hz)  # type: ignore[arg-type]  # set in __post_init__
        value = f"{hz / GHZ:.4g} GHz" if hz >= GHZ else f"{hz / 1e6:.4g} MHz"
        return f"{value} ({self.clock_source})"

    @property
    def hop_latency(self) -> float:
        """Seconds from a flit accepted at an input port to valid at an output port."""
        return self.card.latency_cycles / self.clock_hz

    @property
    def reconfiguration_time(self) -> float:
        """Seconds to switch the circuit configuration between two phases."""
        return self.card.reconfiguration_cycles / self.clock_hz

    @property
    def preempt_time(self) -> float:
        """Seconds a waiting higher-priority phase waits for the switch (packet mode)."""
        return self.card.packet_costs.preempt_cycles / self.clock_hz

    def fraction(self, kind: str) -> float:
        """Sustainable fraction of line rate for flows of ``kind``."""
        return self.card.fraction(kind, self.condition)

    def sustainable_bandwidth(self, link_bandwidth: float, kind: str) -> float:
        """Bytes/s a link of ``link_bandwidth`` leaving the switch carries for ``kind``."""
        return link_bandwidth * self.fraction(kind)

    def datapath_flits_per_cycle(self, link_bandwidth: float) -> float:
        """Flits per cycle the datapath must move per port to carry ``link_bandwidth``."""
        return link_bandwidth / (self.clock_hz * self.flit_bytes)

    def to_dict(self) -> dict:
        """Which card applies and what it costs: what tables and JSON report with a result."""
        return {
            "card": self.card.name,
            "simulator": self.card.simulator,
            "latency_cycles": self.card.latency_cycles,
            "clock_GHz": self.clock_hz / GHZ,
            "clock_source": self.clock_source,
            "hop_latency_ns": to_ns(self.hop_latency),
            "throughput_condition": self.condition,
            # Packet mode's costs; "derived" names those the card does not measure.
            "packet": self.card.packet_costs.to_dict() | {"preempt_ns": to_ns(self.preempt_time)},
        }

    def describe(self) -> str:
        """One line: ``built-in (5 cycles per hop at 1 GHz = 5 ns)``."""
        return describe_timing(self.to_dict())


def describe_timing(timing: Mapping[str, Any]) -> str:
    """SwitchTiming.to_dict() as one line for a table, the clock's source and the packet
    costs (measured, or derived where the card has none) included."""
    text = (
        f"{timing['card']} ({timing['latency_cycles']:g} cycles per hop at "
        f"{timing['clock_GHz']:g} GHz = {timing['hop_latency_ns']:g} ns; "
        f"clock {timing['clock_source']})"
    )
    pk = timing.get("packet")
    if pk:
        costs = ("preempt_cycles", "credit_rtt_cycles", "vc_share")
        measured = [f for f in costs if f not in pk["derived"]]
        source = "measured" if len(measured) == len(costs) else "derived"
        if measured and len(measured) < len(costs):
            source = "partly measured"
        text += (
            f"; packets: {pk['header_flits']} header flit per {pk['packet_flits']}, preemption "
            f"{pk['preempt_cycles']:g} cycles, credit round trip {pk['credit_rtt_cycles']:g} "
            f"cycles, VC share {pk['vc_share']:g} ({source})"
        )
    return text
