"""The phase sequencer: a scenario's phases, one after the other, on the control unit's contract
(hw/control.py).

* Phase n's configuration ``words`` are written into its ``slot`` through ``cfg`` while
  phase n-1's traffic runs (phase 0's before anything else); the scenario builder never
  writes the active slot.
* Once every flit of phase n-1 has been accepted and the slot write is done, ``select`` rises
  with the slot; phase n's sources start offering flits in the next cycle (they wait at
  closed ports), and ``select`` drops after the cycle it was accepted in. ``slot`` None keeps
  the active configuration (after reset: slot 0, the all-unicast identity) and raises
  nothing.
* A phase's ``idle`` pattern applies to the inputs from the cycle its flits are queued, its
  ``stall`` pattern to the outputs once its select completed, i.e. once every flit of the
  previous phase has left the switch.
* ``drain`` waits until every expected output flit arrived, ``wait_before: c`` then waits c
  more cycles, before the phase starts (an idle switch for timing measurements).
* ``reset_after: k`` asserts ``rst`` for two cycles once k flits of the phase were accepted:
  sources drop their flits, output flits seen so far were checked as a prefix of the
  expected ones, the rest of the phase's expected flits are dropped, and for ``latency + 4``
  cycles after reset no output may be valid (nothing stale may come out). Later phases
  start from the reset state.

The sequencer is a generator stepped once per cycle by the environment, before the drivers
drive, so that every decision it takes is visible to the drivers in the same cycle.
"""

from __future__ import annotations

import random
from collections.abc import Generator

from fredfab.sim.verify.cocotb_bench.drivers import ConfigWriter, FlitSource, SlotSelect
from fredfab.sim.verify.cocotb_bench.harness import SwitchHarness
from fredfab.sim.verify.cocotb_bench.monitors import FlitSink, PhaseMonitor
from fredfab.sim.verify.cocotb_bench.patterns import Pattern, PauseGenerator
from fredfab.sim.verify.cocotb_bench.scoreboard import Scoreboard
from fredfab.sim.verify.scenario_file import Scenario

#: Cycles ``rst`` is held in the middle of traffic.
MID_TRAFFIC_RESET_CYCLES = 2
#: Cycles after a mid-traffic reset, beyond the pipeline latency, in which no output may be valid.
QUIET_MARGIN = 4


class PhaseSequencer:
    """Loads slots, selects them, feeds each phase's flits to the sources and the scoreboard,
    and resets the switch where a phase says so."""

    def __init__(
        self,
        harness: SwitchHarness,
        scenario: Scenario,
        rng: random.Random,
        sources: list[FlitSource],
        sinks: list[FlitSink],
        config: ConfigWriter,
        select: SlotSelect,
        scoreboard: Scoreboard,
        monitor: PhaseMonitor,
    ) -> None:
        self.h = harness
        self.phases = scenario.phases
        self.rng = rng
        self.sources, self.sinks = sources, sinks
        self.config, self.select = config, select
        self.scoreboard, self.monitor = scoreboard, monitor
        self.phase = -1  # the phase whose flits were queued last
        self.in_reset = False
        self.done = False
        self._steps = self._run()

    def step(self) -> None:
        """Advance by one cycle (until every phase has been started)."""
        if not self.done:
            try:
                next(self._steps)
            except StopIteration:
                self.done = True

    def inputs_busy(self) -> bool:
        return not all(s.idle() for s in self.sources)

    def pause_generators(self, pattern: Pattern) -> list[PauseGenerator]:
        """One generator per port, each with its own seed from the scenario's generator."""
        return [pattern.pauses(random.Random(self.rng.random())) for _ in self.sources]

    # ---------------------------------------------------------------- steps

    def _run(self) -> Generator[None, None, None]:
        self._write_slot(0)
        for n, ph in enumerate(self.phases):
            while self.config.count() or self.inputs_busy():
                yield
            if ph.drain:
                while self.scoreboard.pending():
                    yield
            for _ in range(ph.wait_before):
                yield
            if ph.slot is not None:
                yield from self._select(n, ph.slot)
            else:
                self._feed(n)
                self._apply_stall(n)
            self._write_slot(n + 1)
            if ph.reset_after is not None:
                while self.monitor.phases[n].in_flits < ph.reset_after:
                    yield
                yield from self._reset(n)
                self._write_slot(n + 1)

    def _write_slot(self, n: int) -> None:
        if n < len(self.phases) and self.phases[n].words is not None:
            self.config.write(self.phases[n].slot, self.phases[n].words, n)

    def _select(self, n: int, slot: int) -> Generator[None, None, None]:
        self.select.request(slot)
        yield
        self._feed(n)
        while self.select.accepted is None:
            yield
        self.monitor.selected(n, self.select.accepted - self.select.raised + 1)
        self.select.release()
        self._apply_stall(n)

    def _feed(self, n: int) -> None:
        ph = self.phases[n]
        if ph.idle is not None:
            for src, gen in zip(self.sources, self.pause_generators(ph.idle), strict=True):
                src.set_pause_generator(gen)
        for p, flits in ph.send.items():
            self.sources[p].send(flits, n)
        for p, flits in ph.expect.items():
            self.scoreboard.expect(p, flits, n)
        self.phase = n

    def _apply_stall(self, n: int) -> None:
        ph = self.phases[n]
        if ph.stall is not None:
            for sink, gen in zip(self.sinks, self.pause_generators(ph.stall), strict=True):
                sink.set_pause_generator(gen)

    def _reset(self, n: int) -> Generator[None, None, None]:
        for src in self.sources:
            src.clear()
        self.config.clear()
        self.select.release()
        self.h.put(self.h.rst, 1)
        self.in_reset = True
        # Expected flits of the interrupted phases are dropped; what came out was checked.
        self.scoreboard.drop_through(n)
        for _ in range(MID_TRAFFIC_RESET_CYCLES):
            yield
        self.h.put(self.h.rst, 0)
        self.in_reset = False
        self.scoreboard.quiet = True
        for _ in range(self.h.latency + QUIET_MARGIN):
            yield
        self.scoreboard.quiet = False
