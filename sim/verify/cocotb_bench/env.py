"""The verification environment of one scenario: drivers, sinks, monitor, scoreboard and the
phase sequencer around one switch, clocked from one loop.

Every cycle: the sequencer steps, every source and sink drives (port by port), the
configuration writer drives; in the ReadOnly phase (after this cycle's writes settled) the
same components sample, so the transfers seen there happen at the coming rising edge, the
same on Icarus and Verilator. Every delivered flit is checked twice: bit for bit by the
scoreboard, and for the cycle it became valid by the latency check (latency.py: exactly the
manifest's path latency after its last operand while the outputs are always ready, never
earlier under backpressure). A scenario fails at the first rejected flit, when
nothing moves for ``STALL_LIMIT`` cycles while something is pending (a hang: a missing flit,
a select never accepted), or after the scenario's ``timeout_cycles``. Once every phase ran
and every expected flit arrived, the outputs stay ready for ``latency + TAIL_MARGIN`` more
cycles, and any further flit is an error.
"""

from __future__ import annotations

import random

from cocotb.triggers import ReadOnly, RisingEdge

from fredfab.sim.verify.cocotb_bench.drivers import ConfigWriter, FlitSource, SlotSelect
from fredfab.sim.verify.cocotb_bench.harness import SwitchHarness
from fredfab.sim.verify.cocotb_bench.latency import LatencyCheck
from fredfab.sim.verify.cocotb_bench.monitors import FlitSink, PhaseMonitor
from fredfab.sim.verify.cocotb_bench.scoreboard import Scoreboard
from fredfab.sim.verify.cocotb_bench.sequencer import PhaseSequencer
from fredfab.sim.verify.report import ScenarioReport
from fredfab.sim.verify.scenario_file import Scenario

#: Cycles without any transfer, while flits are still to send or expected, that count as a
#: hang (the longest pause of any pattern is 40 cycles; a phase change takes tens).
STALL_LIMIT = 1000
#: Cycles beyond the pipeline latency that the outputs stay ready after the last flit.
TAIL_MARGIN = 8

Progress = tuple[int, int, int, bool]


