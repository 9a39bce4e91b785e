"""The lock-and-stamp build cache (fredfab.sim.verify.build_cache)."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest

from fredfab.sim.verify.build_cache import cached_build


class Builder:
    """A build that writes ``out.txt`` and counts its runs in ``runs.log``."""

    def __init__(self, directory: Path, fail: bool = False, seconds: float = 0.0) -> None:
        self.directory, self.fail, self.seconds = directory, fail, seconds

    def __call__(self) -> None:
        with open(self.directory / "runs.log", "a") as log:
            log.write("run\n")
        time.sleep(self.seconds)
        if self.fail:
            raise RuntimeError("compiler error")
        (self.directory / "out.txt").write_text("built")

    @property
    def runs(self) -> int:
        log = self.directory / "runs.log"
        return len(log.read_text().splitlines()) if log.exists() else 0


def test_builds_once_per_key(tmp_path):
    b = Builder(tmp_path)
    out = [tmp_path / "out.txt"]
    assert cached_build(tmp_path, "k1", b, out) >= 0.0 and b.runs == 1
    assert cached_build(tmp_path, "k1", b, out) == 0.0 and b.runs == 1
    cached_build(tmp_path, "k2", b, out)
    assert b.runs == 2 and (tmp_path / "stamp").read_text() == "k2"


def test_rebuilds_when_an_output_is_missing(tmp_path):
    b = Builder(tmp_path)
    out = [tmp_path / "out.txt"]
    cached_build(tmp_path, "k", b, out)
    (tmp_path / "out.txt").unlink()
    cached_build(tmp_path, "k", b, out)
    assert b.runs == 2 and (tmp_path / "out.txt").exists()


def test_a_failed_build_leaves_no_stamp(tmp_path):
    cached_build(tmp_path, "old", Builder(tmp_path))
    with pytest.raises(RuntimeError, match="compiler error"):
        cached_build(tmp_path, "new", Builder(tmp_path, fail=True))
    assert not (tmp_path / "stamp").exists()
    b = Builder(tmp_path)
    cached_build(tmp_path, "new", b)
    assert b.runs == 3 and (tmp_path / "stamp").read_text() == "new"


def _build_in(directory: str, start) -> None:
    start.wait()  # all at once: without the lock, each would find no stamp and build
    d = Path(directory)
    cached_build(d, "k", Builder(d, seconds=0.5), [d / "out.txt"])


def test_concurrent_processes_build_once(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(4)
    cache = str(tmp_path / "cache")
    procs = [ctx.Process(target=_build_in, args=(cache, start)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 4
    assert Builder(tmp_path / "cache").runs == 1
