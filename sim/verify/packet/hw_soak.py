"""The packet switch's soak in hardware: the switch's generated Verilog (instantiated by the
names in its manifest, as fredfab.sim.verify.soak_harness does for the circuit switch),
a hardware NPU endpoint on every port (hw_endpoint.py) and a fault injector on every link
in each direction (hw_faults.py), all in one Verilated model clocked by a C++ loop: no
Python per cycle. The traffic and hostility are a SoakPlan (soak_plan.py): MP, DP and PP at
once, in messages, on links that drop, corrupt, burst and fall silent.

``fred_packet_soak``: from power-up a loader writes every slot (words and check words) and
flow-table row through ``cfg`` and ``flows``, one per cycle, as the bench's loop does
(loop.load); then ``running`` rises and the endpoints start (their cycle 0; the injectors
on the NPUs' outgoing links one cycle later, as they sit behind the endpoints' registered
``tx``). Every delivery is checked by the endpoint that takes it (its sum, its place in
the stream, once), and everything is counted: per port and stream deliveries, data and
protocol errors, packets and control packets sent, syncs, rewinds, timeouts, replayed
flits, bad packets, the longest wait between deliveries of a stream; per link the
injector's counts; the switch's reconfigurations and slot errors.

``hw_soak(params, plan, cycles)`` builds (cached under ``root/packet_soak``) and runs it
and returns the counters (``HwSoakResult``)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import EnableInserter, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fredfab.hw.packet.params import PacketParams
from fredfab.model.errors import InputError
from fredfab.sim.verify import cosim
from fredfab.sim.verify.build_cache import cached_build
from fredfab.sim.verify.dut_instance import manifest_instance
from fredfab.sim.verify.packet.hw_endpoint import NpuEndpoint
from fredfab.sim.verify.packet.hw_faults import FaultInjector
from fredfab.sim.verify.packet.loop import link_seed
from fredfab.sim.verify.packet.soak_plan import SoakPlan
from fredfab.sim.verify.soak_harness import clock_without_reset

MODULE = "fred_packet_soak"
COUNT_BITS = 32
#: Counters of each endpoint and of each injector, in the order the driver prints them.
NPU_COUNTERS = (
    "data_errors",
    "protocol_errors",
    "data_sent",
    "control_sent",
    "syncs_sent",
    "bad_packets",
    "rewinds",
    "timeouts",
    "replayed",
)
LINK_COUNTERS = ("flits", "dropped", "corrupted", "undetected", "bursts", "silences")


def _writes(manifest: dict, plan: SoakPlan, params: PacketParams) -> list[tuple[str, int]]:
    """What the loader writes, one per cycle: ("cfg" | "flows", payload bits)."""
    cfg = {k: f["lsb"] for k, f in manifest["config"]["cfg_payload"].items()}
    row = {k: f["lsb"] for k, f in manifest["flows"]["payload"].items()}
    out = []
    for ld in plan.loads(params):
        for addr, word in enumerate(ld.words):
            out.append(
                ("cfg", (ld.slot << cfg["slot"]) | (addr << cfg["addr"]) | (word << cfg["data"]))
            )
        for table, masks in ((0, ld.inputs_of_input), (1, ld.inputs_of_output)):
            for port, mask in enumerate(masks):
                bits = (table << row["table"]) | (ld.slot << row["slot"])
                out.append(("flows", bits | (port << row["port"]) | (mask << row["mask"])))
    return out


class PacketSoakHarness(wiring.Component):
    """``fred_packet_soak`` (module docstring)."""

    def __init__(self, params: PacketParams, manifest: dict, plan: SoakPlan):
        if plan.ports != params.ports:
            raise InputError(f"a plan for {plan.ports} ports on a {params.ports}-port switch")
        self.params, self.manifest, self.plan = params, manifest, plan
        P = params.ports
        self.streams = [plan.streams(p) for p in range(P)]
        members = {
            "clk": In(1),
            "running": Out(1),
            "cycles": Out(64),
            "reconfigurations": Out(COUNT_BITS),
            "slot_error": Out(params.switch.slots),
        }
        for p in range(P):
            for name in NPU_COUNTERS:
                members[f"p{p}_{name}"] = Out(COUNT_BITS)
            for i in range(len(self.streams[p][1])):
                members[f"p{p}_delivered{i}"] = Out(COUNT_BITS)
                members[f"p{p}_longest_wait{i}"] = Out(COUNT_BITS)
            for d in ("up", "down"):
                for name in LINK_COUNTERS:
                    members[f"p{p}_{d}_{name}"] = Out(COUNT_BITS)
        super().__init__(members)

    def counter_names(self) -> list[str]:
        return [n for n in self.signature.members if n not in ("clk", "running", "slot_error")]

    def elaborate(self, platform) -> Module:  # noqa: C901 (the wiring of every port)
        m = Module()
        params, plan, P = self.params, self.plan, self.params.ports
        man = self.manifest
        clock_without_reset(m, self.clk)

        # -- the loader ------------------------------------------------------------------
        writes = _writes(man, plan, params)
        step = Signal(range(len(writes) + 1))
        running = Signal()
        widths = {port["name"]: port["width"] for port in man["ports"]}
        streams = man["streams"]
        payload = {
            k: Signal(widths[streams[k]["payload"]], name=f"{k}_payload") for k in ("cfg", "flows")
        }
        valid = {k: Signal(name=f"{k}_valid") for k in ("cfg", "flows")}
        with m.If(step == len(writes)):
            m.d.sync += running.eq(1)
        with m.Else():
            m.d.sync += step.eq(step + 1)
        with m.Switch(step):
            for k, (port, bits) in enumerate(writes):
                with m.Case(k):
                    m.d.comb += [payload[port].eq(bits), valid[port].eq(1)]
        m.d.comb += self.running.eq(running)
        run_late = Signal()  # the injectors behind the endpoints' registered tx
        m.d.sync += run_late.eq(running)
        with m.If(running):
            m.d.sync += self.cycles.eq(self.cycles + 1)

        # -- endpoints and injectors --------------------------------------------------------
        rates = plan.links.faults
        conns: dict[str, Value] = {}
        links = man["links"]
        width = links["width"]
        eps = []
        for p in range(P):
            sends, recvs = self.streams[p]
            ep = NpuEndpoint(params, p, sends, recvs, plan.knobs(p))
            m.submodules[f"npu{p}"] = EnableInserter(running)(ep)
            eps.append(ep)
            up = FaultInjector(params, rates, link_seed(plan.seed, p, "up"))
            down = FaultInjector(params, rates, link_seed(plan.seed, p, "down"))
            m.submodules[f"up{p}"] = EnableInserter(run_late)(up)
            m.submodules[f"down{p}"] = EnableInserter(running)(down)
            tx_payload, tx_valid = Signal(width, name=f"sw_tx{p}"), Signal(name=f"sw_tx{p}_v")
            rx_credit = Signal(4, name=f"sw_rx_credit{p}")
            rx_ack = Signal(len(ep.rx_ack.as_value()), name=f"sw_rx_ack{p}")
            m.d.comb += [
                down.i_valid.eq(tx_valid & running),
                down.i.eq(tx_payload),
                ep.rx.valid.eq(down.o_valid),
                ep.rx.payload.eq(down.o),
                ep.rx_credit.eq(rx_credit & running.replicate(4)),
                ep.rx_ack.eq(rx_ack),
                up.i_valid.eq(ep.tx.valid),
                up.i.eq(ep.tx.payload),
            ]
            names = links["rx"][p]
            conns[names["payload"]] = up.o.as_value()
            conns[names["valid"]] = up.o_valid & run_late
            conns[links["tx"][p]["payload"]] = tx_payload
            conns[links["tx"][p]["valid"]] = tx_valid
            conns[man["credits"]["rx_credit"][p]] = rx_credit
            conns[man["credits"]["tx_credit"][p]] = ep.tx_credit
            conns[man["link_retry"]["rx_ack"][p]] = rx_ack
            conns[man["link_retry"]["tx_ack"][p]] = ep.tx_ack.as_value()
            for name in NPU_COUNTERS:
                m.d.comb += getattr(self, f"p{p}_{name}").eq(getattr(ep, name))
            for i in range(len(recvs)):
                m.d.comb += getattr(self, f"p{p}_delivered{i}").eq(ep.delivered[i])
                wait, longest = Signal(COUNT_BITS), getattr(self, f"p{p}_longest_wait{i}")
                last = Signal(COUNT_BITS, name=f"p{p}_last_delivered{i}")
                with m.If(running):
                    m.d.sync += last.eq(ep.delivered[i])
                    with m.If(ep.delivered[i] != last):
                        m.d.sync += wait.eq(0)
                    with m.Else():
                        m.d.sync += wait.eq(wait + 1)
                        with m.If(wait + 1 > longest):
                            m.d.sync += longest.eq(wait + 1)
            for d, inj in (("up", up), ("down", down)):
                for name in LINK_COUNTERS:
                    m.d.comb += getattr(self, f"p{p}_{d}_{name}").eq(getattr(inj, name))

        # -- the switch ---------------------------------------------------------------------
        for k in ("cfg", "flows"):
            conns[streams[k]["payload"]] = payload[k]
            conns[streams[k]["valid"]] = valid[k]
        reconf = Signal()
        slot_error = Signal(params.switch.slots)
        conns[man["status"]["reconfiguring"]] = reconf
        conns[man["status"]["slot_error"]] = slot_error
        m.d.comb += self.slot_error.eq(slot_error)
        was = Signal()
        m.d.sync += was.eq(reconf)
        with m.If(reconf & ~was):
            m.d.sync += self.reconfigurations.eq(self.reconfigurations + 1)
        m.submodules.dut = manifest_instance(self.manifest, conns, idle_inputs=True)
        return m


# -- building and running ---------------------------------------------------------------------


#: The C++ main: clock the harness for argv[1] cycles from power-up, print its counters as one JSON
#: line with the seconds the loop took (@PRINTS@: one printf per counter).
MAIN_CPP = r"""
#include "Vfred_packet_soak.h"
#include "verilated.h"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>

