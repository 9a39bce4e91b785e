"""The hardware soak on two threads: the switch with its loader in one Verilated model, the
endpoints with the fault injectors in another (hw_soak.py ``PacketSoakHarness``, ``side``
"switch" and "npus"), each clocked by its own thread, exchanging what crosses between them
once a cycle.

Every crossing signal passes a register at its receiving end (``link_register``), so each
side's cycle c needs only what the other side showed after its cycle c - 1, and a model's
inputs feed registers alone. That makes the split exact: the counters are those of the one
model with the same registers (``hw_soak(..., link_register=True)``), which the tests check.
Without the registers the logic the inputs feed would run in Verilator's input step on both
of a cycle's evaluations as well as after the edge, and each side cost more than the whole
(docs/cosim.md). The price is a link one cycle longer each way than the one-model soak's.

Each side's values after cycle c sit in slot c % 2 of its buffer; a side publishes the
cycles it has finished with a release store and waits (spinning, then yielding) for the
other's with an acquire load."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from amaranth.back import verilog

from fredfab.hw.packet.params import PacketParams
from fredfab.sim.verify import cosim
from fredfab.sim.verify.build_cache import cached_build
from fredfab.sim.verify.packet.hw_soak import (
    SOAK_OPT,
    Crossing,
    PacketSoakHarness,
    report_cpp,
    run_verilator,
    soak_folder,
    verilator_command,
)
from fredfab.sim.verify.packet.soak_plan import SoakPlan

SWITCH_TOP = "fred_packet_soak_switch"
NPUS_TOP = "fred_packet_soak_npus"

#: The two-thread C++ main (@...@: filled from the crossings and the counters; @REPORT@:
#: hw_soak.REPORT_CPP).
SPLIT_MAIN_CPP = r"""
#include "V@SW@.h"
#include "V@NPU@.h"
#include "verilated.h"
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sched.h>
#include <thread>
#include <type_traits>

// A spinning wait's hint to the core (x86's pause, Arm's yield; nothing elsewhere).
#if defined(__x86_64__) || defined(__i386__)
#define SPIN_PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__) || defined(__arm__)
#define SPIN_PAUSE() asm volatile("yield")
#else
#define SPIN_PAUSE() ((void)0)
#endif

#define FIELD(M, name) std::remove_reference_t<decltype(M::name)> name;
struct FromSwitch { @FROM_SW_FIELDS@ };
struct FromNpus { @FROM_NPU_FIELDS@ };
static void get_sw(V@SW@& t, FromSwitch& o) { @GET_SW@ }
static void put_npu(V@NPU@& t, const FromSwitch& o) { @PUT_NPU@ }
static void get_npu(V@NPU@& t, FromNpus& o) { @GET_NPU@ }
static void put_sw(V@SW@& t, const FromNpus& o) { @PUT_SW@ }
template <class M> static void cycle(M& t) { t.clk = 0; t.eval(); t.clk = 1; t.eval(); }

// Cycles each side has finished; a side's values after cycle c sit in slot c % 2.
static std::atomic<unsigned long long> done_sw{0}, done_npu{0};
static FromSwitch from_sw[2];
static FromNpus from_npu[2];

static void wait_for(const std::atomic<unsigned long long>& done, unsigned long long c) {
    unsigned spins = 0;
    while (done.load(std::memory_order_acquire) < c) {
        if (++spins < 20000) SPIN_PAUSE();
        else sched_yield();
    }
}

// One side's n cycles: each takes the other side's values after the same number of cycles.
template <class M, class In, class Out>
static void run(M& t, unsigned long long n, const In* in, Out* out,
                std::atomic<unsigned long long>& mine,
                const std::atomic<unsigned long long>& theirs,
                void (*put)(M&, const In&), void (*get)(M&, Out&)) {
    for (unsigned long long c = 0; c < n; c++) {
        wait_for(theirs, c);
        put(t, in[c & 1]);
        cycle(t);
        get(t, out[(c + 1) & 1]);
        mine.store(c + 1, std::memory_order_release);
    }
}

