"""Drivers of the switch's input streams: flits into the ports, configuration words, select.

Shaped like cocotbext-axi's ``AxiStreamSource`` (``send``, ``count``, ``empty``, ``idle``,
``clear``, ``set_pause_generator``), with one difference: a driver does not run its own
coroutine. The environment (fredfab.sim.verify.cocotb_bench.env) clocks every driver,
sink and monitor from one loop, ``drive()`` once per cycle and ``sample()`` in that cycle's
ReadOnly phase, in a fixed order; the cycle of every transfer then does not depend on how a
simulator orders coroutines woken by the same edge, and Icarus and Verilator agree cycle
for cycle (a test checks it).

Stream rules (amaranth.lib.stream): valid never waits for ready and never drops before the
transfer; pauses are inserted only between flits.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from fredfab.sim.verify.cocotb_bench.harness import Stream, SwitchHarness
from fredfab.sim.verify.cocotb_bench.patterns import PauseGenerator
from fredfab.sim.verify.scenario_file import Flit


class FlitSource:
    """Sends flits into one input port; each flit carries a tag (its phase) to the monitor."""

    def __init__(self, harness: SwitchHarness, port: int) -> None:
        self.h = harness
        self.port = port
        self.stream: Stream = harness.inputs[port]
        self.queue: deque[tuple[Flit, int]] = deque()
        self.current: tuple[Flit, int] | None = None  # offered, not yet accepted
        #: Whether ``current`` was offered for the first time in this cycle's drive().
        self.first_offered = False
        self._pause: PauseGenerator | None = None

    def set_pause_generator(self, generator: PauseGenerator | None = None) -> None:
        """Idle insertion: before offering a flit, one value is drawn; True waits a cycle."""
        self._pause = generator

    def send(self, flits: Iterable[Flit], tag: int) -> None:
        self.queue.extend((flit, tag) for flit in flits)

    def count(self) -> int:
        return len(self.queue)

    def empty(self) -> bool:
        return not self.queue

    def idle(self) -> bool:
        """Nothing queued and nothing offered."""
        return not self.queue and self.current is None

    def clear(self) -> None:
        """Drop every queued and offered flit (reset)."""
        self.queue.clear()
        self.current = None
        self.first_offered = False
        self.h.put(self.stream.valid, 0)

    def drive(self) -> None:
        # A pause is drawn only when a flit could start (cocotbext-axi draws one every
        # cycle): a pattern then counts flit slots, not cycles spent waiting for ready or
        # for the next phase, and the scenarios' timing stays what it was measured as.
        self.first_offered = False
        if self.current is None and self.queue and not (self._pause and next(self._pause)):
            self.current = self.queue.popleft()
            self.first_offered = True
            self.h.put(self.stream.payload, self.h.flit.encode(self.current[0]))
            self.h.put(self.stream.valid, 1)
        elif self.current is None:
            self.h.put(self.stream.valid, 0)

    def sample(self) -> int | None:
        """The tag of the flit the switch accepts at the coming edge, if any."""
        if self.current is not None and self.h.bit(self.stream.ready):
            tag = self.current[1]
            self.current = None
            return tag
        return None


class ConfigWriter:
    """Writes one slot's configuration words through ``cfg``, one word per accepted cycle."""

    def __init__(self, harness: SwitchHarness) -> None:
        self.h = harness
        self.queue: deque[int] = deque()
        self.tag: int | None = None
        self._start: int | None = None  # cycle the first word was offered

    def write(self, slot: int, words: Iterable[int], tag: int) -> None:
        self.queue.extend(self.h.cfg_word(slot, a, w) for a, w in enumerate(words))
        self.tag, self._start = tag, None

    def count(self) -> int:
        return len(self.queue)

    def clear(self) -> None:
        self.queue.clear()
        self.h.put(self.h.cfg.valid, 0)

    def drive(self) -> None:
        if self.queue:
            if self._start is None:
                self._start = self.h.cycle
            self.h.put(self.h.cfg.payload, self.queue[0])
            self.h.put(self.h.cfg.valid, 1)
        else:
            self.h.put(self.h.cfg.valid, 0)

    def sample(self) -> tuple[int, int] | None:
        """(tag, cycles the write took) once the last word is accepted at the coming edge."""
        if self.queue and self.h.bit(self.h.cfg.ready):
            self.queue.popleft()
            if not self.queue and self.tag is not None:
                return self.tag, self.h.cycle - self._start + 1
        return None


class SlotSelect:
    """Raises ``select`` with a slot and sees it accepted (the control unit's phase change)."""

    def __init__(self, harness: SwitchHarness) -> None:
        self.h = harness
        self.slot: int | None = None  # the slot offered, while select is high
        self.raised: int = 0  # cycle select rose
        self.accepted: int | None = None  # cycle it was accepted (None: not since raised)

    def request(self, slot: int) -> None:
        self.h.put(self.h.select.payload, slot)
        self.h.put(self.h.select.valid, 1)
        self.slot, self.raised, self.accepted = slot, self.h.cycle, None

    def release(self) -> None:
        self.h.put(self.h.select.valid, 0)
        self.slot = None

    @property
    def pending(self) -> bool:
        """Raised and not yet accepted."""
        return self.slot is not None and self.accepted is None

    def sample(self) -> None:
        if self.h.bit(self.h.select.valid) and self.h.bit(self.h.select.ready):
            self.accepted = self.h.cycle
