"""Flow traffic for switch benches: packets per flow, flit packing, expected outputs.

One implementation shared by the Amaranth-simulator tests (tests/hw) and the cocotb benches
(fredfab.sim.verify.cocotb_bench). Traffic is generated per flow: every input port of a flow sends
the same number of flits with the same packet boundaries (the flow's packets), and the
expected output is the functional model's (model/switch/switch_model.py) for the routing the router
produced, which tests/model checks against the golden collectives, so the expected sums follow
the routed reduction order bit for bit.

A flit is an integer: lane i of ``lanes`` elements in bits [i*W, (i+1)*W), W = element bits
(hw/flit.py); ``last`` travels next to it, as (data, last) pairs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fredfab.model.dtypes import ElementType, from_bits, random_data, to_bits
from fredfab.model.switch.flow import Flow
from fredfab.model.switch.router import Routing
from fredfab.model.switch.switch_model import FunctionalSwitch

Flit = tuple[int, int]
"""(data, last)."""


def pack(arr: np.ndarray, et: ElementType) -> list[int]:
    """(flits, lanes) elements -> one integer per flit, lane 0 in the LSBs."""
    bits = to_bits(np.ascontiguousarray(arr), et)
    out = []
    for row in bits.tolist():
        v = 0
        for i, b in enumerate(row):
            v |= int(b) << (i * et.bits)
        out.append(v)
    return out


def unpack(words: list[int], et: ElementType, lanes: int) -> np.ndarray:
    """Integers (one per flit) -> (flits, lanes) elements of ``et``."""
    mask = (1 << et.bits) - 1
    raw = np.array(
        [[(w >> (i * et.bits)) & mask for i in range(lanes)] for w in words], dtype=np.uint64
    ).reshape(len(words), lanes)
    return from_bits(raw.astype(et.raw_dtype), et)


def lanes_text(word: int, et: ElementType, lanes: int) -> str:
    """A flit's lanes as text, e.g. ``[1.5, nan(7fc0), -0]`` (bit patterns for NaNs)."""
    mask = (1 << et.bits) - 1
    items = []
    for i in range(lanes):
        raw = (word >> (i * et.bits)) & mask
        value = from_bits(np.array([raw], dtype=et.raw_dtype), et)[0]
        if et.is_float and np.isnan(value):
            items.append(f"nan({raw:0{et.bits // 4}x})")
        elif et.is_float:
            items.append(f"{float(value)!r}")
        else:
            items.append(str(int(value)))
    return "[" + ", ".join(items) + "]"


@dataclass
class Traffic:
    """Flits to send per input port and flits expected per output port: (data, last)."""

    send: dict[int, list[Flit]] = field(default_factory=dict)
    expect: dict[int, list[Flit]] = field(default_factory=dict)


def packet_lasts(rng: np.random.Generator, flits: int, max_packet: int) -> list[int]:
    """``last`` bits that cut ``flits`` flits into packets of 1..``max_packet`` flits."""
    lasts = []
    while len(lasts) < flits:
        size = min(int(rng.integers(1, max_packet + 1)), flits - len(lasts))
        lasts.extend([0] * (size - 1) + [1])
    return lasts


def traffic_from_data(
    sw: FunctionalSwitch,
    routing: Routing,
    data: dict[int, np.ndarray],
    lasts: dict[Flow, list[int]],
) -> tuple[Traffic, list[np.ndarray | None]]:
    """Flits for given input data and expected outputs from the functional model.

    ``data[p]`` is input port p's (flits, lanes) array; ``lasts[flow]`` the packet ends of
    ``flow`` (every input of a flow sends the same packets). Returns the traffic and the
    model's per-output-port arrays (None where nothing arrives).
    """
    et = sw.et
    traffic = Traffic()
    flat = {p: np.ascontiguousarray(a).reshape(-1) for p, a in data.items()}
    with np.errstate(invalid="ignore", over="ignore"):
        outs = sw.forward(routing, flat)
    for flow in routing.flows:
        last = lasts[flow]
        for p in flow.ips:
            arr = data[p]
            lanes = arr.shape[1]
            if arr.shape[0] != len(last):
                raise ValueError(f"port {p}: {arr.shape[0]} flits but {len(last)} last bits")
            traffic.send[p] = list(zip(pack(arr, et), last, strict=True))
        for p in flow.ops:
            words = pack(outs[p].reshape(-1, lanes), et)
            traffic.expect[p] = list(zip(words, last, strict=True))
    return traffic, outs


def flow_traffic(
    sw: FunctionalSwitch,
    routing: Routing,
    rng: np.random.Generator,
    lanes: int,
    packets: int = 3,
    max_packet: int = 4,
    edge_cases: bool = True,
) -> Traffic:
    """Random packets for every flow of ``routing``; expected outputs from the model.

    Each flow sends ``packets`` packets of 1..``max_packet`` flits; with ``edge_cases`` about a
    third of the elements come from the element type's edge pool (model/dtypes.py).
    """
    et = sw.et
    data: dict[int, np.ndarray] = {}
    lasts: dict[Flow, list[int]] = {}
    for flow in routing.flows:
        sizes = rng.integers(1, max_packet + 1, size=packets)
        last = [int(i == s - 1) for s in sizes for i in range(s)]
        lasts[flow] = last
        for p in flow.ips:
            flat = random_data(rng, et, (len(last) * lanes,), edge_cases=edge_cases)
            data[p] = flat.reshape(-1, lanes)
    return traffic_from_data(sw, routing, data, lasts)[0]
