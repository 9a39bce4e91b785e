"""Self-checking RTL soak: traffic generators and a checker in Verilog, no Python per cycle.

``soak(params, cycles, sim="verilator")`` generates a wrapper module ``fred_soak`` around the
switch, builds it (Verilator: a C++ main that only toggles the clock; Icarus: a Verilog
testbench), runs it for ``cycles`` clock cycles and reads the counters at the end.

What the wrapper does
---------------------
* After reset it writes one routed flow set (``soak_flows``: an All-Reduce, a reduce, a
  multicast and unicasts, together using every port) into slot 1 through ``cfg``, raises
  ``select`` until it is accepted, then starts the traffic.
* Every input port of a flow has a generator: a xorshift64 state seeded per port, advanced
  once per accepted flit, whose bits make the flit's data; a ``last`` sequence seeded per
  *flow*, so every input of a flow cuts the same packets (as the flow contract requires);
  and an idle pattern of its own (always / 3 in 4 / 1 in 2 cycles offering; valid is held
  until the transfer).
* Every output port has a readiness pattern (always, 3/4, 1/2, or long random stalls of up
  to 63 cycles) and a checker holding its own copies of the generators of its flow's
  inputs, advanced once per output flit. Output flit k of a flow must be the element-wise
  sum of input flit k of every input of the flow, and carry the flow's k-th ``last``.
  Sums wrap, so for integer element types the order of additions does not matter and the
  checker needs no reduction tree; that is why flows with more than one input need an
  integer type (float variants soak with single-input flows only).
* Counters: flits accepted per output port, flits sent, mismatches and the first one
  (port, flit index, cycle, expected and received flit). Outputs of ports no flow uses
  must stay silent (any flit there is an error).
* ``fault`` (runtime arguments): flip bit 0 of the flit the checker sees on one port at one
  flit index, to show that a mismatch is caught (exactly one error, at that port).

Why this is sound: the expected value of every output flit is computed from the same
deterministic sequences the generators used, indexed by flit count, not by time, so any
loss, duplication, reordering, misrouting, wrong sum or wrong packet boundary shows up,
whatever the idle and backpressure timing.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from fredfab.hw.params import SwitchParams
from fredfab.model.flow import Flow
from fredfab.model.router import RouteConflict, Routing, route
from fredfab.sim.verify import cosim

MASK64 = (1 << 64) - 1


def soak_flows(ports: int) -> list[Flow]:
    """An All-Reduce, a reduce, a multicast and unicasts over all ports (P >= 6); smaller
    switches get what fits (P = 4: an All-Reduce and a reduce, output 3 stays silent)."""
    P = ports
    if P < 4:
        return [Flow([p], [(p + 1) % P]) for p in range(P)]
    if P < 6:
        flows = [Flow([0, 1], [0, 1]), Flow([2, 3], [2])]
        return flows + ([Flow([4], [3, 4])] if P == 5 else [])
    a, r = P // 3, max(2, P // 4)
    mc = a + r
    flows = [
        Flow(range(a), range(a)),  # All-Reduce
        Flow(range(a, a + r), [a]),  # reduce
        Flow([mc], range(a + 1, a + 1 + r)),  # multicast
    ]
    rest = list(range(mc + 1, P))
    return flows + [Flow([p], [q]) for p, q in zip(rest, rest[1:] + rest[:1], strict=True)]


def soak_routing(params: SwitchParams) -> Routing:
    flows = soak_flows(params.ports)
    if not params.element.is_float:
        try:
            return route(flows, params.ports, params.m, arch=params.arch)
        except RouteConflict:
            pass
    # Float types (or a conflict): a multicast and a rotation, single-input flows only.
    P = params.ports
    flows = [Flow([0], [0, 1])] + [Flow([p], [(p + 1) % P]) for p in range(2, P)]
    flows = [f for f in flows if f.ops.isdisjoint({0, 1}) or f.ips == {0}]
    outs = {q for f in flows for q in f.ops}
    return route(flows, P, params.m) if outs else route([Flow([0], [0])], P, params.m)


def _xs(name: str) -> str:
    return (
        f"  function [63:0] {name};\n    input [63:0] x;\n    reg [63:0] t;\n    begin\n"
        "      t = x ^ (x << 13);\n      t = t ^ (t >> 7);\n"
        f"      {name} = t ^ (t << 17);\n    end\n  endfunction\n"
    )


def _seed(tag: str, k: int) -> int:
    h = hashlib.sha256(f"{tag}:{k}".encode()).digest()
    return int.from_bytes(h[:8], "little") or 1


def soak_verilog(params: SwitchParams, manifest: dict, routing: Routing) -> str:
    """The ``fred_soak`` wrapper (see the module docstring)."""
    P = params.ports
    et = params.element
    dw = params.data_width
    fw = manifest["flit"]["width"]
    last_lsb = manifest["flit"]["fields"]["last"]["lsb"]
    streams = manifest["streams"]
    cfgp = manifest["config"]["cfg_payload"]
    words = routing.config.to_words(params.word_width)
    nw = len(words)
    owner_in = {p: f for f in routing.flows for p in f.ips}
    owner_out = {q: f for f in routing.flows for q in f.ops}
    flow_id = {f: i for i, f in enumerate(routing.flows)}
    for f in routing.flows:
        if len(f.ips) > 1 and et.is_float:
            raise ValueError("soak reductions need an integer element type")
    chunks = -(-dw // 64)
    L = []
    w = L.append
    w("`timescale 1ns/1ps")
    w("module fred_soak(")
    w("  input clk, input rst,")
    w("  input fault_en, input [7:0] fault_port, input [31:0] fault_index,")
    w("  output reg [63:0] cycles, output reg [63:0] in_flits, output reg [31:0] errors,")
    w("  output reg running,")
    w("  output reg [7:0] err_port, output reg [31:0] err_index, output reg [63:0] err_cycle,")
    w(f"  output reg [{fw - 1}:0] err_got, output reg [{fw - 1}:0] err_exp,")
    w(f"  output [{32 * P - 1}:0] out_flits")
    w(");")
    w(_xs("xs"))
    w(f"  function [{dw - 1}:0] mix;\n    input [63:0] x;\n    begin")
    parts = []
    for j in range(chunks):
        rot = (17 * j) % 64
        c = _seed("mix", j)
        r = f"{{x[{63 - rot}:0], x[63:{64 - rot}]}}" if rot else "x"
        parts.append(f"({r} ^ 64'h{c:016x})")
    w(f"      mix = {{{', '.join(reversed(parts))}}};")
    w("    end\n  endfunction")
    # DUT wiring
    for p in range(P):
        w(f"  wire [{fw - 1}:0] ip{p}; reg iv{p}; wire ir{p};")
        w(f"  wire [{fw - 1}:0] op{p}; wire ov{p}; wire or{p};")
    cw = sum(f["width"] for f in cfgp.values())
    w(f"  wire [{cw - 1}:0] cfg_payload; wire cfg_valid; wire cfg_ready;")
    sw = next(x["width"] for x in manifest["ports"] if x["name"] == streams["select"]["payload"])
    w(f"  wire [{sw - 1}:0] sel_payload = 1; wire sel_valid; wire sel_ready;")
    conns = [".clk(clk)", ".rst(rst)"]
    for p in range(P):
        s, o = streams["i"][p], streams["o"][p]
        conns += [f".{s['payload']}(ip{p})", f".{s['valid']}(iv{p})", f".{s['ready']}(ir{p})"]
        conns += [f".{o['payload']}(op{p})", f".{o['valid']}(ov{p})", f".{o['ready']}(or{p})"]
    for name, sig in (("cfg", "cfg"), ("select", "sel")):
        s = streams[name]
        conns += [f".{s[k]}({sig}_{k})" for k in ("payload", "valid", "ready")]
    known = {c.split("(")[0][1:] for c in conns}
    for port in manifest["ports"]:
        if port["name"] not in known and port["direction"] == "output":
            w(f"  wire [{port['width'] - 1}:0] unused_{port['name']};")
            conns.append(f".{port['name']}(unused_{port['name']})")
    w(f"  {manifest['top']} dut (\n    " + ",\n    ".join(conns) + "\n  );")
    # Configuration, then select, then run.
    w("  reg [1:0] st; reg [15:0] widx; reg [63:0] rs_cfg;")
    w(f"  reg [{params.word_width - 1}:0] word;")
    w("  always @* begin\n    case (widx)")
    for i, v in enumerate(words):
        w(f"      {i}: word = {params.word_width}'h{v:x};")
    w(f"      default: word = {params.word_width}'h0;\n    endcase\n  end")
    fields = {k: (v["lsb"], v["width"]) for k, v in cfgp.items()}
    w(
        f"  assign cfg_payload = ({cw}'d1 << {fields['slot'][0]}) | "
        f"({cw}'(widx) << {fields['addr'][0]}) | ({cw}'(word) << {fields['data'][0]});"
    )
    w("  assign cfg_valid = (st == 0);")
    w("  assign sel_valid = (st == 1);")
    w("  always @(posedge clk) begin")
    w("    if (rst) begin st <= 0; widx <= 0; running <= 0; end")
    w(
        f"    else if (st == 0 && cfg_ready) begin widx <= widx + 1; "
        f"if (widx == {nw - 1}) st <= 1; end"
    )
    w("    else if (st == 1 && sel_ready) begin st <= 2; running <= 1; end")
    w("  end")
    # Generators.
    for p in range(P):
        f = owner_in.get(p)
        if f is None:
            w(f"  assign ip{p} = 0; always @(posedge clk) iv{p} <= 0;")
            continue
        fid = flow_id[f]
        mode = p % 3
        offer = {0: "1'b1", 1: f"(gv{p}[1:0] != 0)", 2: f"gv{p}[0]"}[mode]
        w(f"  reg [63:0] gd{p}, gl{p}, gv{p};")
        w(f"  wire if{p} = iv{p} & ir{p};")
        w(f"  assign ip{p} = {{gl{p}[2:0] == 0, mix(gd{p})}};")
        w("  always @(posedge clk) begin")
        w(
            f"    if (rst) begin gd{p} <= 64'h{_seed('data', p):016x}; "
            f"gl{p} <= 64'h{_seed('last', fid):016x}; gv{p} <= 64'h{_seed('valid', p):016x}; "
            f"iv{p} <= 0; end"
        )
        w("    else if (running) begin")
        w(f"      gv{p} <= xs(gv{p});")
        w(f"      if (if{p}) begin gd{p} <= xs(gd{p}); gl{p} <= xs(gl{p}); end")
        w(f"      if (!iv{p} || if{p}) iv{p} <= {offer};")
        w("    end")
        w("  end")
    if last_lsb != dw:
        raise ValueError(f"flit layout {manifest['flit']['fields']} is not data then last")
    # Output readiness and checkers.
    w("  integer k;")
    for q in range(P):
        mode = q % 4
        w(f"  reg [63:0] rv{q}; reg sst{q}; reg [5:0] scnt{q}; reg [31:0] cnt{q};")
        ready = {0: "1'b1", 1: f"(rv{q}[1:0] != 0)", 2: f"rv{q}[0]", 3: f"~sst{q}"}[mode]
        w(f"  assign or{q} = running & {ready};")
        w(f"  wire of{q} = ov{q} & or{q};")
        w(f"  assign out_flits[{32 * q + 31}:{32 * q}] = cnt{q};")
        f = owner_out.get(q)
        if f is None:
            w(f"  wire [{fw - 1}:0] ex{q} = 0; wire bad{q} = 1'b1;")
        else:
            ips = sorted(f.ips)
            for p in ips:
                w(f"  reg [63:0] cd{q}_{p}; wire [{dw - 1}:0] md{q}_{p} = mix(cd{q}_{p});")
            w(f"  reg [63:0] cl{q};")
            w(f"  wire [{dw - 1}:0] ed{q};")
            eb = et.bits
            for lane in range(params.lanes):
                sl = f"[{lane * eb + eb - 1}:{lane * eb}]"
                terms = " + ".join(f"md{q}_{p}{sl}" for p in ips)
                w(f"  assign ed{q}{sl} = {terms};")
            w(f"  wire [{fw - 1}:0] ex{q} = {{cl{q}[2:0] == 0, ed{q}}};")
            w(
                f"  wire [{fw - 1}:0] gt{q} = op{q} ^ "
                f"((fault_en && fault_port == {q} && fault_index == cnt{q}) ? {fw}'d1 : {fw}'d0);"
            )
            w(f"  wire bad{q} = gt{q} != ex{q};")
        w("  always @(posedge clk) begin")
        reset_refs = (
            "".join(f" cd{q}_{p} <= 64'h{_seed('data', p):016x};" for p in sorted(f.ips))
            if f is not None
            else ""
        )
        if f is not None:
            reset_refs += f" cl{q} <= 64'h{_seed('last', flow_id[f]):016x};"
        w(
            f"    if (rst) begin rv{q} <= 64'h{_seed('ready', q):016x}; sst{q} <= 0; "
            f"scnt{q} <= 0; cnt{q} <= 0;{reset_refs} end"
        )
        w("    else if (running) begin")
        w(f"      rv{q} <= xs(rv{q});")
        w(
            f"      if (scnt{q} == 0) begin sst{q} <= ~sst{q}; scnt{q} <= rv{q}[13:8]; end "
            f"else scnt{q} <= scnt{q} - 1;"
        )
        if f is not None:
            adv = "".join(f" cd{q}_{p} <= xs(cd{q}_{p});" for p in sorted(f.ips))
            w(f"      if (of{q}) begin cnt{q} <= cnt{q} + 1;{adv} cl{q} <= xs(cl{q}); end")
        else:
            w(f"      if (of{q}) cnt{q} <= cnt{q} + 1;")
        w("    end")
        w("  end")
    # Error bookkeeping (lowest port first within a cycle).
    w("  always @(posedge clk) begin")
    w("    if (rst) begin errors <= 0; cycles <= 0; in_flits <= 0; err_port <= 0;")
    w("      err_index <= 0; err_cycle <= 0; err_got <= 0; err_exp <= 0; end")
    w("    else if (running) begin")
    w("      cycles <= cycles + 1;")
    ins = " + ".join(f"(iv{p} & ir{p})" for p in range(P) if p in owner_in) or "0"
    w(f"      in_flits <= in_flits + {ins};")
    terms = " + ".join(f"(of{q} & bad{q})" for q in range(P))
    w(f"      errors <= errors + {terms};")
    w("      if (errors == 0) begin")
    first = True
    for q in range(P):
        got = f"op{q}" if owner_out.get(q) is None else f"gt{q}"
        kw = "if" if first else "else if"
        first = False
        w(
            f"        {kw} (of{q} && bad{q}) begin err_port <= {q}; err_index <= cnt{q}; "
            f"err_cycle <= cycles; err_got <= {got}; err_exp <= ex{q}; end"
        )
    w("      end")
    w("    end")
    w("  end")
    w("endmodule")
    text = "\n".join(L) + "\n"
    return re.sub(r"\n{3,}", "\n\n", text)


_MAIN_CPP = r"""
// Clock the fred_soak wrapper for N cycles and print its counters as JSON.
#include "Vfred_soak.h"
#include "verilated.h"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstdint>

