"""The packet switch's soak in hardware: the switch's generated Verilog (instantiated by the
names in its manifest, as fredfab.sim.verify.soak_harness does for the circuit switch),
a hardware NPU endpoint on every port (hw_endpoint.py) and a fault injector on every link
in each direction (hw_faults.py), all in one Verilated model clocked by a C++ loop: no
Python per cycle (or, with ``threads=2``, the switch's side and the endpoints' side as two
models on two threads, its links registered once more: hw_soak_split.py). The traffic and
hostility are a SoakPlan (soak_plan.py): MP, DP and PP at once, in messages, on links that
drop, corrupt, burst and fall silent.

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


#: What a harness holds: the whole soak, or one side of it for the two-thread soak
#: (hw_soak_split.py): the switch with its loader, or the endpoints with the injectors.
SIDES = ("whole", "switch", "npus")


@dataclass(frozen=True)
class Crossing:
    """A signal between the switch's side and the endpoints' side: its name (a port of a
    side's harness), width, and the side that drives it."""

    name: str
    width: int
    driver: str


def crossings(params: PacketParams, manifest: dict) -> list[Crossing]:
    """Every signal between the two sides, in the order the two-thread driver copies them."""
    widths = {port["name"]: port["width"] for port in manifest["ports"]}
    links, credits, retry = manifest["links"], manifest["credits"], manifest["link_retry"]
    out = [Crossing("running", 1, "switch")]
    for p in range(params.ports):
        out += [
            Crossing(f"sw_tx{p}", widths[links["tx"][p]["payload"]], "switch"),
            Crossing(f"sw_tx{p}_v", 1, "switch"),
            Crossing(f"sw_rx_credit{p}", widths[credits["rx_credit"][p]], "switch"),
            Crossing(f"sw_rx_ack{p}", widths[retry["rx_ack"][p]], "switch"),
            Crossing(f"sw_rx{p}", widths[links["rx"][p]["payload"]], "npus"),
            Crossing(f"sw_rx{p}_v", 1, "npus"),
            Crossing(f"sw_tx_credit{p}", widths[credits["tx_credit"][p]], "npus"),
            Crossing(f"sw_tx_ack{p}", widths[retry["tx_ack"][p]], "npus"),
        ]
    return out


class PacketSoakHarness(wiring.Component):
    """``fred_packet_soak`` (module docstring). ``link_register``: every signal between the
    switch and the endpoints' side passes a register at its receiving end (each link one
    cycle longer each way, and the endpoints start a cycle after the loader ends): the soak
    the two-thread build runs, as one model. ``side``: "whole", or the "switch" or "npus"
    half of a soak with ``link_register`` (hw_soak_split.py), whose crossings are ports."""

    def __init__(
        self,
        params: PacketParams,
        manifest: dict,
        plan: SoakPlan,
        link_register: bool = False,
        side: str = "whole",
    ):
        if plan.ports != params.ports:
            raise InputError(f"a plan for {plan.ports} ports on a {params.ports}-port switch")
        if side not in SIDES:
            raise InputError(f"side must be one of {', '.join(SIDES)}, got {side!r}")
        if side != "whole" and not link_register:
            raise InputError("a side of the soak runs only with link_register")
        self.params, self.manifest, self.plan = params, manifest, plan
        self.link_register, self.side = link_register, side
        self.crossings = crossings(params, manifest)
        P = params.ports
        self.streams = [plan.streams(p) for p in range(P)]
        members: dict = {"clk": In(1)}
        if side == "whole":
            members["running"] = Out(1)
        if side != "npus":
            members["reconfigurations"] = Out(COUNT_BITS)
            members["slot_error"] = Out(params.switch.slots)
        if side != "switch":
            members["cycles"] = Out(64)
            for p in range(P):
                for name in NPU_COUNTERS:
                    members[f"p{p}_{name}"] = Out(COUNT_BITS)
                for i in range(len(self.streams[p][1])):
                    members[f"p{p}_delivered{i}"] = Out(COUNT_BITS)
                    members[f"p{p}_longest_wait{i}"] = Out(COUNT_BITS)
                for d in ("up", "down"):
                    for name in LINK_COUNTERS:
                        members[f"p{p}_{d}_{name}"] = Out(COUNT_BITS)
        if side != "whole":
            for c in self.crossings:
                members[c.name] = (Out if c.driver == side else In)(c.width)
        super().__init__(members)

    def counter_names(self) -> list[str]:
        skip = {"clk", "running", "slot_error", *(c.name for c in self.crossings)}
        return [n for n in self.signature.members if n not in skip]

    def elaborate(self, platform) -> Module:
        m = Module()
        clock_without_reset(m, self.clk)
        # What each side drives onto a crossing, and what the other side reads of it.
        sent: dict[str, Value] = {}
        seen: dict[str, Value] = {}
        for c in self.crossings:
            if self.side == "whole":
                sent[c.name] = drive = Signal(c.width, name=c.name)
            elif c.driver == self.side:
                sent[c.name] = getattr(self, c.name)
                continue
            else:
                drive = getattr(self, c.name)
            if self.link_register:
                seen[c.name] = Signal(c.width, name=f"{c.name}_r")
                m.d.sync += seen[c.name].eq(drive)
            else:
                seen[c.name] = drive
        if self.side != "npus":
            self._switch_side(m, sent, seen)
        if self.side != "switch":
            self._npu_side(m, sent, seen)
        return m

    def _switch_side(self, m: Module, sent: dict, seen: dict) -> None:
        """The loader, the switch and its reconfiguration count."""
        params, plan, man = self.params, self.plan, self.manifest
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
        m.d.comb += sent["running"].eq(running)
        if self.side == "whole":
            m.d.comb += self.running.eq(running)
        conns: dict[str, Value] = {}
        for k in ("cfg", "flows"):
            conns[streams[k]["payload"]] = payload[k]
            conns[streams[k]["valid"]] = valid[k]
        links = man["links"]
        for p in range(params.ports):
            conns[links["rx"][p]["payload"]] = seen[f"sw_rx{p}"]
            conns[links["rx"][p]["valid"]] = seen[f"sw_rx{p}_v"]
            conns[links["tx"][p]["payload"]] = sent[f"sw_tx{p}"]
            conns[links["tx"][p]["valid"]] = sent[f"sw_tx{p}_v"]
            conns[man["credits"]["rx_credit"][p]] = sent[f"sw_rx_credit{p}"]
            conns[man["credits"]["tx_credit"][p]] = seen[f"sw_tx_credit{p}"]
            conns[man["link_retry"]["rx_ack"][p]] = sent[f"sw_rx_ack{p}"]
            conns[man["link_retry"]["tx_ack"][p]] = seen[f"sw_tx_ack{p}"]
        reconf = Signal()
        slot_error = Signal(params.switch.slots)
        conns[man["status"]["reconfiguring"]] = reconf
        conns[man["status"]["slot_error"]] = slot_error
        m.d.comb += self.slot_error.eq(slot_error)
        was = Signal()
        m.d.sync += was.eq(reconf)
        with m.If(reconf & ~was):
            m.d.sync += self.reconfigurations.eq(self.reconfigurations + 1)
        m.submodules.dut = manifest_instance(man, conns, idle_inputs=True)

    def _npu_side(self, m: Module, sent: dict, seen: dict) -> None:  # noqa: C901 (every port)
        """The endpoints and the injectors, and their counters."""
        params, plan = self.params, self.plan
        running = seen["running"]
        run_late = Signal()  # the injectors behind the endpoints' registered tx
        m.d.sync += run_late.eq(running)
        with m.If(running):
            m.d.sync += self.cycles.eq(self.cycles + 1)
        rates = plan.links.faults
        for p in range(params.ports):
            sends, recvs = self.streams[p]
            ep = NpuEndpoint(params, p, sends, recvs, plan.knobs(p))
            m.submodules[f"npu{p}"] = EnableInserter(running)(ep)
            up = FaultInjector(params, rates, link_seed(plan.seed, p, "up"))
            down = FaultInjector(params, rates, link_seed(plan.seed, p, "down"))
            m.submodules[f"up{p}"] = EnableInserter(run_late)(up)
            m.submodules[f"down{p}"] = EnableInserter(running)(down)
            rx_credit = seen[f"sw_rx_credit{p}"]
            m.d.comb += [
                down.i_valid.eq(seen[f"sw_tx{p}_v"] & running),
                down.i.eq(seen[f"sw_tx{p}"]),
                ep.rx.valid.eq(down.o_valid),
                ep.rx.payload.eq(down.o),
                ep.rx_credit.eq(rx_credit & running.replicate(len(rx_credit))),
                ep.rx_ack.eq(seen[f"sw_rx_ack{p}"]),
                up.i_valid.eq(ep.tx.valid),
                up.i.eq(ep.tx.payload),
                sent[f"sw_rx{p}"].eq(up.o.as_value()),
                sent[f"sw_rx{p}_v"].eq(up.o_valid & run_late),
                sent[f"sw_tx_credit{p}"].eq(ep.tx_credit),
                sent[f"sw_tx_ack{p}"].eq(ep.tx_ack.as_value()),
            ]
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


# -- building and running ---------------------------------------------------------------------


#: The C++ main: clock the harness for argv[1] cycles from power-up, then report
#: (@REPORT@: REPORT_CPP).
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
@REPORT@"""

#: The end of a soak's main, after its clock loop (``t0``, ``c0``: its start): the loop's
#: wall and CPU seconds and every counter as one JSON line (@PRINTS@; @SW@: the model that
#: holds ``slot_error``, printed last).
REPORT_CPP = r"""    double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
    auto t1 = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(t1 - t0).count();
    printf("{\"clocked\": %llu, \"seconds\": %.6f, \"cpu_seconds\": %.6f, ", n, s, cpu);
@PRINTS@
    printf("\"slot_error\": %llu}\n", (unsigned long long)@SW@.slot_error);
    return 0;
}
"""


def report_cpp(counters: list[tuple[str, str]], switch_model: str) -> str:
    """REPORT_CPP printing each (model, counter) of ``counters``."""
    prints = "\n".join(
        f'    printf("\\"{n}\\": %llu, ", (unsigned long long){model}.{n});'
        for model, n in counters
    )
    return REPORT_CPP.replace("@PRINTS@", prints).replace("@SW@", switch_model)


def driver_cpp(names: list[str]) -> str:
    return MAIN_CPP.replace("@REPORT@", report_cpp([("top", n) for n in names], "top"))


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


def verilator_command(top: str, opt: str, *args: str) -> list[str]:
    """Verilator's build of a soak model with top module ``top``: its full optimisation, and
    no X handling or assertions in the loop (the design has neither); ``args``: what else
    (``--exe``, the output, the files)."""
    from fredfab.sim.verify.toolchain import verilator_make_flags

    return [
        "verilator", "--cc", "--build", "-j", "2", "--top-module", top,
        "-O3", "--x-assign", "fast", "--x-initial", "fast", "--noassert",
        *[f"-Wno-{w}" for w in cosim.VERILATOR_WAIVERS], "-Wno-fatal",
        "-MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include", "-MAKEFLAGS", f"OPT_FAST={opt}",
        *verilator_make_flags(), *args,
    ]  # fmt: skip


def run_verilator(cmd: list[str], cwd: Path, log: Path) -> None:
    """Run a soak model's build, its output in ``log``; a failure is a CosimError."""
    from fredfab.sim.verify.toolchain import sim_env

    r = subprocess.run(cmd, cwd=cwd, env=sim_env(), capture_output=True, text=True)
    log.write_text(r.stdout + r.stderr)
    if r.returncode != 0:
        tail = (r.stdout + r.stderr)[-1500:]
        raise cosim.CosimError(f"packet soak build failed, see {log}:\n{tail}")


