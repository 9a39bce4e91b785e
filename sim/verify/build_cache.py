"""One build cache for generated Verilog and simulator builds: a directory, a lock, a stamp.

``cached_build(directory, key, build)`` takes an exclusive lock on ``directory/.lock`` (so
pytest-xdist workers and concurrent commands never build the same thing twice or read a
half-written build), compares ``directory/stamp`` with ``key`` (a digest of everything the
build depends on), and runs ``build()`` only when they differ or an expected output is
missing. The stamp is removed before building and written only after ``build()`` returns,
so a failed or interrupted build is never mistaken for a good one.
"""

from __future__ import annotations

import contextlib
import fcntl
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path


@contextlib.contextmanager
def directory_lock(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``directory/.lock`` (the directory is made if missing):
    one process at a time builds in, or runs from, that directory."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def cached_build(
    directory: Path, key: str, build: Callable[[], None], outputs: Iterable[Path] = ()
) -> float:
    """Run ``build()`` in ``directory`` unless its stamp holds ``key`` and every path in
    ``outputs`` exists; return the seconds spent building (0.0 when the cache was good)."""
    directory = Path(directory)
    with directory_lock(directory):
        stamp = directory / "stamp"
        if stamp.exists() and stamp.read_text() == key and all(p.exists() for p in outputs):
            return 0.0
        stamp.unlink(missing_ok=True)
        t0 = time.perf_counter()
        build()
        stamp.write_text(key)
        return time.perf_counter() - t0
