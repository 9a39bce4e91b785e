"""Render a plain-Verilog All-Reduce testbench for a generated switch from its manifest alone.

    python -m fredfab.sim.verify.example_tb.render build/verilog/<variant>.json -o tb.v

Everything here comes from the manifest (hw/manifest.py) and its ``contract`` key
(hw/contract.py): port names and widths, the flit and cfg payload layouts, the topology's
nodes and links, what each source code means and which codes each node kind may take,
the cfg word order. This file imports nothing from the generator or the models, on
purpose: it is the proof that an integrator needs nothing else (docs/switch-rtl.md,
"Integrating the switch").

The bench resets the switch, writes one configuration, an All-Reduce over every port, into
slot 1 through ``cfg``, selects slot 1, drives ``flits`` flits into every input and checks
that every output delivers the lane-wise sum of all inputs (wrapping, so integer element
types only) with the inputs' ``last`` bits. It prints ``RESULT flits=N errors=E`` and
``PASS`` or ``FAIL``. ``+bias=N`` adds N to the expected value of lane 0 of flit 0: a bench
that still passed with a wrong expectation would check nothing.

Routing from the manifest: nodes are taken in the order of the links (inputs before
outputs); a node with one input carrying data passes it on, a reducing node whose inputs 0
and 1 both carry data sends their sum; a node sends partial sums to its output 0 and
copies the full sum to every output. That reduces every port into one link and multicasts
the result back out, which the Clos (arch "clos") always allows; any other graph where it
would break a kind rule or miss an output raises ``RouteError``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

BENCH = "fred_allreduce_tb"


class RouteError(ValueError):
    """The greedy All-Reduce does not fit this switch's graph."""


def _topo_order(nodes: list[dict], links: list[list[int]], boundary: int) -> list[int]:
    """Node indices such that every link goes forward (Kahn's algorithm on the links)."""
    preds = {n["index"]: set() for n in nodes}
    for src, _, dst, _ in links:
        if src != boundary and dst != boundary:
            preds[dst].add(src)
    order, done = [], set()
    while len(order) < len(nodes):
        ready = [i for i in sorted(preds) if i not in done and preds[i] <= done]
        if not ready:
            raise RouteError("the topology's links form a cycle")
        order.extend(ready)
        done.update(ready)
    return order


def check_codes(contract: dict, node: dict, codes: list[int]) -> None:
    """Raise RouteError unless ``codes`` keeps to the contract's rules for ``node``."""
    sc, kind = contract["source_codes"], contract["kinds"][node["kind"]]
    reducing = kind["reducing"]
    top = node["n_in"] + (sc["sum_offset"] if reducing else 0)
    if any(not sc["none"] <= c <= top for c in codes):
        raise RouteError(f"{node['name']}: codes {codes} outside {sc['none']}..{top}")
    used = [c for c in codes if c != sc["none"]]
    if reducing:
        sum_code = node["n_in"] + sc["sum_offset"]
        operands = {sc["input_offset"] + k for k in sc["sum_operands"]}
        if sum_code in used and operands & set(used):
            raise RouteError(f"{node['name']}: sum and one of its operands, codes {codes}")
    if not kind["multicast"] and len(set(used)) != len(used):
        raise RouteError(f"{node['name']} ({node['kind']}) cannot multicast, codes {codes}")


def route_all_reduce(manifest: dict) -> list[list[int]]:
    """Source codes per node (node index order) for one All-Reduce over every port."""
    contract = manifest["contract"]
    sc, boundary = contract["source_codes"], contract["links"]["boundary"]
    topo = manifest["config"]["topology"]
    nodes = {n["index"]: n for n in topo["nodes"]}
    ports = topo["ports"]
    driver = {(d, dp): (s, sp) for s, sp, d, dp in topo["links"]}
    carries: dict[tuple[int, int], frozenset[int]] = {
        (boundary, p): frozenset([p]) for p in range(ports)
    }
    full = frozenset(range(ports))
    codes = {i: [sc["none"]] * n["n_out"] for i, n in nodes.items()}
    for i in _topo_order(topo["nodes"], topo["links"], boundary):
        node = nodes[i]
        kind = contract["kinds"][node["kind"]]
        ins = [carries.get(driver[(i, k)], frozenset()) for k in range(node["n_in"])]
        busy = [k for k in range(node["n_in"]) if ins[k]]
        if not busy:
            continue
        if len(busy) == 1:
            code, value = sc["input_offset"] + busy[0], ins[busy[0]]
        elif kind["reducing"] and busy == sorted(sc["sum_operands"]):
            code, value = node["n_in"] + sc["sum_offset"], ins[busy[0]] | ins[busy[1]]
        else:
            raise RouteError(f"{node['name']}: inputs {busy} carry data and cannot be combined")
        targets = range(node["n_out"]) if value == full and kind["multicast"] else [0]
        for q in targets:
            codes[i][q] = code
            carries[(i, q)] = value
        check_codes(contract, node, codes[i])
    short = [q for q in range(ports) if carries.get(driver[(boundary, q)]) != full]
    if short:
        raise RouteError(f"output ports {short} do not receive the sum of every input")
    return [codes[i] for i in sorted(nodes)]