def soak_folder(params: PacketParams, plan: SoakPlan, root: Path, opt: str, kind: str) -> Path:
    """Where a soak model builds: one folder per switch, seed, optimisation (another than
    the usual builds beside it rather than over it) and kind ("" the soak, "-linkreg" with
    registered links, "-2t" the two-thread soak)."""
    folder = f"seed{plan.seed}" + ("" if opt == SOAK_OPT else opt) + kind
    return Path(root).resolve() / "packet_soak" / params.name / folder


def _build(
    params: PacketParams,
    plan: SoakPlan,
    root: Path,
    opt: str = SOAK_OPT,
    link_register: bool = False,
) -> tuple[Path, float, list[str]]:
    cosim.check_simulator("verilator")
    v_path, j_path = cosim.rtl(params, root)
    manifest = json.loads(j_path.read_text())
    harness = PacketSoakHarness(params, manifest, plan, link_register=link_register)
    names = harness.counter_names()
    out = soak_folder(params, plan, root, opt, "-linkreg" if link_register else "")
    exe = out / "obj" / "soak"
    t0 = time.perf_counter()
    text = verilog.convert(harness, name=MODULE, emit_src=False)
    main = driver_cpp(names)
    cmd = verilator_command(
        MODULE, opt, "--exe", "-Mdir", "obj", "-o", "soak", "main.cpp", "harness.v", "dut.v"
    )
    key = hashlib.sha256("\0".join([text, main, v_path.read_text(), *cmd]).encode()).hexdigest()

    def compile_() -> None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "harness.v").write_text(text)
        (out / "dut.v").write_text(v_path.read_text())
        (out / "main.cpp").write_text(main)
        run_verilator(cmd, out, out / "build.log")

    cached_build(out, key, compile_, outputs=[exe])
    return exe, time.perf_counter() - t0, names


