"""Typed, strict readers for the fields of description files (fabrics, workloads, training).

One set of rules for every file: a boolean is not a number and a string is not a number
(TOML keeps them apart, so a file that writes ``true`` or ``"3000"`` for a bandwidth made a
mistake); a count is an integer (``3.5`` switches is an error, not 3); numbers are finite;
and fields that size a model carry an upper bound, so a typo cannot build a fabric that
never finishes. Every error says where (file and table), which field, what is allowed and
what was given, and is raised as the caller's error type (FabricError, WorkloadError, ...).

The ``check_*`` functions validate one value (for dataclass ``__post_init__``); ``Table``
reads the fields of one parsed TOML table.
"""

from __future__ import annotations

import math
import numbers
import tomllib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fredfab.model.errors import InputError
from fredfab.model.input_files import read_text

#: Marks a field without a default: it must be present.
REQUIRED: Any = object()


def read_toml(path: Path, error: type[Exception], what: str = "the file") -> dict[str, Any]:
    """The parsed TOML file ``path``; ``error`` (one line naming the path) when it cannot be
    read or is not TOML."""
    text = read_text(path, error, what)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}") from None


def _bound(x: float) -> str:
    """A bound as written in a message: a large whole float in full (3000000000, not
    3000000000.0)."""
    return str(int(x)) if isinstance(x, float) and x.is_integer() and abs(x) >= 1e6 else str(x)


def _bounds(lo: float | None, hi: float | None, lo_open: bool = False) -> str:
    if lo is not None and hi is not None:
        lo_s, hi_s = _bound(lo), _bound(hi)
        return f"in [{lo_s}, {hi_s}]" if not lo_open else f"in ({lo_s}, {hi_s}]"
    if lo is not None:
        return f"{'>' if lo_open else '>='} {_bound(lo)}"
    if hi is not None:
        return f"<= {_bound(hi)}"
    return ""


def _is_int(v: Any) -> bool:
    # numbers.Integral: numpy integers are integers too (from the Python API); bool is not.
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def check_int(
    v: Any,
    what: str,
    *,
    lo: int | None = None,
    hi: int | None = None,
    whole_float: bool = False,
    error: type[ValueError] = InputError,
) -> int:
    """``v`` as an int in [lo, hi]; ``whole_float`` also takes 1e6 or 4.0 (not 3.5)."""
    if whole_float and isinstance(v, float) and math.isfinite(v) and v.is_integer():
        v = int(v)
    rng = _bounds(lo, hi)
    if not _is_int(v) or (lo is not None and v < lo) or (hi is not None and v > hi):
        raise error(f"{what} must be an integer{' ' + rng if rng else ''}, got {v!r}")
    return int(v)


def check_number(
    v: Any,
    what: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    error: type[ValueError] = InputError,
) -> float:
    """``v`` as a finite float in [lo, hi] (or (lo, hi] with ``lo_open``)."""
    ok = _is_number(v) and math.isfinite(v)
    if ok and lo is not None:
        ok = v > lo if lo_open else v >= lo
    if ok and hi is not None:
        ok = v <= hi
    if not ok:
        rng = _bounds(lo, hi, lo_open)
        raise error(f"{what} must be a finite number{' ' + rng if rng else ''}, got {v!r}")
    return float(v)


def check_choice(
    v: Any, what: str, choices: Collection[Any], *, error: type[ValueError] = InputError
) -> Any:
    """``v`` if it is one of ``choices`` (compared by type too: ``true`` is not ``1``)."""
    if not any(type(v) is type(c) and v == c for c in choices) and not (
        isinstance(v, str) and v in choices  # a str among StrEnum members
    ):
        listed = ", ".join(repr(str(c)) if isinstance(c, str) else repr(c) for c in choices)
        raise error(f"{what} must be one of {listed}, got {v!r}")
    return v


