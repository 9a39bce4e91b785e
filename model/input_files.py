"""Reading a file the user named: every failure one line naming the file.

A file that cannot be opened is an OSError and one that is not UTF-8 text (a binary file
given where a TOML, JSON or YAML file belongs) a UnicodeDecodeError, which is neither an
InputError nor an OSError and would otherwise reach the user as a traceback; both become the
caller's InputError subclass (FabricError, TimingCardError, ...).
"""

from __future__ import annotations

from pathlib import Path

from fredfab.model.errors import InputError


def read_text(
    path: str | Path, error: type[InputError] = InputError, what: str = "the file"
) -> str:
    """The text of ``path``; ``error`` ("PATH: cannot read WHAT: why") when it cannot be read
    or is not UTF-8 text."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        byte = exc.object[exc.start]
        raise error(
            f"{path}: cannot read {what}: not UTF-8 text (byte {byte:#04x} at offset {exc.start})"
        ) from None
