"""`fred estimate`: one training iteration of a workload on one fabric, with its breakdown."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace

from fredfab.model.chakra.reader import is_trace
from fredfab.model.system.switch_timing import describe_timing
from fredfab.model.system.units import GB, GHZ
from fredfab.model.training import Workload, load_workload, shipped_workloads
from fredfab.model.training.astra_workload import DEFAULT_CLOCK_HZ
from fredfab.model.training.config import EXECUTIONS, NPU, PIPELINES, RECOMPUTE
from fredfab.model.training.npu_files import load_npu, shipped_npus
from fredfab.sim.cli import chakra_estimate
from fredfab.sim.cli.arguments import (
    ACCUMULATION,
    ASTRA_CLOCK_GHZ,
    CHUNKS,
    EFFICIENCY,
    HBM_GB,
    MICROBATCHES,
    SAMPLES_PER_REPLICA,
    bounded_float,
    bounded_int,
    span,
    timing_card,
)
from fredfab.sim.cli.report import EXPOSED_LABELS, LABELS, fmt_time
from fredfab.sim.engines.training import estimate


def add_training_arguments(p: argparse.ArgumentParser, strategy: bool = True) -> None:
    """Options shared by estimate, compare and sweep."""
    p.add_argument(
        "--workload",
        required=True,
        metavar="NAME|FILE",
        help=f"{', '.join(shipped_workloads())}, a workload TOML file, an ASTRA-sim text "
        "workload (.txt), or (estimate) a Chakra trace PREFIX: PREFIX.0.et ... PREFIX.(N-1).et, "
        "optionally gzipped",
    )
    p.add_argument(
        "--astra-clock-GHz",
        type=bounded_float(ASTRA_CLOCK_GHZ),
        metavar="GHZ",
        help=f"clock of an ASTRA-sim workload's compute cycles ({span(ASTRA_CLOCK_GHZ)}; "
        f"default {DEFAULT_CLOCK_HZ / GHZ:g}: ASTRA-sim 1.0 counts one cycle per ns)",
    )
    if strategy:
        p.add_argument("--strategy", help="e.g. MP2-DP5-PP2 (default: the workload's)")
    p.add_argument("--execution", choices=EXECUTIONS, help="override the workload's execution")
    p.add_argument(
        "--microbatches",
        type=bounded_int(MICROBATCHES),
        help=f"microbatches per iteration ({span(MICROBATCHES)})",
    )
    p.add_argument(
        "--samples-per-replica",
        type=bounded_int(SAMPLES_PER_REPLICA),
        help=f"samples per DP replica ({span(SAMPLES_PER_REPLICA)}; minibatch = DP x this)",
    )
    p.add_argument("--zero-stage", type=int, choices=(0, 1, 2), help="ZeRO stage on DP")
    p.add_argument("--placement", help="dimension order innermost first (default mp-pp-dp)")
    p.add_argument("--recompute", choices=RECOMPUTE, help="activation recomputation policy")
    p.add_argument(
        "--accumulation",
        type=bounded_int(ACCUMULATION),
        help=f"weight-streaming accumulation passes ({span(ACCUMULATION)}; default: as few as fit)",
    )
    p.add_argument("--pipeline", choices=PIPELINES, help="pipeline schedule")
    p.add_argument(
        "--chunks",
        type=bounded_int(CHUNKS),
        help=f"chunks per collective in the network simulator ({span(CHUNKS)})",
    )
    p.add_argument(
        "--npu",
        metavar="NAME|FILE",
        help=f"the NPU: {', '.join(shipped_npus())} or an NPU TOML file (peak FLOP/s, HBM "
        "bandwidth, its sustained share and capacity, kernel efficiency, GEMM tiling; default "
        "wafer, the paper's NPU)",
    )
    p.add_argument(
        "--efficiency",
        type=bounded_float(EFFICIENCY),
        help=f"the NPU's kernel efficiency, share of peak a full GEMM tile sustains "
        f"({span(EFFICIENCY)}; "
        f"default the NPU's: {NPU().efficiency:g} for wafer)",
    )
    p.add_argument(
        "--hbm-GB",
        type=bounded_float(HBM_GB),
        help=f"NPU HBM capacity in GB ({span(HBM_GB)}; default the NPU's: "
        f"{NPU().hbm_bytes / GB:g} for wafer)",
    )
    p.add_argument(
        "--timing-card",
        type=timing_card,
        metavar="JSON",
        help="measured switch timing card for FRED fabrics (default: each fabric's own, "
        "the built-in card unless its file names one)",
    )
    p.add_argument(
        "--ignore-memory",
        action="store_true",
        help="estimate (export: write) strategies that exceed HBM anyway, flagged as such",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")


def workload_from(args: argparse.Namespace) -> Workload:
    """The --workload, with --astra-clock-GHz applied to an ASTRA-sim text workload."""
    clock = None if args.astra_clock_GHz is None else args.astra_clock_GHz * GHZ
    return load_workload(args.workload, astra_clock_hz=clock)


def overrides(args: argparse.Namespace) -> dict:
    return {
        "execution": args.execution,
        "microbatches": args.microbatches,
        "samples_per_replica": args.samples_per_replica,
        "zero_stage": args.zero_stage,
        "placement": args.placement,
        "recompute": args.recompute,
        "accumulation": args.accumulation,
        "pipeline": args.pipeline,
        "chunks": args.chunks,
    }


def npu_from(args: argparse.Namespace) -> NPU:
    """--npu (default the wafer NPU) with --efficiency and --hbm-GB applied."""
    base = load_npu(args.npu) if args.npu else NPU()
    kw = {}
    if args.efficiency is not None:
        kw["efficiency"] = args.efficiency
    if args.hbm_GB is not None:
        kw["hbm_bytes"] = args.hbm_GB * GB
    return replace(base, **kw)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fabric", default="fred-d", metavar="NAME|FILE", help="fabric (fred-d)")
    add_training_arguments(p)
    chakra_estimate.add_arguments(p)


def run(args: argparse.Namespace) -> int:
    if is_trace(args.workload):
        return chakra_estimate.run(args)
    chakra_estimate.refuse_trace_options(args)
    e = estimate(
        workload_from(args),
        args.fabric,
        args.strategy,
        npu=npu_from(args),
        timing_card=args.timing_card,
        ignore_memory=args.ignore_memory,
        **overrides(args),
    )
    if args.json:
        print(json.dumps(e.to_dict(), indent=1))
        return 0
    print(f"{e.workload} on {e.fabric}, {e.strategy}, {e.execution}")
    s = e.settings
    print(
        f"  minibatch {e.minibatch} ({s['samples_per_replica']} per replica), "
        f"{s['microbatches']} microbatch(es), ZeRO-{s['zero_stage']}, placement "
        f"{s['placement']}, {s['pipeline']}, recompute {s['recompute']}, "
        f"accumulation {s['accumulation']}"
    )
    print(f"  memory: {e.memory.describe()}")
    if e.switch_timing:
        print(f"  switch timing card: {describe_timing(e.switch_timing)}")
    if not e.ok:  # the only status but "ok" is "does-not-fit"
        print("  does not fit in HBM: not estimated (--ignore-memory estimates it anyway)")
        return 0
    if not e.fits:
        print("  EXCEEDS HBM CAPACITY: estimated anyway (--ignore-memory); it cannot run as is")
    print(f"  time per iteration: {fmt_time(e.time)} ({e.throughput:.4g} samples/s)")
    print("  critical path:")
    for c, label in LABELS.items():
        v = e.breakdown[c]
        print(f"    {label:<8}{fmt_time(v):>12}  {100 * v / e.time:5.1f}%")
    ex = ", ".join(f"{EXPOSED_LABELS[k]} {fmt_time(v)}" for k, v in e.exposed.items())
    print(
        f"  exposed communication {fmt_time(e.exposed_comm)} ({ex}); bubble "
        f"{fmt_time(e.breakdown['bubble'])} apart"
    )
    print(f"  busiest NPU computes {fmt_time(e.compute_busy)} of it")
    for n in e.notes:
        print(f"  note: {n}")
    return 0
