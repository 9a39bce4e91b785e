"""Workloads from where users keep them: a shipped workload by name, a TOML file
(fredfab.model.training.workload, schema ``fred-workload/1``) or an ASTRA-sim text workload
(fredfab.model.training.astra_workload). The one place that tells the formats apart."""

from __future__ import annotations

import tomllib
from pathlib import Path

from fredfab.model.input_files import read_text
from fredfab.model.training import astra_workload
from fredfab.model.training.workload import DATA_DIR, Workload, WorkloadError, workload_from_dict


def shipped_workloads() -> list[str]:
    return sorted(p.stem for p in DATA_DIR.glob("*.toml"))


def load_workload(spec: str | Path, astra_clock_hz: float | None = None) -> Workload:
    """A shipped workload by name (resnet-152, transformer-17b, gpt3-175b, transformer-1t),
    a user's TOML file, or an ASTRA-sim text workload (a ``.txt`` file, or any file whose
    first word is an ASTRA-sim parallelism type; fredfab.model.training.astra_workload), whose
    compute cycles run at ``astra_clock_hz`` (default: that module's DEFAULT_CLOCK_HZ)."""
    shipped = DATA_DIR / f"{str(spec).lower()}.toml"
    path = shipped if shipped.is_file() else Path(spec)
    if not path.is_file():
        raise WorkloadError(
            f"workload {str(spec)!r} is neither a shipped workload "
            f"({', '.join(shipped_workloads())}) nor a TOML or ASTRA-sim text file"
        )
    text = read_text(path, WorkloadError, "the workload")
    if path.suffix == ".txt" or astra_workload.looks_like_astra(text):
        return astra_workload.astra_workload_from_text(text, str(path), astra_clock_hz)
    if astra_clock_hz is not None:
        raise WorkloadError(
            f"{path}: an ASTRA-sim clock applies only to ASTRA-sim text workloads, "
            "not to a TOML workload"
        )
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise WorkloadError(f"{path}: not valid TOML: {exc}") from None
    return workload_from_dict(data, source=str(path))


def is_shipped(workload: Workload) -> bool:
    """Whether ``workload`` was read from a shipped file (so its name alone names it)."""
    return Path(workload.source).parent == DATA_DIR
