"""`fred estimate --workload PREFIX` for a Chakra trace: its options, run and report."""

from __future__ import annotations

import argparse
import dataclasses
import json

from fredfab.model.chakra import read_trace
from fredfab.model.chakra.reader import MAX_RANKS
from fredfab.model.system import load_fabric
from fredfab.model.system.astra_system import load_astra_system
from fredfab.model.training.config import NPU
from fredfab.sim.cli import UserError
from fredfab.sim.cli.arguments import ports_within
from fredfab.sim.cli.chakra_outputs import write_nodes_csv, write_timeline
from fredfab.sim.cli.collective import (
    NETWORK_MODELS,
    add_network_model_argument,
    add_system_argument,
    system_algorithm,
)
from fredfab.sim.cli.output import check_file
from fredfab.sim.cli.report import fmt_time
from fredfab.sim.engines.dag import simulate_trace
from fredfab.sim.engines.system import DEFAULT_CHUNKS
from fredfab.sim.engines.training import payload_fraction

#: Training options that describe a workload file's run; a trace already is one.
_TRAINING_ONLY = (
    "strategy",
    "execution",
    "microbatches",
    "samples_per_replica",
    "zero_stage",
    "placement",
    "recompute",
    "accumulation",
    "pipeline",
    "astra_clock_GHz",
    "hbm_GB",
)
_TRACE_ONLY = ("comm_groups", "npu_map", "timeline", "nodes_csv", "system")


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("Chakra traces (--workload PREFIX)")
    add_system_argument(g)
    add_network_model_argument(g)
    g.add_argument(
        "--comm-groups",
        metavar="JSON",
        help="communicator groups of pg_name, ASTRA-sim's --comm-group-configuration file "
        '({"ID": [ranks]}; default PREFIX.comm_groups.json when it exists)',
    )
    g.add_argument(
        "--npu-map",
        metavar="LIST",
        help="NPU of each rank in rank order, e.g. 0-3,8-11 (default: rank r on NPU r; "
        f"NPUs 0..{MAX_RANKS - 1})",
    )
    g.add_argument(
        "--timeline",
        metavar="FILE.json",
        help="write a Chrome trace-event timeline (Perfetto, chrome://tracing): one track "
        "per NPU and per busy link",
    )
    g.add_argument(
        "--nodes-csv",
        metavar="FILE.csv",
        help="write one row per node of every rank: start, end, kind, bytes",
    )


def refuse_trace_options(args: argparse.Namespace) -> None:
    given = [o for o in _TRACE_ONLY if getattr(args, o, None) is not None]
    if args.network_model != "cut-through":
        given.append("network_model")
    if given:
        opt = "--" + given[0].replace("_", "-")
        raise UserError(f"{opt} applies to a Chakra trace (--workload PREFIX) only")


