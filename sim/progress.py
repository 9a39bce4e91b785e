"""What a long step is doing, for the person waiting on it.

Library code (builds, simulator runs, syntheses) says what it starts with ``step(text)``
and how far counted work is with ``counter(what, total)``; nothing is printed unless a
command asked for it with ``to_stderr(command)``, so library callers and tests stay quiet.

On stderr: every ``step`` is one plain line (``fred cosim: verilator: building ...``); a
counter draws a bar that redraws in place, only when stderr is a terminal (a log or a pipe
gets the step lines alone). stdout stays the command's result, so ``--json`` output is
never mixed with progress; commands turn progress off for ``--json`` altogether.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TextIO

#: Bar width in characters.
BAR = 24


@dataclass
class Reporter:
    """Writes steps and bars to ``stream`` as ``prefix: text``."""

    prefix: str
    stream: TextIO
    bars: bool
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _drawn: bool = False  # a bar is on the current line

    def step(self, text: str) -> None:
        with self._lock:
            self._end_bar()
            self.stream.write(f"{self.prefix}: {text}\n")
            self.stream.flush()

    def bar(self, what: str, done: int, total: int, detail: str = "") -> None:
        if not self.bars:
            return
        filled = BAR * done // max(total, 1)
        line = f"{self.prefix}: {what} [{'#' * filled}{'.' * (BAR - filled)}] {done}/{total}"
        with self._lock:
            # Back to the line's start, the bar, and clear what a longer one left (ANSI EL).
            self.stream.write(f"\r{line} {detail}"[:120] + "\x1b[K")
            self.stream.flush()
            self._drawn = True

    def _end_bar(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self._drawn = False

    def close(self) -> None:
        with self._lock:
            self._end_bar()
            self.stream.flush()


_reporter: ContextVar[Reporter | None] = ContextVar("fred_progress", default=None)


def step(text: str) -> None:
    """Say what starts now (nothing unless a command turned progress on)."""
    r = _reporter.get()
    if r is not None:
        r.step(text)


def enabled() -> bool:
    return _reporter.get() is not None


class Counter:
    """Counted work: ``advance()`` per unit done, or ``set(done)``; a bar on a terminal."""

    def __init__(self, reporter: Reporter | None, what: str, total: int) -> None:
        self.reporter, self.what, self.total, self.done = reporter, what, total, 0

    def set(self, done: int, detail: str = "") -> None:
        self.done = min(done, self.total)
        if self.reporter is not None:
            self.reporter.bar(self.what, self.done, self.total, detail)

    def advance(self, n: int = 1, detail: str = "") -> None:
        self.set(self.done + n, detail)


@contextlib.contextmanager
def counter(what: str, total: int) -> Iterator[Counter]:
    """A Counter for ``total`` units of ``what``; its bar line ends when the block does."""
    r = _reporter.get()
    c = Counter(r, what, total)
    c.set(0)
    try:
        yield c
    finally:
        if r is not None:
            r.close()


@contextlib.contextmanager
def to_stderr(prefix: str, on: bool = True, stream: TextIO | None = None) -> Iterator[None]:
    """Within the block, report progress to stderr (``stream``) as ``prefix: ...``; bars only
    when it is a terminal. ``on`` False: stay silent (a ``--json`` run)."""
    if not on:
        yield
        return
    out = stream if stream is not None else sys.stderr
    isatty = getattr(out, "isatty", None)
    reporter = Reporter(prefix, out, bars=bool(isatty and isatty()))
    token = _reporter.set(reporter)
    try:
        yield
    finally:
        reporter.close()
        _reporter.reset(token)


@contextlib.contextmanager
def watching(path, on_line: Callable[[str], None], every: float = 0.5) -> Iterator[None]:
    """While the block runs (a subprocess writing its log to ``path``), call ``on_line`` for
    every new line of the file, from a thread polling it every ``every`` seconds; the lines
    written last are read when the block ends. Does nothing when progress is off."""
    if not enabled():
        yield
        return
    reporter = _reporter.get()
    stop = threading.Event()
    position = 0
    pending = ""

    def poll() -> None:
        nonlocal position, pending
        try:
            with open(path, errors="replace") as f:
                f.seek(position)
                chunk = f.read()
                position = f.tell()
        except OSError:
            return
        pending += chunk
        *lines, pending = pending.split("\n")
        for line in lines:
            on_line(line)

    def loop() -> None:
        _reporter.set(reporter)  # a new thread starts from the default context
        while not stop.wait(every):
            poll()
        poll()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=max(2.0, every * 4))


def pool_map(pool, workers: int, fn: Callable, jobs: list, names: list[str], doing: str) -> list:
    """``list(pool.map(fn, jobs))`` for a pool of ``workers`` processes (concurrent.futures),
    saying what starts (``doing``, e.g. "synthesising with Yosys") and each job as it ends,
    with its name, how many are done and the time so far."""
    from concurrent.futures import as_completed

    step(f"{doing}: {len(jobs)} variant(s), {workers} at a time: {', '.join(names)}")
    t0 = time.perf_counter()
    futures = {pool.submit(fn, job): k for k, job in enumerate(jobs)}
    results: list = [None] * len(jobs)
    for done, future in enumerate(as_completed(futures), 1):
        k = futures[future]
        results[k] = future.result()
        step(f"done {names[k]} ({done} of {len(jobs)}, {time.perf_counter() - t0:.0f} s)")
    return results
