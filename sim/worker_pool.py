"""Worker processes that stop at once when the run is interrupted or fails.

``concurrent.futures.ProcessPoolExecutor`` used as a context manager waits, on the way out,
for every task already handed to a worker and every task still queued: after Ctrl-C a strategy
sweep went on for 25 s, a synthesis run for minutes, and each worker printed its own
KeyboardInterrupt traceback (a terminal's Ctrl-C reaches the whole process group).
``worker_pool`` gives workers that ignore SIGINT (the parent decides) and, when the block
raises anything (KeyboardInterrupt included), cancels what is queued and ends the workers
before the exception goes on.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager


def _leave_interrupts_to_the_parent() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def worker_pool(max_workers: int | None = None) -> Iterator[ProcessPoolExecutor]:
    """A process pool of ``max_workers`` (default: one per CPU) that waits for its tasks when
    the block ends normally, and stops them at once when it raises."""
    pool = ProcessPoolExecutor(max_workers=max_workers, initializer=_leave_interrupts_to_the_parent)
    try:
        yield pool
    except BaseException:
        stop(pool)
        raise
    pool.shutdown(wait=True)


def stop(pool: ProcessPoolExecutor) -> None:
    """Cancel the queued tasks of ``pool`` and end its workers now, without waiting."""
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14 and later
    if terminate is not None:
        terminate()
        return
    # Before 3.14 the executor offers no way to end running tasks: its process table is the
    # only handle on the workers (taken before shutdown, which drops it).
    workers = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in workers:
        process.terminate()
    for process in workers:
        process.join(timeout=1.0)
