"""`fred generate --fabric SPEC`: the Verilog and JSON manifest of a whole fabric of FRED
switches joined by pipelined links (hw/fabric.py, hw/fabric_manifest.py; docs/fabric-rtl.md),
for an integrator, without co-simulating it."""

from __future__ import annotations

import argparse
import json

from fredfab.sim.cli import UserError
from fredfab.sim.cli.fabric_spec import fabric_params_from
from fredfab.sim.cli.output import check_folder, write_generated_pair


def run_generate_fabric(args: argparse.Namespace) -> int:
    from fredfab.hw.fabric_manifest import generate

    if args.packet:
        raise UserError("--packet builds one switch; the fabric RTL is in circuit mode")
    params = fabric_params_from(args)
    check_folder(args.out)
    v_path, j_path, info, seconds = write_generated_pair(args.out, lambda d: generate(params, d))
    if args.json:
        print(json.dumps({"verilog": str(v_path), "manifest": str(j_path), "seconds": seconds}))
        return 0
    print(f"wrote {v_path} and {j_path} in {seconds:.2f} s")
    ports = sorted({sw["params"]["ports"] for sw in info["switches"]})
    kind = f"Fred_{params.switch_m}" if params.arch == "clos" else "crossbar"
    print(
        f"{info['fabric']['name']}: {len(info['switches'])} switches ({kind}, "
        f"{'/'.join(map(str, ports))} ports, {params.lanes} x {params.dtype} per flit), "
        f"{len(info['fabric']['boundary'])} boundary ports, {params.link_delay} register "
        f"slice(s) per link, latency up to {info['latency_cycles']} cycles, "
        f"{info['config']['words_per_slot']} configuration words per slot"
    )
    return 0