def run(args: argparse.Namespace) -> int:
    given = [o for o in _TRAINING_ONLY if getattr(args, o, None) is not None]
    if given or args.ignore_memory:
        opt = "--" + (given[0].replace("_", "-") if given else "ignore-memory")
        raise UserError(f"{opt} does not apply to a Chakra trace: the trace is the run")
    if args.timeline:
        check_file(args.timeline, "timeline file", (".json",))
    if args.nodes_csv:
        check_file(args.nodes_csv, "node CSV file", (".csv",))
    trace = read_trace(args.workload, args.comm_groups)
    fabric = load_fabric(args.fabric, timing_card=args.timing_card)
    placement = None
    if args.npu_map:
        placement = ports_within(args.npu_map, fabric.num_npus, "--npu-map", "NPU")
    system = load_astra_system(args.system) if args.system else None
    npu = NPU()
    if system is not None and system.roofline is not None:
        # ASTRA-sim's Roofline: peak-perf and local-mem-bw, no efficiency factor.
        npu = NPU(peak_flops=system.roofline[0], efficiency=1.0, hbm_bandwidth=system.roofline[1])
    if args.efficiency is not None:
        npu = dataclasses.replace(npu, efficiency=args.efficiency)
    chunks = args.chunks or (system and system.chunks) or DEFAULT_CHUNKS
    why: set[str] = set()

    def algorithm(req):
        if system is None:
            return None
        alg, note = system_algorithm(system, fabric, req)
        if note:
            why.add(note)
        return alg

    res = simulate_trace(
        trace,
        fabric,
        placement=placement,
        chunks=chunks,
        npu=npu,
        # Packet headers are ours: ASTRA-sim's backends, reproduced as they run, have none.
        payload_fraction=payload_fraction(fabric, args.timing_card)
        if args.network_model == "cut-through"
        else 1.0,
        engine=NETWORK_MODELS[args.network_model],
        algorithm=algorithm,
    )
    notes = list(res.notes) + [f"system file: {w}" for w in sorted(why)]
    mapping = system.mapping() if system else []
    if args.timeline:
        write_timeline(res, fabric, args.timeline)
    if args.nodes_csv:
        write_nodes_csv(res, args.nodes_csv)
    if args.json:
        d = res.to_dict(fabric)
        d.update(
            network_model=args.network_model,
            chunks=chunks,
            notes=notes,
            system=[{"key": k, "here": v} for k, v in mapping],
        )
        print(json.dumps(d, indent=1))
        return 0
    t = res.time
    print(
        f"{trace.prefix} (Chakra, {trace.num_ranks} ranks, {trace.num_nodes} nodes, "
        f"{len(trace.programs)} distinct) on {res.fabric}, network model {args.network_model}"
    )
    if system is not None:
        print(f"  system file {system.source}:")
        for k, v in mapping:
            print(f"    {k}: {v}")
    print(f"  time per iteration: {fmt_time(t)}")
    print(f"  rank {res.reference} (busiest compute), of the iteration:")
    for k, v in sorted(res.breakdown.items(), key=lambda kv: -kv[1]):
        label = k if k in ("compute", "idle") else f"exposed {k}"
        print(f"    {label:<22}{fmt_time(v):>12}  {100 * v / t if t else 0:5.1f}%")
    algos = ", ".join(f"{a} x{n}" for a, n in sorted(res.algorithms.items()))
    if algos:
        print(f"  collectives: {algos}; at the payload rate {res.payload_fraction:.4f}")
    util = res.utilisation(fabric)
    top = sorted(range(len(util)), key=lambda lk: -util[lk])[:3]
    names = [n.name for n in fabric.nodes]
    for lk in top:
        if res.link_bytes[lk] > 0:
            print(
                f"  link {names[fabric.link_src[lk]]} -> {names[fabric.link_dst[lk]]}: "
                f"{res.link_bytes[lk] / 2**20:.4g} MiB, {100 * util[lk]:.1f}% utilised"
            )
    if res.reduced:
        total = sum(res.reduced.values())
        print(f"  in-network reduction: {total / 2**20:.4g} MiB over {len(res.reduced)} switches")
    for n in notes:
        print(f"  note: {n}")
    for what, path in (("timeline", args.timeline), ("node CSV", args.nodes_csv)):
        if path:
            print(f"  {what}: {path}")
    return 0


def compare_trace(args: argparse.Namespace, fabrics) -> int:
    """`fred compare --workload PREFIX`: the trace on each fabric, speedup over the first
    (no plot; training options refused as for estimate)."""
    given = [o for o in _TRAINING_ONLY if getattr(args, o, None) is not None]
    if given or args.ignore_memory:
        opt = "--" + (given[0].replace("_", "-") if given else "ignore-memory")
        raise UserError(f"{opt} does not apply to a Chakra trace: the trace is the run")
    trace = read_trace(args.workload)
    rows = []
    for spec in fabrics:
        fabric = load_fabric(spec, timing_card=args.timing_card)
        res = simulate_trace(
            trace,
            fabric,
            chunks=args.chunks or DEFAULT_CHUNKS,
            payload_fraction=payload_fraction(fabric, args.timing_card),
        )
        rows.append(res.to_dict(fabric))
    base = rows[0]["time_s"]
    for r in rows:
        r["speedup"] = base / r["time_s"] if r["time_s"] else None
        r.pop("links")
    if args.json:
        print(
            json.dumps(
                {"trace": trace.prefix, "baseline": rows[0]["fabric"], "fabrics": rows}, indent=1
            )
        )
        return 0
    print(f"{trace.prefix} (Chakra, {trace.num_ranks} ranks), speedup over {rows[0]['fabric']}")
    print(f"{'fabric':<12}{'time':>12}{'compute':>12}{'exposed':>12}{'idle':>12}{'speedup':>9}")
    for r in rows:
        br = r["breakdown_s"]
        print(
            f"{r['fabric']:<12}{fmt_time(r['time_s']):>12}{fmt_time(br['compute']):>12}"
            f"{fmt_time(r['exposed_comm_s']):>12}{fmt_time(br['idle']):>12}"
            f"{r['speedup']:>8.3f}x"
        )
    return 0