class SwitchEnv:
    """One scenario on one switch (after the harness' reset)."""

    def __init__(self, harness: SwitchHarness, scenario: Scenario) -> None:
        self.h = harness
        self.scenario = scenario
        ports = harness.ports
        labels = [ph.label for ph in scenario.phases]
        self.sources = [FlitSource(harness, p) for p in range(ports)]
        self.sinks = [FlitSink(harness, p) for p in range(ports)]
        self.config = ConfigWriter(harness)
        self.select = SlotSelect(harness)
        self.monitor = PhaseMonitor(labels)
        self.scoreboard = Scoreboard(ports, labels, harness.flit.describe)
        self.latency = LatencyCheck(harness.manifest, scenario)
        self.valid_since: list[int | None] = [None] * ports  # when each port's flit showed
        self.last_stall: int | None = None  # the last cycle any output was not ready
        self.sequencer = PhaseSequencer(
            harness,
            scenario,
            random.Random(scenario.seed),
            self.sources,
            self.sinks,
            self.config,
            self.select,
            self.scoreboard,
            self.monitor,
        )
        seq = self.sequencer
        for src, gen in zip(self.sources, seq.pause_generators(scenario.idle), strict=True):
            src.set_pause_generator(gen)
        for sink, gen in zip(self.sinks, seq.pause_generators(scenario.stall), strict=True):
            sink.set_pause_generator(gen)

    async def run(self) -> None:
        """Run the scenario; raise AssertionError (FlitMismatchError for a rejected flit)."""
        h = self.h
        start = h.cycle
        tail: int | None = None
        progress: Progress | None = None
        last_moved = h.cycle
        while True:
            self.sequencer.step()
            if tail is None and self._finished():
                tail = h.latency + TAIL_MARGIN
                for sink in self.sinks:
                    sink.set_pause_generator(None)
            if tail is not None:
                if tail == 0:
                    break
                tail -= 1
            self._drive()
            await ReadOnly()
            self._sample()
            await RisingEdge(h.clk)
            h.cycle += 1
            moved = self._progress()
            if moved != progress or not self._waiting():
                progress, last_moved = moved, h.cycle
            elif h.cycle - last_moved > STALL_LIMIT:
                raise AssertionError(
                    f"no flit moved for {STALL_LIMIT} cycles (phase {self.sequencer.phase}): "
                    f"{self.missing()}"
                )
            if h.cycle - start > self.scenario.timeout_cycles:
                raise AssertionError(
                    f"timeout after {self.scenario.timeout_cycles} cycles "
                    f"(phase {self.sequencer.phase}): {self.missing()}"
                )
        h.quiet_inputs()

    def report(self, error: str | None, wall_seconds: float) -> ScenarioReport:
        return ScenarioReport(
            name=self.scenario.name,
            passed=error is None,
            error=error,
            first_mismatch=self.scoreboard.first_mismatch,
            cycles=self.h.cycle,
            wall_seconds=wall_seconds,
            in_flits=self.monitor.in_flits,
            out_flits=self.scoreboard.total_received,
            phases=self.monitor.phases,
        )

    def missing(self) -> str:
        """What is still pending, for hang and timeout messages."""
        rows = self.scoreboard.missing()
        stuck = [p for p, src in enumerate(self.sources) if not src.idle()]
        if stuck:
            rows.append(f"inputs still sending: {stuck}")
        if self.config.count():
            rows.append(f"{self.config.count()} configuration words unwritten")
        if self.select.pending:
            rows.append(f"select of slot {self.select.slot} not accepted")
        return "; ".join(rows) or "nothing missing"

    # ---------------------------------------------------------------- per cycle

    def _finished(self) -> bool:
        return (
            self.sequencer.done
            and not self.sequencer.inputs_busy()
            and not self.scoreboard.pending()
        )

    def _progress(self) -> Progress:
        return (
            self.monitor.in_flits,
            self.scoreboard.total_received,
            self.config.count(),
            self.select.accepted is not None,
        )

    def _waiting(self) -> bool:
        """Whether something should still move: flits to send or expected, a select raised."""
        return (
            self.sequencer.inputs_busy()
            or self.scoreboard.pending()
            or self.select.slot is not None
        )

    def _drive(self) -> None:
        for src, sink in zip(self.sources, self.sinks, strict=True):
            src.drive()
            sink.drive()
        self.config.drive()

    def _sample(self) -> None:
        if self.sequencer.in_reset:
            self.valid_since = [None] * len(self.sinks)  # the reset empties the outputs
            return
        cycle = self.h.cycle
        # Every input first: without register slices a flit leaves in the cycle its operands
        # go in, from any input port, so an output is checked only after all of this cycle's
        # inputs are known.
        for p, src in enumerate(self.sources):
            if src.first_offered:
                self.latency.input_offered(src.current[1], p, cycle)
            accepted = src.sample()  # the accepted flit's phase
            if accepted is not None:
                self.monitor.input_accepted(accepted, cycle)
                self.latency.input_accepted(accepted, p, cycle)
        for p, sink in enumerate(self.sinks):
            if not sink.ready:
                self.last_stall = cycle
            valid, flit = sink.sample()
            if valid:
                head = self.scoreboard.head_phase(p)
                self.monitor.output_valid(
                    head if head is not None else max(self.sequencer.phase, 0), p, cycle
                )
                if self.valid_since[p] is None:
                    self.valid_since[p] = cycle
            if flit is not None:
                phase = self.scoreboard.check(p, flit, cycle)
                want = self.scoreboard.last_checked
                wrong = self.latency.check(
                    phase, p, want.index, self.valid_since[p], self.last_stall
                )
                if wrong:
                    self.scoreboard.reject("latency", p, cycle, flit, wrong)
                self.valid_since[p] = None
                self.monitor.output_delivered(phase, p, cycle, sink.ready_cycles)
        written = self.config.sample()
        if written is not None:
            self.monitor.slot_written(*written)
        self.select.sample()
