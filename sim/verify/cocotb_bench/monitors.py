"""The receiving side: a sink per output port and the monitor that times every phase.

``FlitSink`` is shaped like cocotbext-axi's ``AxiStreamSink``: it drives ``ready`` from a
backpressure (pause) generator and takes the flits the switch delivers; like the drivers it
is clocked by the environment (see fredfab.sim.verify.cocotb_bench.drivers for why).
``PhaseMonitor`` turns what the sources, sinks and control drivers saw into the per-phase
statistics of the report (fredfab.sim.verify.report.PhaseStats), from which the timing card
is computed.
"""

from __future__ import annotations

from fredfab.sim.verify.cocotb_bench.harness import Stream, SwitchHarness
from fredfab.sim.verify.cocotb_bench.patterns import PauseGenerator
from fredfab.sim.verify.report import PhaseStats, PortStats
from fredfab.sim.verify.scenario_file import Flit


class FlitSink:
    """Takes flits from one output port, ready except where the pause generator says."""

    def __init__(self, harness: SwitchHarness, port: int) -> None:
        self.h = harness
        self.port = port
        self.stream: Stream = harness.outputs[port]
        self.ready = 0  # driven in this cycle
        self.ready_cycles = 0  # cycles sampled ready so far (the sink's opportunities)
        self._pause: PauseGenerator | None = None

    def set_pause_generator(self, generator: PauseGenerator | None = None) -> None:
        """Backpressure: one value per cycle, True holds ready low; None = always ready."""
        self._pause = generator

    def drive(self) -> None:
        self.ready = 0 if self._pause and next(self._pause) else 1
        self.h.put(self.stream.ready, self.ready)

    def sample(self) -> tuple[bool, Flit | None]:
        """(valid, the flit delivered at the coming edge or None)."""
        if self.ready:
            self.ready_cycles += 1
        valid = bool(self.h.bit(self.stream.valid))
        if not (valid and self.ready):
            return valid, None
        return valid, self.h.flit.decode(self.h.word(self.stream.payload))


class PhaseMonitor:
    """Per-phase statistics: when inputs were accepted, outputs valid and delivered, and how
    long slot writes and selects took."""

    def __init__(self, labels: list[str]) -> None:
        self.phases = [PhaseStats(label) for label in labels]
        self.in_flits = 0  # over the whole scenario

    def label(self, phase: int) -> str:
        return self.phases[phase].label

    def input_accepted(self, phase: int, cycle: int) -> None:
        st = self.phases[phase]
        st.in_flits += 1
        if st.in_first is None:
            st.in_first = cycle
        st.in_last = cycle
        self.in_flits += 1

    def _port(self, phase: int, port: int, cycle: int) -> PortStats:
        # Called in every cycle an output is valid: look up before building a new record.
        out = self.phases[phase].out
        stats = out.get(port)
        if stats is None:
            stats = out[port] = PortStats(valid_first=cycle)
        return stats

    def output_valid(self, phase: int, port: int, cycle: int) -> None:
        self._port(phase, port, cycle)

    def output_delivered(self, phase: int, port: int, cycle: int, ready_cycles: int) -> None:
        o = self._port(phase, port, cycle)
        o.flits += 1
        if o.first is None:
            o.first, o.ready_first = cycle, ready_cycles
        o.last, o.ready_last = cycle, ready_cycles

    def slot_written(self, phase: int, cycles: int) -> None:
        self.phases[phase].slot_write_cycles = cycles

    def selected(self, phase: int, cycles: int) -> None:
        self.phases[phase].select_cycles = cycles
