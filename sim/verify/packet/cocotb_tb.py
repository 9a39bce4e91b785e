"""Manifest-driven cocotb bench of a packet-mode switch: one cocotb test per scenario.

Environment (set by fredfab.sim.verify.packet.cosim): ``FRED_PACKET_SCENARIOS`` names the
scenario file (scenario.py; it names the manifest), ``FRED_PACKET_REPORT`` the JSON report
this bench rewrites after every test. Each test resets the switch, loads the slots and runs
the scenario's NPUs, faulty links and checks through the shared loop (loop.py).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from fredfab.model.packet.format import PacketFormat
from fredfab.sim.verify.packet.loop import LoopResult, run_loop
from fredfab.sim.verify.packet.report import REPORT_ENV, result_dict
from fredfab.sim.verify.packet.scenario import (
    PACKET_SCENARIOS_ENV,
    PacketScenario,
    PacketScenarioFile,
)
from fredfab.sim.verify.packet.traffic import build_traffic

RESET_CYCLES = 3


def _load() -> tuple[dict, list[PacketScenario]]:
    path = os.environ.get(PACKET_SCENARIOS_ENV)
    if not path:
        return {}, []
    spec = PacketScenarioFile.read(Path(path))
    return json.loads(spec.manifest.read_text()), spec.scenarios


MANIFEST, SCENARIOS = _load()
REPORT: dict[str, dict] = {}


class CocotbPins:
    """The switch's ports by their manifest names; writes go through a cache so that an
    unchanged value costs no simulator call."""

    def __init__(self, dut: Any, manifest: dict) -> None:
        links, credits = manifest["links"], manifest["credits"]
        self._rx = [(getattr(dut, n["payload"]), getattr(dut, n["valid"])) for n in links["rx"]]
        self._tx = [(getattr(dut, n["payload"]), getattr(dut, n["valid"])) for n in links["tx"]]
        self.rx_credits = [getattr(dut, n) for n in credits["rx_credit"]]
        self.tx_credits = [getattr(dut, n) for n in credits["tx_credit"]]
        retry = manifest["link_retry"]
        self.rx_acks = [getattr(dut, n) for n in retry["rx_ack"]]
        self.tx_acks = [getattr(dut, n) for n in retry["tx_ack"]]
        st = manifest["streams"]
        self.cfg = {k: getattr(dut, v) for k, v in st["cfg"].items()}
        self.flows = {k: getattr(dut, v) for k, v in st["flows"].items()}
        self.cfg_lsb = {k: f["lsb"] for k, f in manifest["config"]["cfg_payload"].items()}
        self.row_lsb = {k: f["lsb"] for k, f in manifest["flows"]["payload"].items()}
        status = manifest["status"]
        self.status = [
            getattr(dut, status[k])
            for k in ("phase_valid", "phase_vc", "phase_index", "reconfiguring")
        ]
        self.clk = getattr(dut, manifest["clock"])
        self.rst = getattr(dut, manifest["reset"]["name"])
        self._cache: dict[int, int] = {}

    def put(self, handle: Any, value: int) -> None:
        if self._cache.get(id(handle)) != value:
            handle.value = value
            self._cache[id(handle)] = value

    @staticmethod
    def read(handle: Any) -> int:
        value = handle.value
        try:
            return value.to_unsigned() if hasattr(value, "to_unsigned") else int(value)
        except ValueError:
            raise AssertionError(f"{handle._name} is {handle.value} (X or Z)") from None

    def tx(self, port: int) -> int | None:
        payload, valid = self._tx[port]
        return self.read(payload) if self.read(valid) else None

    def rx_credit(self, port: int) -> int:
        return self.read(self.rx_credits[port])

    def rx_ack(self, port: int) -> int:
        return self.read(self.rx_acks[port])

    def drive(self, port: int, flit: int | None, tx_credit: int, tx_ack: int) -> None:
        payload, valid = self._rx[port]
        self.put(valid, int(flit is not None))
        if flit is not None:
            self.put(payload, flit)
        self.put(self.tx_credits[port], tx_credit)
        self.put(self.tx_acks[port], tx_ack)

    def write_cfg(self, slot: int, addr: int, data: int) -> None:
        c = self.cfg_lsb
        self.put(self.cfg["valid"], 1)
        self.put(
            self.cfg["payload"], (slot << c["slot"]) | (addr << c["addr"]) | (data << c["data"])
        )

    def write_flow_row(self, table: int, slot: int, port: int, mask: int) -> None:
        r = self.row_lsb
        self.put(self.cfg["valid"], 0)
        self.put(self.flows["valid"], 1)
        word = (
            (table << r["table"]) | (slot << r["slot"]) | (port << r["port"]) | (mask << r["mask"])
        )
        self.put(self.flows["payload"], word)

    def idle_config(self) -> None:
        self.put(self.cfg["valid"], 0)
        self.put(self.flows["valid"], 0)

    def phase(self) -> tuple[int, int, int, int]:
        return tuple(self.read(h) for h in self.status)

    async def settle(self) -> None:
        await ReadOnly()

    async def edge(self) -> None:
        await RisingEdge(self.clk)

    async def reset(self) -> None:
        Clock(self.clk, 10, unit="ns").start()
        for p in range(len(self._rx)):
            self.drive(p, None, 0, 0)
        self.idle_config()
        self.put(self.rst, 1)
        for _ in range(RESET_CYCLES):
            await RisingEdge(self.clk)
        self.put(self.rst, 0)


async def run_scenario(dut: Any, scenario: PacketScenario) -> LoopResult:
    params = MANIFEST["params"]
    s, fmt = params["switch"], PacketFormat(**params["fmt"])
    traffic = build_traffic(
        scenario,
        s["ports"],
        s["m"],
        s["arch"],
        s["dtype"],
        s["lanes"],
        fmt.packet_flits,
        s["word_width"],
    )
    pins = CocotbPins(dut, MANIFEST)
    await pins.reset()
    data_bits = MANIFEST["links"]["fields"]["data"]["width"]
    return await run_loop(pins, scenario, traffic, fmt, data_bits)


def _write_report() -> None:
    path = os.environ.get(REPORT_ENV)
    if path:
        Path(path).write_text(json.dumps(REPORT, indent=1))


def _register(scenario: PacketScenario):
    async def test(dut) -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            result = await run_scenario(dut, scenario)
        except Exception as exc:  # the bench itself failed: report it, then fail the test
            REPORT[scenario.name] = {"passed": False, "errors": [f"{type(exc).__name__}: {exc}"]}
            _write_report()
            raise
        REPORT[scenario.name] = result_dict(
            result, time.perf_counter() - t0, time.process_time() - c0
        )
        _write_report()
        assert result.passed, "; ".join(result.errors[:5])

    test.__name__ = test.__qualname__ = scenario.name
    return cocotb.test(name=scenario.name)(test)


for _sc in SCENARIOS:
    globals()[f"test_{_sc.name}"] = _register(_sc)
