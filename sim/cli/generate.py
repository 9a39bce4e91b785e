"""`fred generate`: write a switch's Verilog and its JSON manifest."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

NAME = "generate"
HELP = "generate the Verilog of a FRED switch and its JSON manifest"


def add_params_arguments(p: argparse.ArgumentParser) -> None:
    """Generator parameters, shared by every command that builds a switch."""
    p.add_argument("--ports", "-P", type=int, required=True, help="switch ports P (>= 2)")
    p.add_argument(
        "--arch",
        choices=("clos", "xbar"),
        default="clos",
        help="clos: the paper's Fred_m(P) (default); xbar: crossbar + reduction tree",
    )
    p.add_argument("--m", type=int, default=3, help="Clos middle subnetworks m (>= 2; default 3)")
    p.add_argument("--lanes", type=int, default=4, help="elements per flit (default 4)")
    p.add_argument(
        "--dtype",
        default="bf16",
        help="element type: int8 int16 int32 fp16 bf16 fp32 (default bf16)",
    )
    p.add_argument(
        "--regs-per-stage", type=int, default=1, help="register slices per stage (default 1)"
    )
    p.add_argument("--slots", type=int, default=4, help="configuration slots K (>= 4)")
    p.add_argument("--word-width", type=int, default=32, help="configuration word bits (32)")


def params_from(args: argparse.Namespace):
    from fredfab.hw.params import SwitchParams

    return SwitchParams(
        ports=args.ports,
        m=args.m,
        lanes=args.lanes,
        dtype=args.dtype,
        regs_per_stage=args.regs_per_stage,
        slots=args.slots,
        word_width=args.word_width,
        arch=args.arch,
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_params_arguments(p)
    p.add_argument("-o", "--out", type=Path, default=Path("build/verilog"), help="output folder")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    from fredfab.hw.manifest import generate

    params = params_from(args)
    t0 = time.perf_counter()
    v_path, j_path = generate(params, args.out)
    seconds = time.perf_counter() - t0
    info = json.loads(j_path.read_text())
    if args.json:
        print(json.dumps({"verilog": str(v_path), "manifest": str(j_path), "seconds": seconds}))
    else:
        print(f"wrote {v_path} and {j_path} in {seconds:.2f} s")
        c = info["config"]["topology"]["counts"]
        title = (
            f"Fred_{params.m}({params.ports})" if params.arch == "clos" else f"xbar({params.ports})"
        )
        print(
            f"{title}: {info['stages']} stages, {c['uswitches']} uSwitches "
            f"({c['adders']} x {params.lanes} {params.dtype} adders), latency "
            f"{info['latency_cycles']} cycles, {info['config']['config_bits']} configuration bits "
            f"= {info['config']['words_per_slot']} words per slot"
        )
    return 0
