"""The simulator side of the soak: clock ``fred_soak`` (fredfab.sim.verify.soak_harness) for N
cycles from power-up (it has no reset) and print its counters as one JSON line.

Both are fixed texts; the number of ports and the flit width come in from the build command
(``-DPORTS= -DFLIT_WORDS=`` for the C++ main, ``-P soak_tb.P= -P soak_tb.FW=`` for Icarus).
"""

from __future__ import annotations

#: Verilator: the C++ main. The loop only toggles the clock, so the soak runs at the speed of
#: the Verilated model; it times that loop alone (``seconds``).
MAIN_CPP = r"""
#include "Vfred_soak.h"
#include "verilated.h"
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

// Verilator keeps ports of up to 64 bits in integers and wider ones in arrays of 32-bit words.
static uint32_t word(uint64_t v, int i) { return i < 2 ? (uint32_t)(v >> (32 * i)) : 0; }
template <std::size_t N> static uint32_t word(const VlWide<N>& v, int i) { return v[i]; }

template <typename T> static void hex_field(const char* name, const T& v) {
    printf("\"%s\": \"0x", name);
    for (int i = FLIT_WORDS - 1; i >= 0; i--) printf("%08x", word(v, i));
    printf("\", ");
}

static void cycle(Vfred_soak& top) { top.clk = 0; top.eval(); top.clk = 1; top.eval(); }

int main(int argc, char** argv) {
    if (argc != 2 && argc != 4) {
        fprintf(stderr, "usage: %s CYCLES [FAULT_PORT FAULT_INDEX]\n", argv[0]);
        return 2;
    }
    uint64_t n = strtoull(argv[1], 0, 0);
    VerilatedContext ctx;
    Vfred_soak top(&ctx);
    top.fault_en = argc == 4;
    top.fault_port = argc == 4 ? atoi(argv[2]) : 0;
    top.fault_index = argc == 4 ? strtoul(argv[3], 0, 0) : 0;
    auto t0 = std::chrono::steady_clock::now();
    for (uint64_t c = 0; c < n; c++) cycle(top);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("{\"clocked\": %llu, \"seconds\": %.6f, \"cycles\": %llu, \"in_flits\": %llu, "
           "\"errors\": %u, \"running\": %u, \"err_port\": %u, \"err_index\": %u, "
           "\"err_cycle\": %llu, ",
           (unsigned long long)n, s, (unsigned long long)top.cycles,
           (unsigned long long)top.in_flits, (unsigned)top.errors, (unsigned)top.running,
           (unsigned)top.err_port, (unsigned)top.err_index, (unsigned long long)top.err_cycle);
    hex_field("err_got", top.err_got);
    hex_field("err_exp", top.err_exp);
    printf("\"out_flits\": [");
    for (int q = 0; q < PORTS; q++)
        printf("%u%s", word(top.out_flits, q), q == PORTS - 1 ? "" : ", ");
    printf("]}\n");
    return 0;
}
"""

#: Icarus: the testbench (plusargs +cycles=N, +fault_port=Q +fault_index=K).
TB_V = r"""`timescale 1ns/1ps
module soak_tb #(parameter P = 1, parameter FW = 1);
  reg clk = 0;
  reg fault_en = 0; reg [7:0] fault_port = 0; reg [31:0] fault_index = 0;
  wire [63:0] cycles, in_flits, err_cycle; wire [31:0] errors, err_index; wire running;
  wire [7:0] err_port; wire [FW-1:0] err_got, err_exp; wire [32*P-1:0] out_flits;
  fred_soak s(.clk(clk), .fault_en(fault_en), .fault_port(fault_port),
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
    repeat (n) @(posedge clk);
    #1;
    $write("{\"clocked\": %0d, \"seconds\": 0, \"cycles\": %0d, ", n, cycles);
    $write("\"in_flits\": %0d, \"errors\": %0d, ", in_flits, errors);
    $write("\"running\": %0d, \"err_port\": %0d, ", running, err_port);
    $write("\"err_index\": %0d, \"err_cycle\": %0d, ", err_index, err_cycle);
    $write("\"err_got\": \"0x%h\", \"err_exp\": \"0x%h\", ", err_got, err_exp);
    $write("\"out_flits\": [");
    for (i = 0; i < P; i = i + 1) $write("%0d%s", out_flits[32*i +: 32], i == P-1 ? "" : ", ");
    $write("]}\n");
    $finish;
  end
endmodule
"""
