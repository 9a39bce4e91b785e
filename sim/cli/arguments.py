"""Argument types of the `fred` commands: every number is checked where it enters, against
bounds that ``--help`` states, so no command runs with a value it would hang or fail on.

The bounds cover real use with room to spare; above them a run takes hours or memory a
workstation does not have (the Clos router is exponential in m, the flow simulator is linear
in chunks, a process pool above a few workers per CPU only adds overhead).
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable
from pathlib import Path

from fredfab.model.switch.flow import Flow, FlowError, parse_ports

#: Ports of a switch the router handles (``fred route``); generated switches are bounded
#: by fredfab.hw.params.PARAM_LIMITS.
ROUTE_PORTS = (2, 256)
#: Middle subnetworks of a routed Clos: Fred_m(P) has about m ** log2(P) uSwitches.
ROUTE_M = (2, 4)
#: Bits per configuration word.
WORD_WIDTH = (8, 1024)
#: Chunks per collective in the network simulator (events grow linearly with them).
CHUNKS = (1, 1024)
#: Worker processes: up to four per CPU.
JOBS = (1, 4 * (os.cpu_count() or 1))
#: Bytes per NPU of a collective or a phase: whole bytes, at most 1 TiB (an NPU has 80 GB).
MAX_SIZE = 2**40
#: Bytes per NPU on the packet-level engine, which handles every 4 KiB packet on every link
#: (16 MiB on every shipped fabric takes seconds; it grows linearly).
PACKET_MAX_SIZE = 2**24
#: Event time grid of the flow simulator, in ns (0 = exact; 1 ms is coarser than any phase).
RESOLUTION_NS = (0.0, 1e6)
#: Training settings.
MICROBATCHES = (1, 1024)
SAMPLES_PER_REPLICA = (1, 2**20)
#: model/training/memory.py MAX_ACCUMULATION (not imported: --help stays light; a test
#: checks the two agree).
ACCUMULATION = (1, 1024)
#: Values of `fred sensitivity --values` (each is one comparison over every fabric).
MAX_SENSITIVITY_VALUES = 32
#: cosim traffic: phases of --flows traffic and packets per flow and phase.
COSIM_PHASES = (1, 64)
COSIM_PACKETS = (1, 1024)
SEED = (0, 2**32 - 1)
#: An NPU's kernel efficiency (share of peak) and HBM capacity in GB.
EFFICIENCY = (0.01, 1.0)
HBM_GB = (1.0, 100_000.0)
#: Clock of an ASTRA-sim text workload's compute cycles, GHz.
ASTRA_CLOCK_GHZ = (0.001, 1000.0)


def span(bounds: tuple) -> str:
    """``2..256`` for help texts and messages."""
    low, high = bounds
    if isinstance(low, int) and isinstance(high, int):
        return f"{low}..{high}"
    return f"{low:g}..{high:g}"


def bounded_int(bounds: tuple[int, int]) -> Callable[[str], int]:
    """An argparse type: an integer in ``bounds`` (inclusive)."""
    low, high = bounds

    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range {span(bounds)}")
        return value

    return parse


def plain_int(text: str) -> int:
    """An argparse type: any integer (its bounds are checked where it is used)."""
    try:
        return int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def bounded_int_list(bounds: tuple[int, int]) -> Callable[[str], list[int]]:
    """An argparse type: comma-separated integers or ranges (``0,2-4``), each in ``bounds``
    (inclusive); sorted, without repeats."""
    low, high = bounds

    def parse(text: str) -> list[int]:
        values: set[int] = set()
        for item in text.split(","):
            m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", item)
            if not m:
                raise argparse.ArgumentTypeError(
                    f"{item.strip()!r} is not an integer or a range (e.g. 3 or 0-4)"
                )
            lo, hi = int(m[1]), int(m[2] if m[2] is not None else m[1])
            if hi < lo:
                raise argparse.ArgumentTypeError(f"range {item.strip()!r} runs backwards")
            if lo < low or hi > high:
                raise argparse.ArgumentTypeError(f"{item.strip()} is out of range {span(bounds)}")
            values.update(range(lo, hi + 1))
        return sorted(values)

    return parse


def bounded_float(bounds: tuple[float, float]) -> Callable[[str], float]:
    """An argparse type: a finite number in ``bounds`` (inclusive)."""
    low, high = bounds

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not (math.isfinite(value) and low <= value <= high):
            raise argparse.ArgumentTypeError(f"{text} is out of range {span(bounds)}")
        return value

    return parse


def size(text: str) -> float:
    """An argparse type: bytes per NPU (``64MiB``, ``1GB``, ``4096``); whole bytes, since a
    transfer moves whole bytes (fractions are rejected, not rounded), at most 1 TiB."""
    # Here, not at the top: the system model's package loads every algorithm, which commands
    # without a size (route, generate, ...) should not wait for.
    from fredfab.model.system.units import parse_size

    try:
        value = parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not math.isfinite(value) or value > MAX_SIZE:
        raise argparse.ArgumentTypeError(f"size {text!r} is more than 1 TiB per NPU")
    if value != math.floor(value):
        raise argparse.ArgumentTypeError(
            f"size {text!r} is {value:.15g} bytes, not a whole number of bytes"
        )
    return value


def timing_card(text: str) -> str:
    """An argparse type: an existing timing card JSON file."""
    p = Path(text)
    if p.suffix != ".json":
        raise argparse.ArgumentTypeError(f"timing card {text!r}: give a .json file")
    if not p.is_file():
        raise argparse.ArgumentTypeError(f"timing card {text} does not exist")
    return text


def check_ranges(text: str, limit: int, what: str, unit: str = "port") -> None:
    """Ranges in a port (or NPU) list must stay below ``limit``; checked before
    ``parse_ports`` expands them, so ``0-99999999999`` is an error, not a list of 10**11."""
    for lo, hi in re.findall(r"(\d+)\s*-\s*(\d+)", text):
        if int(hi) >= limit:
            raise FlowError(f"{what}: range {lo}-{hi} goes beyond {unit} {limit - 1}")


def ports_within(text: str, limit: int, what: str, unit: str = "port") -> list[int]:
    """``parse_ports`` for ports (or NPUs) below ``limit`` (ranges checked before they are
    expanded)."""
    check_ranges(text, limit, what, unit)
    return parse_ports(text, what=what, unit=unit)


def npu_group(text: str, npus: int) -> list[int]:
    """The NPUs of ``--group TEXT`` on a fabric of ``npus`` NPUs ("all": every one)."""
    if text == "all":
        return list(range(npus))
    return ports_within(text, npus, "--group", "NPU")


def flows_within(texts: list[str], ports: int) -> list[Flow]:
    """Flows ``IPS:OPS`` on a ``ports``-port switch (ranges checked before they are expanded)."""
    out = []
    for text in texts:
        check_ranges(text, ports, f"flow {text!r}")
        out.append(Flow.parse(text))
    return out