def hw_soak(
    params: PacketParams,
    plan: SoakPlan,
    cycles: int,
    root: Path = cosim.DEFAULT_ROOT,
    opt: str = SOAK_OPT,
    threads: int = 1,
    link_register: bool = False,
) -> HwSoakResult:
    """Build (cached) and run the hardware soak of ``plan`` for ``cycles`` clock cycles;
    ``opt``: the C++ optimisation (a short run may spend less on compiling). ``threads``
    2: the switch and the endpoints as two models on two threads (hw_soak_split.py), its
    links registered at their receiving ends; ``link_register``: the same links in one
    model on one thread (``threads`` 2 gives its counters)."""
    if cycles < 1:
        raise InputError(f"cycles must be >= 1, got {cycles}")
    if threads not in (1, 2):
        raise InputError(f"threads must be 1 or 2, got {threads}")
    if threads == 2:
        from fredfab.sim.verify.packet.hw_soak_split import build_split

        exe, build_s = build_split(params, plan, root, opt)
    else:
        exe, build_s, _ = _build(params, plan, root, opt, link_register)
    r = subprocess.run([str(exe), str(cycles)], capture_output=True, text=True, cwd=exe.parent)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("{")), None)
    if r.returncode != 0 or line is None:
        raise cosim.CosimError(f"packet soak run failed ({r.returncode}): {r.stderr[-500:]}")
    d = json.loads(line)
    clocked, seconds, cpu = d.pop("clocked"), d.pop("seconds"), d.pop("cpu_seconds")
    kind = "-2t" if threads == 2 else "-linkreg" if link_register else ""
    return HwSoakResult(params.name + kind, plan, clocked, seconds, cpu, build_s, d)


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
