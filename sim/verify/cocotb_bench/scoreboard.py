"""The scoreboard: every output flit against the expected ones, bit-exact, in order, per port.

Expected flits come from the functional model (fredfab.sim.verify.scenarios); the first
flit that differs in data or ``last``, arrives where nothing is expected, or comes out in
the quiet window after a reset stops the scenario with a ``FlitMismatchError`` naming the
port, the flit, the phase and both values with their lanes decoded; the record of it
(fredfab.sim.verify.report.FlitMismatch) goes into the report. The environment rejects a
right flit at the wrong time the same way (``reject``: the latency check, latency.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import NamedTuple

from fredfab.sim.verify.report import FlitMismatch
from fredfab.sim.verify.scenario_file import Flit


class FlitMismatchError(AssertionError):
    """The scoreboard rejected an output flit; ``record`` says which and why."""

    def __init__(self, record: FlitMismatch) -> None:
        super().__init__(record.text)
        self.record = record


class Expected(NamedTuple):
    flit: Flit
    phase: int
    index: int  # within the phase's flits for this port


class Scoreboard:
    """Expected flits per output port, checked in order as the sinks receive flits."""

    def __init__(self, ports: int, labels: list[str], describe: Callable[[Flit], str]) -> None:
        self.labels = labels
        self.describe = describe
        self.expected: list[deque[Expected]] = [deque() for _ in range(ports)]
        self.received = [0] * ports  # flits received per port
        self.total_received = 0
        self.quiet = False  # any flit now is stale (just after a reset)
        self.first_mismatch: FlitMismatch | None = None
        self.last_checked: Expected | None = None  # the expected flit check() took last

    def expect(self, port: int, flits: Iterable[Flit], phase: int) -> None:
        self.expected[port].extend(Expected(f, phase, k) for k, f in enumerate(flits))

    def pending(self) -> bool:
        """Whether a flit is still expected at any port."""
        return any(self.expected)

    def head_phase(self, port: int) -> int | None:
        """The phase of the next flit expected at ``port``."""
        q = self.expected[port]
        return q[0].phase if q else None

    def drop_through(self, phase: int) -> None:
        """Forget the expected flits of phases up to ``phase`` (their traffic was reset)."""
        for q in self.expected:
            while q and q[0].phase <= phase:
                q.popleft()

    def check(self, port: int, flit: Flit, cycle: int) -> int:
        """Check the flit ``port`` delivered in ``cycle``; return its phase."""
        index = self.received[port]
        self.received[port] += 1
        self.total_received += 1
        if self.quiet:
            self._fail("stale flit after reset", port, index, cycle, flit)
        if not self.expected[port]:
            self._fail("unexpected flit (none expected)", port, index, cycle, flit)
        want = self.expected[port].popleft()
        if want.flit != flit:
            self._fail("mismatch", port, index, cycle, flit, want)
        self.last_checked = want
        return want.phase

    def reject(self, what: str, port: int, cycle: int, flit: Flit, detail: str) -> None:
        """Fail on the flit check() just accepted at ``port``: ``what`` (e.g. ``latency``) on
        it, ``detail`` saying why."""
        want = self.last_checked
        assert want is not None, "reject() follows an accepted check()"
        index = self.received[port] - 1
        text = (
            f"{what} on output port {port}, flit {index} (phase {self.labels[want.phase]!r}, "
            f"flit {want.index} of the phase) in cycle {cycle}: {detail}"
        )
        record = FlitMismatch(
            what, port, index, cycle, flit, text, want.flit, self.labels[want.phase], want.index
        )
        self.first_mismatch = record
        raise FlitMismatchError(record)

    def _fail(
        self,
        what: str,
        port: int,
        index: int,
        cycle: int,
        got: Flit,
        want: Expected | None = None,
    ) -> None:
        text = f"{what} on output port {port}, flit {index}"
        if want is not None:
            label = self.labels[want.phase]
            text += f" (phase {label!r}, flit {want.index} of the phase)"
            text += f": expected {self.describe(want.flit)}, got {self.describe(got)}"
            record = FlitMismatch(what, port, index, cycle, got, text, want.flit, label, want.index)
        else:
            text += f": got {self.describe(got)}"
            record = FlitMismatch(what, port, index, cycle, got, text)
        self.first_mismatch = record
        raise FlitMismatchError(record)

    def missing(self) -> list[str]:
        """The flits still expected, one line per port (for hang and timeout messages)."""
        rows = []
        for p, q in enumerate(self.expected):
            if q:
                head = q[0]
                rows.append(
                    f"port {p}: {len(q)} flits missing, next (phase "
                    f"{self.labels[head.phase]!r}, flit {head.index}) {self.describe(head.flit)}"
                )
        return rows
