"""Files written whole or not at all.

A file is written under a temporary name in its own folder and renamed into place
(``os.replace`` is atomic within a file system): a reader (the system model reading a
timing card, a concurrent run, the runner reading a bench's report after the simulator
died) never sees half a file, and an error or an interrupt never leaves one behind.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_UMASK = os.umask(0)
os.umask(_UMASK)


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path next to ``path`` (same suffix, so writers that pick a format by suffix
    work); renamed to ``path`` when the block succeeds, removed when it fails."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=f".tmp{p.suffix}", dir=p.parent)
    except OSError as exc:
        raise as_users(exc, p) from None
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes it private; give it a normal file's mode
    try:
        yield Path(tmp)
        os.replace(tmp, p)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.filename is not None and Path(exc.filename) == Path(tmp):
            raise as_users(exc, p) from None
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def as_users(exc: OSError, path: str | Path) -> OSError:
    """``exc`` about ``path``, the file the user asked for, instead of the temporary name it
    was being written under (which they never heard of)."""
    return OSError(exc.errno, exc.strerror or str(exc), str(path))


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically; return the path."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return Path(path)