static void cycle(Vfred_packet_soak& t) { t.clk = 0; t.eval(); t.clk = 1; t.eval(); }

int main(int argc, char** argv) {
    unsigned long long n = argc > 1 ? strtoull(argv[1], 0, 0) : 1000;
    VerilatedContext ctx;
    Vfred_packet_soak top(&ctx);
    auto t0 = std::chrono::steady_clock::now();
    std::clock_t c0 = std::clock();
    for (unsigned long long c = 0; c < n; c++) cycle(top);
    double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
    auto t1 = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(t1 - t0).count();
    printf("{\"clocked\": %llu, \"seconds\": %.6f, \"cpu_seconds\": %.6f, ", n, s, cpu);
@PRINTS@
    printf("\"slot_error\": %llu}\n", (unsigned long long)top.slot_error);
    return 0;
}
"""


def driver_cpp(names: list[str]) -> str:
    prints = "\n".join(
        f'    printf("\\"{n}\\": %llu, ", (unsigned long long)top.{n});' for n in names
    )
    return MAIN_CPP.replace("@PRINTS@", prints)


@dataclass
class HwSoakResult:
    variant: str
    plan: SoakPlan
    clocked: int
    seconds: float  # the clock loop's wall time
    cpu_seconds: float  # and its CPU time (the machine may be shared)
    build_seconds: float
    counters: dict[str, int] = field(default_factory=dict)

    @property
    def cycles(self) -> int:
        """Cycles with traffic running (after the loader)."""
        return self.counters["cycles"]

    @property
    def cycles_per_second(self) -> float:
        return self.clocked / self.seconds if self.seconds else float("nan")

    @property
    def cycles_per_cpu_second(self) -> float:
        return self.clocked / self.cpu_seconds if self.cpu_seconds else float("nan")

    def total(self, name: str) -> int:
        return sum(v for k, v in self.counters.items() if k.split("_", 1)[-1] == name)

    def links(self, name: str) -> int:
        return sum(
            v
            for k, v in self.counters.items()
            if k.endswith(f"_{name}") and ("_up_" in k or "_down_" in k)
        )

    @property
    def delivered(self) -> int:
        return sum(v for k, v in self.counters.items() if "_delivered" in k)

    @property
    def errors(self) -> int:
        return self.total("data_errors") + self.total("protocol_errors")

    @property
    def longest_wait(self) -> int:
        return max(v for k, v in self.counters.items() if "_longest_wait" in k)


#: C++ optimisation of the soak's model: it runs for hours, so the compiler's full
#: optimisation (300,000 cycles at -O3 ran in 0.84 of -O1's time; -O1 compiled in 0.69 of
#: -O3's time: one build and run of each on a two-core machine).
SOAK_OPT = "-O3"


def _build(
    params: PacketParams, plan: SoakPlan, root: Path, opt: str = SOAK_OPT
) -> tuple[Path, float, list[str]]:
    from fredfab.sim.verify.toolchain import sim_env, verilator_make_flags

    cosim.check_simulator("verilator")
    v_path, j_path = cosim.rtl(params, root)
    manifest = json.loads(j_path.read_text())
    harness = PacketSoakHarness(params, manifest, plan)
    names = harness.counter_names()
    # Another optimisation builds beside the usual one rather than over it.
    folder = f"seed{plan.seed}" + ("" if opt == SOAK_OPT else opt)
    out = Path(root).resolve() / "packet_soak" / params.name / folder
    exe = out / "obj" / "soak"
    t0 = time.perf_counter()
    text = verilog.convert(harness, name=MODULE, emit_src=False)
    main = driver_cpp(names)
    # Verilator's full optimisation, and no X handling or assertions in the loop (the design
    # has neither).
    cmd = [
        "verilator", "--cc", "--exe", "--build", "-j", "2", "--top-module", MODULE,
        "-O3", "--x-assign", "fast", "--x-initial", "fast", "--noassert",
        *[f"-Wno-{w}" for w in cosim.VERILATOR_WAIVERS], "-Wno-fatal",
        "-MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include", "-MAKEFLAGS", f"OPT_FAST={opt}",
        *verilator_make_flags(), "-Mdir", "obj", "-o", "soak",
        "main.cpp", "harness.v", "dut.v",
    ]  # fmt: skip
    key = hashlib.sha256("\0".join([text, main, v_path.read_text(), *cmd]).encode()).hexdigest()

    def compile_() -> None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "harness.v").write_text(text)
        (out / "dut.v").write_text(v_path.read_text())
        (out / "main.cpp").write_text(main)
        r = subprocess.run(cmd, cwd=out, env=sim_env(), capture_output=True, text=True)
        (out / "build.log").write_text(r.stdout + r.stderr)
        if r.returncode != 0:
            log = (r.stdout + r.stderr)[-1500:]
            raise cosim.CosimError(f"packet soak build failed, see {out / 'build.log'}:\n{log}")

    cached_build(out, key, compile_, outputs=[exe])
    return exe, time.perf_counter() - t0, names


def hw_soak(
    params: PacketParams,
    plan: SoakPlan,
    cycles: int,
    root: Path = cosim.DEFAULT_ROOT,
    opt: str = SOAK_OPT,
) -> HwSoakResult:
    """Build (cached) and run the hardware soak of ``plan`` for ``cycles`` clock cycles;
    ``opt``: the C++ optimisation (a short run may spend less on compiling)."""
    if cycles < 1:
        raise InputError(f"cycles must be >= 1, got {cycles}")
    exe, build_s, _ = _build(params, plan, root, opt)
    r = subprocess.run([str(exe), str(cycles)], capture_output=True, text=True, cwd=exe.parent)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("{")), None)
    if r.returncode != 0 or line is None:
        raise cosim.CosimError(f"packet soak run failed ({r.returncode}): {r.stderr[-500:]}")
    d = json.loads(line)
    clocked, seconds, cpu = d.pop("clocked"), d.pop("seconds"), d.pop("cpu_seconds")
    return HwSoakResult(params.name, plan, clocked, seconds, cpu, build_s, d)


def hw_soak_summary(r: HwSoakResult) -> dict:
    """The soak's figures, all ports and links together (the CLI and the bench print it)."""
    return {
        "cycles": r.cycles,
        "clocked": r.clocked,
        "run_s": round(r.seconds, 3),
        "cycles_per_s": r.cycles_per_second,
        "cycles_per_cpu_s": r.cycles_per_cpu_second,
        "build_s": round(r.build_seconds, 1),
        "delivered": r.delivered,
        "errors": r.errors,
        "data_errors": r.total("data_errors"),
        "protocol_errors": r.total("protocol_errors"),
        "data_sent": r.total("data_sent"),
        "replayed_flits": r.total("replayed"),
        "rewinds": r.total("rewinds"),
        "timeouts": r.total("timeouts"),
        "syncs": r.total("syncs_sent"),
        "bad_packets": r.total("bad_packets"),
        "reconfigurations": r.counters["reconfigurations"],
        "longest_wait": r.longest_wait,
        "slot_error": r.counters["slot_error"],
        **{f"link_{k}": r.links(k) for k in LINK_COUNTERS},
    }


def hw_soak_row(r: HwSoakResult, port: int) -> dict:
    """One port's counters."""
    c = r.counters
    delivered = [v for k, v in c.items() if k.startswith(f"p{port}_delivered")]
    return {
        "port": port,
        "delivered": sum(delivered),
        **{name: c[f"p{port}_{name}"] for name in NPU_COUNTERS},
        "dropped": c[f"p{port}_up_dropped"] + c[f"p{port}_down_dropped"],
        "corrupted": c[f"p{port}_up_corrupted"] + c[f"p{port}_down_corrupted"],
    }