static void hexw(const char* name, const uint32_t* w, int words, bool comma) {
    printf("\"%s\": \"0x", name);
    for (int i = words - 1; i >= 0; i--) printf("%08x", w[i]);
    printf("\"%s", comma ? ", " : "");
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s CYCLES [FAULT_PORT FAULT_INDEX]\n", argv[0]);
        return 2;
    }
    uint64_t n = strtoull(argv[1], 0, 0);
    VerilatedContext ctx;
    Vfred_soak top(&ctx);
    top.fault_en = argc >= 4;
    top.fault_port = argc >= 4 ? atoi(argv[2]) : 0;
    top.fault_index = argc >= 4 ? strtoul(argv[3], 0, 0) : 0;
    top.rst = 1;
    for (int i = 0; i < 4; i++) { top.clk = 0; top.eval(); top.clk = 1; top.eval(); }
    top.rst = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (uint64_t c = 0; c < n; c++) { top.clk = 0; top.eval(); top.clk = 1; top.eval(); }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("{\"clocked\": %llu, \"seconds\": %.6f, \"cycles\": %llu, \"in_flits\": %llu, "
           "\"errors\": %u, \"running\": %u, \"err_port\": %u, \"err_index\": %u, "
           "\"err_cycle\": %llu, ",
           (unsigned long long)n, s, (unsigned long long)top.cycles,
           (unsigned long long)top.in_flits, (unsigned)top.errors, (unsigned)top.running,
           (unsigned)top.err_port, (unsigned)top.err_index, (unsigned long long)top.err_cycle);
    uint32_t buf[64];
    GOT_EXP
    printf("\"out_flits\": [");
    OUT_FLITS
    printf("]}\n");
    return 0;
}
"""

_TB_V = """`timescale 1ns/1ps
module soak_tb;
  reg clk = 0, rst = 1;
  reg fault_en = 0; reg [7:0] fault_port = 0; reg [31:0] fault_index = 0;
  wire [63:0] cycles, in_flits, err_cycle; wire [31:0] errors, err_index; wire running;
  wire [7:0] err_port; wire [FW-1:0] err_got, err_exp; wire [32*P-1:0] out_flits;
  fred_soak s(.clk(clk), .rst(rst), .fault_en(fault_en), .fault_port(fault_port),
    .fault_index(fault_index), .cycles(cycles), .in_flits(in_flits), .errors(errors),
    .running(running), .err_port(err_port), .err_index(err_index), .err_cycle(err_cycle),
    .err_got(err_got), .err_exp(err_exp), .out_flits(out_flits));
  always #5 clk = ~clk;
  integer n, i, fp, fi;
  initial begin
    if (!$value$plusargs("cycles=%d", n)) n = 1000;
    if ($value$plusargs("fault_port=%d", fp) && $value$plusargs("fault_index=%d", fi)) begin
      fault_en = 1; fault_port = fp; fault_index = fi;
    end
    repeat (4) @(posedge clk);
    #1 rst = 0;
    repeat (n) @(posedge clk);
    #1;
    $write("{\\"clocked\\": %0d, \\"seconds\\": 0, \\"cycles\\": %0d, ", n, cycles);
    $write("\\"in_flits\\": %0d, \\"errors\\": %0d, ", in_flits, errors);
    $write("\\"running\\": %0d, \\"err_port\\": %0d, ", running, err_port);
    $write("\\"err_index\\": %0d, \\"err_cycle\\": %0d, ", err_index, err_cycle);
    $write("\\"err_got\\": \\"0x%h\\", \\"err_exp\\": \\"0x%h\\", ", err_got, err_exp);
    $write("\\"out_flits\\": [");
    for (i = 0; i < P; i = i + 1) $write("%0d%s", out_flits[32*i +: 32], i == P-1 ? "" : ", ");
    $write("]}\\n");
    $finish;
  end
endmodule
"""


def _main_cpp(fw: int, P: int) -> str:
    words = -(-fw // 32)
    if fw <= 64:
        ge = (
            "uint64_t g = top.err_got, e = top.err_exp;\n"
            "    for (int i = 0; i < 2; i++) buf[i] = (uint32_t)(g >> (32 * i));\n"
            f'    hexw("err_got", buf, {words}, true);\n'
            "    for (int i = 0; i < 2; i++) buf[i] = (uint32_t)(e >> (32 * i));\n"
            f'    hexw("err_exp", buf, {words}, true);'
        )
    else:
        ge = (
            f"for (int i = 0; i < {words}; i++) buf[i] = top.err_got[i];\n"
            f'    hexw("err_got", buf, {words}, true);\n'
            f"    for (int i = 0; i < {words}; i++) buf[i] = top.err_exp[i];\n"
            f'    hexw("err_exp", buf, {words}, true);'
        )
    if 32 * P <= 64:
        of = (
            f'for (int q = 0; q < {P}; q++) printf("%u%s", (unsigned)(((uint64_t)top.out_flits) '
            f'>> (32 * q)), q == {P - 1} ? "" : ", ");'
        )
    else:
        of = (
            f'for (int q = 0; q < {P}; q++) printf("%u%s", (unsigned)top.out_flits[q], '
            f'q == {P - 1} ? "" : ", ");'
        )
    return _MAIN_CPP.replace("GOT_EXP", ge).replace("OUT_FLITS", of)


@dataclass
class SoakResult:
    sim: str
    variant: str
    flows: list[str]
    clocked: int  # cycles clocked after reset
    cycles: int  # cycles with traffic running (after configuration)
    in_flits: int
    out_flits: list[int]
    errors: int
    first_error: dict | None
    seconds: float  # simulation wall time (the loop only, Verilator; whole run, Icarus)
    build_seconds: float

    @property
    def cycles_per_second(self) -> float:
        return self.clocked / self.seconds if self.seconds else float("nan")


def _build(params: SwitchParams, sim: str, root: Path) -> tuple[Path, float, list[str], int]:
    from fredfab.hw.manifest import load_manifest
    from fredfab.sim.verify.toolchain import sim_env

    cosim.check_simulator(sim)
    v_path, j_path = cosim.rtl(params, root)
    manifest = load_manifest(j_path)
    routing = soak_routing(params)
    soak_v = soak_verilog(params, manifest, routing)
    out = Path(root).resolve() / "soak" / sim / params.name
    out.mkdir(parents=True, exist_ok=True)
    fw = manifest["flit"]["width"]
    dut_text = v_path.read_text()
    if sim == "icarus":
        dut_text = cosim.icarus_verilog(dut_text)
    if sim == "verilator":
        extra = _main_cpp(fw, params.ports)
        cmd = [
            "verilator", "--cc", "--exe", "--build", "-j", "2", "--top-module", "fred_soak",
            *[f"-Wno-{w}" for w in cosim.VERILATOR_WAIVERS], "-Wno-fatal",
            "-MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include", "-MAKEFLAGS", "OPT_FAST=-O2",
            "-Mdir", "obj", "-o", "soak", "main.cpp", "soak.v", "dut.v",
        ]  # fmt: skip
        exe = out / "obj" / "soak"
    else:
        extra = _TB_V.replace("FW-1", str(fw - 1)).replace("32*P-1", str(32 * params.ports - 1))
        extra = extra.replace("i == P-1", f"i == {params.ports - 1}").replace(
            "i < P;", f"i < {params.ports};"
        )
        cmd = ["iverilog", "-g2012", "-o", "soak.vvp", "-s", "soak_tb", "tb.v", "soak.v", "dut.v"]
        exe = out / "soak.vvp"
    key = hashlib.sha256("\0".join([soak_v, dut_text, extra, *cmd]).encode()).hexdigest()
    t0 = time.perf_counter()
    seconds = 0.0
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = out / "stamp"
        if not (exe.exists() and stamp.exists() and stamp.read_text() == key):
            stamp.unlink(missing_ok=True)
            shutil.rmtree(out / "obj", ignore_errors=True)
            (out / "soak.v").write_text(soak_v)
            (out / "dut.v").write_text(dut_text)
            (out / ("main.cpp" if sim == "verilator" else "tb.v")).write_text(extra)
            r = subprocess.run(cmd, cwd=out, env=sim_env(), capture_output=True, text=True)
            (out / "build.log").write_text(r.stdout + r.stderr)
            if r.returncode != 0:
                raise cosim.CosimError(
                    f"soak build failed, see {out / 'build.log'}:\n{(r.stdout + r.stderr)[-1500:]}"
                )
            stamp.write_text(key)
            seconds = time.perf_counter() - t0
    return exe, seconds, [str(f) for f in routing.flows], fw


def soak(
    params: SwitchParams,
    cycles: int = 1_000_000,
    sim: str = "verilator",
    fault: tuple[int, int] | None = None,
    root: Path = cosim.DEFAULT_ROOT,
) -> SoakResult:
    """Build (cached) and run the soak for ``cycles`` cycles; ``fault = (port, flit index)``
    flips one bit the checker sees there."""
    if cycles < 1:
        raise ValueError(f"cycles must be >= 1, got {cycles}")
    exe, build_s, flows, fw = _build(params, sim, root)
    if sim == "verilator":
        argv = [str(exe), str(cycles), *([str(fault[0]), str(fault[1])] if fault else [])]
    else:
        argv = ["vvp", "-n", str(exe), f"+cycles={cycles}"]
        if fault:
            argv += [f"+fault_port={fault[0]}", f"+fault_index={fault[1]}"]
    t0 = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, cwd=exe.parent)
    wall = time.perf_counter() - t0
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("{")), None)
    if r.returncode != 0 or line is None:
        raise cosim.CosimError(
            f"soak run failed ({r.returncode}): {r.stdout[-500:]}{r.stderr[-500:]}"
        )
    d = json.loads(line)
    first = None
    if d["errors"]:
        first = {
            "port": d["err_port"],
            "index": d["err_index"],
            "cycle": d["err_cycle"],
            "expected": int(d["err_exp"], 16),
            "got": int(d["err_got"], 16),
        }
    seconds = d["seconds"] if sim == "verilator" else wall
    return SoakResult(
        sim, params.name, flows, d["clocked"], d["cycles"], d["in_flits"], d["out_flits"],
        d["errors"], first, seconds, build_s,
    )  # fmt: skip
