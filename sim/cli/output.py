"""Output files of the `fred` commands: checked before the work, written whole or not at all.

Every command checks its output paths with ``check_file`` / ``check_folder`` before it routes,
simulates or synthesises, so a path that cannot be written fails in a second, not after the
work. Files are then written under a temporary name in their own folder and renamed into
place (``os.replace`` is atomic within a file system): an error or an interrupt never leaves
a half-written file, and a failed check never leaves a new folder behind.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from fredfab.sim.atomic import as_users, atomic_path, write_text  # noqa: F401  (re-exported)
from fredfab.sim.cli import UserError
from fredfab.sim.cli.extras import require


def check_file(path: str | Path, what: str = "output file", suffixes: tuple[str, ...] = ()) -> Path:
    """``path`` as a Path if a file can be written there (folders are made when written).

    Raises UserError if ``path`` is an existing folder, has a suffix not in ``suffixes``
    (when given), or its nearest existing ancestor is not a writable folder."""
    p = Path(path)
    if suffixes and p.suffix not in suffixes:
        raise UserError(f"{what} {p}: use a name ending in {' or '.join(suffixes)}")
    if p.is_dir():
        raise UserError(f"{what} {p} is a folder; give a file name")
    if p.exists() and not os.access(p, os.W_OK):
        raise UserError(f"{what} {p} is not writable")
    _check_creatable(p.parent, what, p)
    return p


def check_folder(path: str | Path, what: str = "output folder") -> Path:
    """``path`` as a Path if it is, or can be made, a writable folder (not made here)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UserError(f"{what} {p} is a file, not a folder")
    _check_creatable(p, what, p)
    return p


def wants_plot(args) -> bool:
    """Whether a command with ``--no-plot``, ``-o/--output`` and ``--json`` draws its plot:
    unless --no-plot; with --json only when -o names the file (a machine reading the JSON
    asked for data, not for a file under ./build)."""
    return not args.no_plot and (bool(args.output) or not args.json)


def check_plot_path(args, default_folder: Path) -> None:
    """The plot of a command with ``--no-plot``, ``-o/--output`` and a default folder: the
    plot extra is installed and the file can be written (nothing to check without a plot)."""
    if not wants_plot(args):
        return
    require("matplotlib")
    if args.output:
        check_file(args.output, "plot file", (".png", ".svg"))
    else:
        check_folder(default_folder, "plot folder")


def _existing_ancestor(folder: Path, what: str, target: Path) -> Path:
    probe = folder
    while not probe.exists():
        if probe.is_symlink():  # a dangling link cannot be made into a folder
            raise UserError(f"{what} {target}: {probe} is a broken link")
        if probe.parent == probe:
            break
        probe = probe.parent
    return probe


def _check_creatable(folder: Path, what: str, target: Path) -> None:
    """The nearest existing ancestor of ``folder`` (itself included) is a writable folder."""
    probe = _existing_ancestor(folder, what, target)
    if not probe.is_dir():
        raise UserError(f"{what} {target}: {probe} is a file, not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UserError(f"{what} {target}: folder {probe} is not writable")


@contextmanager
def staged_folder(folder: str | Path) -> Iterator[Path]:
    """A temporary folder to write files into; when the block succeeds they are renamed into
    ``folder`` (made if needed). The temporary folder is removed either way."""
    target = Path(folder)
    base = _existing_ancestor(target, "output folder", target)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=".fred-", dir=base))
    except OSError as exc:
        raise as_users(exc, target) from None
    try:
        yield tmp
        target.mkdir(parents=True, exist_ok=True)
        for f in sorted(tmp.iterdir()):
            os.replace(f, target / f.name)
    except OSError as exc:
        # Errors about the temporary folder name the user's folder.
        name = Path(exc.filename) if exc.filename is not None else None
        if name is not None and (name == tmp or tmp in name.parents):
            raise as_users(exc, target / name.relative_to(tmp)) from None
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_generated_pair(
    out_dir: Path, generate: Callable[[Path], tuple[Path, Path]]
) -> tuple[Path, Path, dict, float]:
    """Run ``generate(folder)`` (it writes a Verilog file and its JSON manifest there) so that
    both files appear in ``out_dir`` together or not at all; return their paths in
    ``out_dir``, the manifest's content and the seconds it took."""
    t0 = time.perf_counter()
    with staged_folder(out_dir) as tmp:
        tmp_v, tmp_j = generate(tmp)
        info = json.loads(tmp_j.read_text())
    return out_dir / tmp_v.name, out_dir / tmp_j.name, info, time.perf_counter() - t0


def print_with_plot(
    args,
    result,
    default_folder: Path,
    plot: Callable[[object, Path], object],
    table: Callable[[object], str],
    stem: str | None = None,
) -> int:
    """The end of a training command: the plot (``wants_plot``) written atomically to -o or
    ``default_folder/<stem>.<format>`` (stem: the workload's name unless given), then the
    result as JSON or as a table."""
    written = None
    if wants_plot(args):
        name = stem or result.workload
        out = Path(args.output or default_folder / f"{name}.{args.format}")
        with atomic_path(out) as tmp:
            plot(result, tmp)
        written = out
    if args.json:
        d = result.to_dict()
        d["plot"] = str(written) if written else None
        print(json.dumps(d, indent=1))
        return 0
    print(table(result))
    if written:
        print(f"plot: {written}")
    return 0