def config_words(manifest: dict, codes: list[list[int]]) -> list[int]:
    """The slot's words: each code at its field of the manifest's ``config_fields`` table,
    word 0 the least significant (contract["cfg"])."""
    cfg = manifest["config"]
    if manifest["contract"]["cfg"]["word_order"] != "lsb_first":
        raise ValueError("this renderer knows the lsb_first word order only")
    value = 0
    for f in manifest["config_fields"]:
        code = codes[f["node"]][f["output"]]
        if code >> f["width"]:
            raise ValueError(f"code {code} does not fit the {f['width']}-bit field of {f['name']}")
        value |= code << f["lsb"]
    width = cfg["word_width"]
    return [(value >> (w * width)) & ((1 << width) - 1) for w in range(cfg["words_per_slot"])]


def _field(layout: dict, name: str, value: str) -> str:
    return f"(({value}) << {layout[name]['lsb']})"


def render(manifest: dict, flits: int = 6, packet: int = 3, slot: int = 1) -> str:
    """The bench's Verilog text (module ``fred_allreduce_tb``), see the module docstring."""
    if manifest["flit"]["dtype"].startswith(("fp", "bf")):
        raise ValueError("the bench checks wrapping sums: use an integer element type")
    cfg = manifest["config"]
    if not 0 < slot < cfg["slots"]:
        raise ValueError(f"slot must be in 1..{cfg['slots'] - 1}")
    words = config_words(manifest, route_all_reduce(manifest))
    P = cfg["topology"]["ports"]
    lanes, eb = manifest["flit"]["lanes"], manifest["flit"]["element_bits"]
    fw = manifest["flit"]["width"]
    fields = manifest["flit"]["fields"]
    dw = fields["data"]["width"]
    streams = manifest["streams"]
    cfgp = cfg["cfg_payload"]
    cw = sum(f["width"] for f in cfgp.values())
    L: list[str] = []
    w = L.append
    # The timescale also applies to the switch's file when this file comes first (the
    # generated Verilog has none).
    w("`timescale 1ns/1ps")
    w(f"module {BENCH};")
    w(f"  localparam P = {P}, NF = {flits}, PKT = {packet}, LANES = {lanes}, EB = {eb};")
    w(f"  localparam NW = {len(words)}, FW = {fw}, DW = {dw};")
    w("  reg clk = 0, rst = 1;")
    w("  always #5 clk = ~clk;")
    inputs = []
    for port in manifest["ports"]:
        kind = "reg" if port["direction"] == "input" else "wire"
        w(f"  {kind} [{port['width'] - 1}:0] {port['name']};")
        if port["direction"] == "input":
            inputs.append(port["name"])
    conns = ", ".join(f".{p['name']}({p['name']})" for p in manifest["ports"])
    w(f"  {manifest['top']} dut(.{manifest['clock']}(clk), .{manifest['reset']['name']}(rst),")
    w(f"    {conns});")
    driven = set()

    # Stimulus: a reproducible value per (port, flit, lane); the expectation is computed
    # here from the same values, by the bench, not by the generator's models.
    w("  function [DW-1:0] din(input integer p, input integer f);")
    w("    integer l;")
    w("    begin")
    w("      din = 0;")
    w("      for (l = 0; l < LANES; l = l + 1)")
    w("        din[l*EB +: EB] = (p + 1) * 37 + f * 101 + l * 13 + p * f * 7;")
    w("    end")
    w("  endfunction")
    w("  function lastf(input integer f);")
    w("    lastf = (f % PKT == PKT - 1) || f == NF - 1;")
    w("  endfunction")
    w("  integer bias = 0;")
    w("  function [FW-1:0] expected(input integer f);")
    w("    integer l, p;")
    w("    reg [EB-1:0] acc;")
    w("    reg [DW-1:0] d, x;")
    w("    begin")
    w("      d = 0;")
    w("      for (l = 0; l < LANES; l = l + 1) begin")
    w("        acc = (f == 0 && l == 0) ? bias : 0;")
    w("        for (p = 0; p < P; p = p + 1) begin")
    w("          x = din(p, f);")
    w("          acc = acc + x[l*EB +: EB];")
    w("        end")
    w("        d[l*EB +: EB] = acc;")
    w("      end")
    w(f"      expected = {_field(fields, 'data', 'd')} | {_field(fields, 'last', 'lastf(f)')};")
    w("    end")
    w("  endfunction")

    # cfg: one word per accepted transfer, then select the slot once.
    w(f"  function [{cw - 1}:0] cfg_word(input integer n);")
    w("    case (n)")
    for n, word in enumerate(words):
        value = " | ".join(
            [
                _field(cfgp, "data", f"{cw}'h{word:x}"),
                _field(cfgp, "addr", f"{cw}'d{n}"),
                _field(cfgp, "slot", f"{cw}'d{slot}"),
            ]
        )
        w(f"      {n}: cfg_word = {value};")
    w("      default: cfg_word = 0;")
    w("    endcase")
    w("  endfunction")
    c, s = streams["cfg"], streams["select"]
    w("  integer words = 0;")
    w("  reg selected = 0;")
    w("  always @(posedge clk)")
    w("    if (rst) begin words <= 0; selected <= 0; end")
    w("    else begin")
    w(f"      if ({c['valid']} && {c['ready']}) words <= words + 1;")
    w(f"      if ({s['valid']} && {s['ready']}) selected <= 1;")
    w("    end")
    w("  always_comb begin")
    w(f"    {c['valid']} = !rst && words < NW;")
    w(f"    {c['payload']} = cfg_word(words);")
    w(f"    {s['valid']} = !rst && words == NW && !selected;")
    w(f"    {s['payload']} = {slot};")
    w("  end")
    driven |= {c["valid"], c["payload"], s["valid"], s["payload"]}

    # Every input port sends NF flits once the slot is active; every output takes them.
    w("  integer errors = 0, total = 0;")
    for p in range(P):
        i, o = streams["i"][p], streams["o"][p]
        w(f"  integer sent{p} = 0, got{p} = 0;")
        w("  always @(posedge clk)")
        w(f"    if (rst) begin sent{p} <= 0; got{p} <= 0; end")
        w("    else begin")
        w(f"      if ({i['valid']} && {i['ready']}) sent{p} <= sent{p} + 1;")
        w(f"      if ({o['valid']} && {o['ready']}) begin")
        w(f"        got{p} <= got{p} + 1;")
        w("        total = total + 1;")
        w(f"        if (got{p} >= NF || {o['payload']} !== expected(got{p})) begin")
        w("          errors = errors + 1;")
        w(
            f'          $display("output {p} flit %0d: got %h, expected %h", got{p}, '
            f"{o['payload']}, expected(got{p}));"
        )
        w("        end")
        w("      end")
        w("    end")
        w("  always_comb begin")
        w(f"    {i['valid']} = selected && sent{p} < NF;")
        w(
            f"    {i['payload']} = {_field(fields, 'data', f'din({p}, sent{p})')} | "
            f"{_field(fields, 'last', f'lastf(sent{p})')};"
        )
        w(f"    {o['ready']} = !rst;")
        w("  end")
        driven |= {i["valid"], i["payload"], o["ready"]}
    missing = sorted(set(inputs) - driven)
    if missing:
        raise ValueError(f"the manifest lists inputs this bench does not drive: {missing}")

    done = " && ".join(f"got{p} >= NF" for p in range(P))
    w("  integer cycle;")
    w("  initial begin")
    w('    if (!$value$plusargs("bias=%d", bias)) bias = 0;')
    w("    repeat (4) @(posedge clk);")
    w("    #1 rst = 0;")
    w(f"    for (cycle = 0; cycle < {1000 + 20 * flits} && !({done}); cycle = cycle + 1)")
    w("      @(posedge clk);")
    w("    repeat (20) @(posedge clk);  // any extra flit would show up here")
    w("    #1;")
    w(f"    if (!({done})) begin")
    w('      $display("timeout: not every output received %0d flits", NF);')
    w("      errors = errors + 1;")
    w("    end")
    w('    $display("RESULT flits=%0d errors=%0d", total, errors);')
    w('    if (errors == 0) $display("PASS"); else $display("FAIL");')
    w("    $finish;")
    w("  end")
    w("endmodule")
    return "\n".join(L) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("manifest", type=Path, help="the switch's JSON manifest")
    ap.add_argument("-o", "--out", type=Path, help="write the bench here (default: stdout)")
    ap.add_argument("--flits", type=int, default=6, help="flits per input port")
    ap.add_argument("--packet", type=int, default=3, help="flits per packet")
    ap.add_argument("--slot", type=int, default=1, help="configuration slot to use")
    args = ap.parse_args(argv)
    try:
        text = render(json.loads(args.manifest.read_text()), args.flits, args.packet, args.slot)
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