int main(int argc, char** argv) {
    unsigned long long n = argc > 1 ? strtoull(argv[1], 0, 0) : 1000;
    VerilatedContext ctx_sw, ctx_npu;
    V@SW@ sw(&ctx_sw);
    V@NPU@ npu(&ctx_npu);
    sw.clk = 0; sw.eval(); npu.clk = 0; npu.eval();  // power-up: each side's first values
    get_sw(sw, from_sw[0]);
    get_npu(npu, from_npu[0]);
    auto t0 = std::chrono::steady_clock::now();
    std::clock_t c0 = std::clock();
    std::thread other([&] { run(npu, n, from_sw, from_npu, done_npu, done_sw, put_npu, get_npu); });
    run(sw, n, from_npu, from_sw, done_sw, done_npu, put_sw, get_sw);
    other.join();
@REPORT@"""


def split_main_cpp(
    crossings: list[Crossing], sw_counters: list[str], npu_counters: list[str]
) -> str:
    """The two-thread main for these crossings, printing both models' counters."""
    from_sw = [c.name for c in crossings if c.driver == "switch"]
    from_npu = [c.name for c in crossings if c.driver == "npus"]
    prints = [("sw", n) for n in sw_counters] + [("npu", n) for n in npu_counters]
    fill = {
        "@SW@": SWITCH_TOP,
        "@NPU@": NPUS_TOP,
        "@FROM_SW_FIELDS@": " ".join(f"FIELD(V{SWITCH_TOP}, {n})" for n in from_sw),
        "@FROM_NPU_FIELDS@": " ".join(f"FIELD(V{NPUS_TOP}, {n})" for n in from_npu),
        "@GET_SW@": " ".join(f"o.{n} = t.{n};" for n in from_sw),
        "@PUT_NPU@": " ".join(f"t.{n} = o.{n};" for n in from_sw),
        "@GET_NPU@": " ".join(f"o.{n} = t.{n};" for n in from_npu),
        "@PUT_SW@": " ".join(f"t.{n} = o.{n};" for n in from_npu),
        "@REPORT@": report_cpp(prints, "sw"),
    }
    text = SPLIT_MAIN_CPP
    for k, v in fill.items():
        text = text.replace(k, v)
    return text


def build_split(
    params: PacketParams, plan: SoakPlan, root: Path, opt: str = SOAK_OPT
) -> tuple[Path, float]:
    """Build (cached) the two-thread soak: the switch's side as a library, then the
    endpoints' side with the main linked against it. Returns the program and the seconds
    spent on both (the Verilog's conversion included, as ``hw_soak._build`` counts it)."""
    cosim.check_simulator("verilator")
    v_path, j_path = cosim.rtl(params, root)
    manifest = json.loads(j_path.read_text())
    sides = {
        side: PacketSoakHarness(params, manifest, plan, link_register=True, side=side)
        for side in ("switch", "npus")
    }
    out = soak_folder(params, plan, root, opt, "-2t")
    exe = out / "obj" / "soak"
    t0 = time.perf_counter()
    sw_v = verilog.convert(sides["switch"], name=SWITCH_TOP, emit_src=False)
    npu_v = verilog.convert(sides["npus"], name=NPUS_TOP, emit_src=False)
    main = split_main_cpp(
        sides["switch"].crossings,
        sides["switch"].counter_names(),
        sides["npus"].counter_names(),
    )
    sw_dir = out / "switch"
    sw_lib = sw_dir / f"V{SWITCH_TOP}__ALL.a"
    sw_cmd = verilator_command(SWITCH_TOP, opt, "-Mdir", ".", "switch.v", "dut.v")
    npu_cmd = verilator_command(
        NPUS_TOP, opt, "--exe", "-CFLAGS", f"-I{sw_dir}", "-Mdir", "obj", "-o", "soak",
        "main.cpp", "npus.v", str(sw_lib),
    )  # fmt: skip
    key = hashlib.sha256(
        "\0".join([sw_v, npu_v, main, v_path.read_text(), *sw_cmd, *npu_cmd]).encode()
    ).hexdigest()

    def compile_() -> None:
        sw_dir.mkdir(parents=True, exist_ok=True)
        (sw_dir / "switch.v").write_text(sw_v)
        (sw_dir / "dut.v").write_text(v_path.read_text())
        run_verilator(sw_cmd, sw_dir, sw_dir / "build.log")
        (out / "npus.v").write_text(npu_v)
        (out / "main.cpp").write_text(main)
        run_verilator(npu_cmd, out, out / "build.log")

    cached_build(out, key, compile_, outputs=[exe])
    return exe, time.perf_counter() - t0