@dataclass(frozen=True)
class Table:
    """One parsed TOML table and where it is (``where``: the file and the table's path)."""

    data: Mapping[str, Any]
    where: str
    error: type[ValueError] = InputError

    @classmethod
    def read(
        cls,
        data: Any,
        where: str,
        allowed: Collection[str],
        error: type[ValueError] = InputError,
    ) -> Table:
        """``data`` as a table whose keys are all in ``allowed``."""
        if not isinstance(data, Mapping):
            raise error(f"{where}: must be a table, got {data!r}")
        unknown = sorted(set(data) - set(allowed))
        if unknown:
            raise error(f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")
        return cls(data, where, error)

    def __contains__(self, key: str) -> bool:
        return key in self.data

    def _what(self, key: str) -> str:
        return f"{self.where}: '{key}'"

    def _absent(self, key: str, default: Any) -> bool:
        """True when ``key`` is absent and has a default (returned as is, unchecked: defaults
        are the code's, None among them for "let the callee decide")."""
        if key in self.data:
            return False
        if default is REQUIRED:
            raise self.error(f"{self.where}: missing '{key}'")
        return True

    def table(self, key: str, allowed: Collection[str]) -> Table:
        """Sub-table ``[key]`` (empty when absent)."""
        return Table.read(self.data.get(key, {}), f"{self.where} [{key}]", allowed, self.error)

    def tables(
        self,
        key: str,
        allowed: Collection[str],
        *,
        required: bool = True,
        max_len: int | None = None,
    ) -> list[Table]:
        """Array of tables ``[[key]]``: non-empty and present when ``required``, else
        possibly empty or absent; at most ``max_len`` entries."""
        if self._absent(key, REQUIRED if required else None):
            return []
        raw = self.data[key]
        ok = isinstance(raw, list) and all(isinstance(t, Mapping) for t in raw)
        if not ok or (required and not raw):
            kind = "a non-empty array of tables" if required else "an array of tables"
            raise self.error(f"{self._what(key)} must be {kind}, got {raw!r}")
        if max_len is not None and len(raw) > max_len:
            raise self.error(f"{self._what(key)}: at most {max_len} entries, got {len(raw)}")
        return [
            Table.read(t, f"{self.where} {key}[{i}]", allowed, self.error)
            for i, t in enumerate(raw)
        ]

    def string(
        self,
        key: str,
        default: Any = REQUIRED,
        *,
        choices: Collection[str] | None = None,
        nonempty: bool = False,
    ) -> str:
        if self._absent(key, default):
            return default
        v = self.data[key]
        if choices is not None:
            return check_choice(v, self._what(key), choices, error=self.error)
        if not isinstance(v, str) or (nonempty and not v):
            kind = "a non-empty string" if nonempty else "a string"
            raise self.error(f"{self._what(key)} must be {kind}, got {v!r}")
        return v

    def boolean(self, key: str, default: Any = REQUIRED) -> bool:
        if self._absent(key, default):
            return default
        v = self.data[key]
        if not isinstance(v, bool):
            raise self.error(f"{self._what(key)} must be true or false, got {v!r}")
        return v

    def integer(
        self,
        key: str,
        default: Any = REQUIRED,
        *,
        lo: int | None = None,
        hi: int | None = None,
        whole_float: bool = False,
    ) -> int:
        if self._absent(key, default):
            return default
        return check_int(
            self.data[key], self._what(key), lo=lo, hi=hi, whole_float=whole_float, error=self.error
        )

    def number(
        self,
        key: str,
        default: Any = REQUIRED,
        *,
        lo: float | None = None,
        hi: float | None = None,
        lo_open: bool = False,
    ) -> float:
        if self._absent(key, default):
            return default
        return check_number(
            self.data[key], self._what(key), lo=lo, hi=hi, lo_open=lo_open, error=self.error
        )

    def _array(self, key: str, max_len: int | None) -> Sequence[Any]:
        v = self.data[key]
        if not isinstance(v, list) or not v:
            raise self.error(f"{self._what(key)} must be a non-empty array, got {v!r}")
        if max_len is not None and len(v) > max_len:
            raise self.error(f"{self._what(key)}: at most {max_len} entries, got {len(v)}")
        return v

    def integers(
        self,
        key: str,
        default: Any = REQUIRED,
        *,
        lo: int | None = None,
        hi: int | None = None,
        max_len: int | None = None,
    ) -> list[int]:
        if self._absent(key, default):
            return default
        arr = self._array(key, max_len)
        return [
            check_int(x, f"{self._what(key)}[{i}]", lo=lo, hi=hi, error=self.error)
            for i, x in enumerate(arr)
        ]

    def numbers(
        self,
        key: str,
        default: Any = REQUIRED,
        *,
        lo: float | None = None,
        hi: float | None = None,
        lo_open: bool = False,
        max_len: int | None = None,
    ) -> list[float]:
        if self._absent(key, default):
            return default
        arr = self._array(key, max_len)
        return [
            check_number(
                x, f"{self._what(key)}[{i}]", lo=lo, hi=hi, lo_open=lo_open, error=self.error
            )
            for i, x in enumerate(arr)
        ]
