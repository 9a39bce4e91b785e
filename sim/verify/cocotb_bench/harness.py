"""The switch under test, as the manifest (hw/manifest.py) describes it.

``SwitchHarness`` finds the switch's streams (inputs, outputs, ``cfg``, ``select``), clock
and reset by the names the manifest gives, writes signals through a cache (a handle is only
written when its value changes, which keeps the per-cycle Python cost down), reads them
with X/Z turned into assertion failures, and knows the flit and configuration word layouts.
Nothing here knows a port count, a payload width or a configuration encoding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from fredfab.sim.verify.scenario_file import Flit

#: Cycles the bench holds reset before a scenario starts.
RESET_CYCLES = 3


@dataclass(frozen=True)
class Stream:
    """The three handles of a valid/ready stream port."""

    payload: Any
    valid: Any
    ready: Any


@dataclass(frozen=True)
class FlitFormat:
    """A flit's payload word: ``data`` (the lanes) and ``last``, at the manifest's offsets."""

    data_mask: int
    last_lsb: int
    lanes: int
    dtype: str

    def encode(self, flit: Flit) -> int:
        data, last = flit
        return (data & self.data_mask) | (last << self.last_lsb)

    def decode(self, word: int) -> Flit:
        return word & self.data_mask, (word >> self.last_lsb) & 1

    def describe(self, flit: Flit) -> str:
        """e.g. ``data=0x00010002 last=1 lanes [2, 1]`` (for failure messages)."""
        from fredfab.model.dtypes import element_type
        from fredfab.sim.verify.traffic import lanes_text

        data, last = flit
        digits = -(-(self.data_mask.bit_length()) // 4)
        lanes = lanes_text(data, element_type(self.dtype), self.lanes)
        return f"data=0x{data:0{digits}x} last={last} lanes {lanes}"


class SwitchHarness:
    """The switch's ports, cached writes, checked reads and the bench's cycle counter."""

    def __init__(self, dut: Any, manifest: dict) -> None:
        self.manifest = manifest

        def stream(names: dict) -> Stream:
            return Stream(*(getattr(dut, names[k]) for k in ("payload", "valid", "ready")))

        streams = manifest["streams"]
        self.inputs = [stream(s) for s in streams["i"]]
        self.outputs = [stream(s) for s in streams["o"]]
        self.cfg = stream(streams["cfg"])
        self.select = stream(streams["select"])
        self.ports = len(self.inputs)
        self.clk = getattr(dut, manifest["clock"])
        self.rst = getattr(dut, manifest["reset"]["name"])
        flit = manifest["flit"]
        self.flit = FlitFormat(
            data_mask=(1 << flit["fields"]["data"]["width"]) - 1,
            last_lsb=flit["fields"]["last"]["lsb"],
            lanes=flit["lanes"],
            dtype=flit["dtype"],
        )
        cp = manifest["config"]["cfg_payload"]
        self._cfg_lsb = {k: cp[k]["lsb"] for k in ("slot", "addr", "data")}
        self.latency = int(manifest["latency_cycles"])
        self._cache: dict[int, int] = {}
        self.cycle = 0

    def put(self, handle: Any, value: int) -> None:
        key = id(handle)
        if self._cache.get(key) != value:
            handle.value = value
            self._cache[key] = value

    @staticmethod
    def bit(handle: Any) -> int:
        try:
            return int(handle.value)
        except ValueError:
            raise AssertionError(f"{handle._name} is {handle.value} (X or Z)") from None

    @staticmethod
    def word(handle: Any) -> int:
        try:
            return handle.value.to_unsigned()
        except ValueError:
            raise AssertionError(f"{handle._name} is {handle.value} (X or Z)") from None

    def cfg_word(self, slot: int, addr: int, data: int) -> int:
        c = self._cfg_lsb
        return (slot << c["slot"]) | (addr << c["addr"]) | (data << c["data"])

    def quiet_inputs(self) -> None:
        """Every stream into the switch not valid."""
        for s in self.inputs:
            self.put(s.valid, 0)
        self.put(self.cfg.valid, 0)
        self.put(self.select.valid, 0)

    async def start(self) -> None:
        """Start the clock and hold reset with every stream idle and no output ready."""
        Clock(self.clk, 10, unit="ns").start()
        self.quiet_inputs()
        for s in self.outputs:
            self.put(s.ready, 0)
        self.put(self.rst, 1)
        for _ in range(RESET_CYCLES):
            await RisingEdge(self.clk)
        self.put(self.rst, 0)
