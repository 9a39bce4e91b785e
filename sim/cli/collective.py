"""`fred collective`: time one collective on one or more wafer fabrics."""

from __future__ import annotations

import argparse
import json

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.system import OPS, CollectiveRequest, load_fabric, shipped_fabrics
from fredfab.model.system.astra_system import algorithm_for, load_astra_system
from fredfab.model.system.registry import algorithms, lookup
from fredfab.model.system.request import normalize_op
from fredfab.model.system.units import NS
from fredfab.sim.cli import UserError
from fredfab.sim.cli.algorithm_list import list_algorithms
from fredfab.sim.cli.arguments import (
    CHUNKS,
    PACKET_MAX_SIZE,
    RESOLUTION_NS,
    bounded_float,
    bounded_int,
    npu_group,
    plain_int,
    size,
    span,
    timing_card,
)
from fredfab.sim.cli.report import fmt_bytes, fmt_time, timing_lines
from fredfab.sim.engines.system import DEFAULT_CHUNKS, simulate

#: What the bandwidth columns mean (help, table footer and docs/system-model.md).
BANDWIDTHS = (
    "algbw = size / time (bytes each NPU contributes or receives per second); "
    "busbw = algbw x bus factor (NCCL's definition: All-Reduce 2(N-1)/N; Reduce-Scatter, "
    "All-Gather, All-to-All (N-1)/N; others 1), the per-NPU link bandwidth a ring would need"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--fabric",
        action="append",
        metavar="NAME|FILE",
        help=f"fabric: {', '.join(shipped_fabrics())}, mesh, all, a TOML file or an "
        "ASTRA-sim network file (.yml); repeat to compare (default: all shipped)",
    )
    p.add_argument(
        "--op", default=CollectiveKind.ALL_REDUCE, help=f"one of {', '.join(OPS)} (or multicast)"
    )
    p.add_argument(
        "--group", default="all", help="NPU ids, e.g. 0-19 or 0,4,8 (p2p: SRC,DST; default all)"
    )
    p.add_argument(
        "--size",
        type=size,
        help="bytes per NPU, e.g. 64MiB, 1GB, 4096 (whole bytes, more than 0, at most 1TiB; "
        "required unless --list-algorithms)",
    )
    p.add_argument("--root", type=plain_int, help="root NPU of reduce / broadcast (default: first)")
    p.add_argument(
        "--chunks",
        type=bounded_int(CHUNKS),
        help=f"chunks ({span(CHUNKS)}; default: the --system file's preferred-dataset-splits, "
        f"else {DEFAULT_CHUNKS})",
    )
    add_system_argument(p)
    p.add_argument(
        "--sharing",
        choices=("maxmin", "proportional"),
        help="how the flow engine shares a link among flows (default maxmin)",
    )
    p.add_argument(
        "--engine",
        choices=("flow", "packet"),
        default="flow",
        help="flow-level simulator, or the brute-force packet model (--size at most 16MiB)",
    )
    add_network_model_argument(p)
    p.add_argument(
        "--resolution-ns",
        type=bounded_float(RESOLUTION_NS),
        help=f"the flow engine's event time grid in ns ({span(RESOLUTION_NS)}; default 0 = "
        "exact; speeds up big desynchronised runs)",
    )
    p.add_argument(
        "--timing-card",
        type=timing_card,
        metavar="JSON",
        help="measured switch timing card (default: each fabric's own, the built-in card "
        "unless its file names one)",
    )
    p.add_argument(
        "--on-conflict",
        choices=("fallback", "error"),
        default="fallback",
        help="unroutable in-switch configurations: fall back (reported) or fail",
    )
    add_algorithm_argument(p)
    p.add_argument(
        "--list-algorithms",
        action="store_true",
        help="list every algorithm (name, ops, summary) and the fabrics where it applies to "
        "--op over --group, then stop",
    )
    out = p.add_argument_group("output", BANDWIDTHS)
    out.add_argument(
        "--json",
        action="store_true",
        help="machine-readable output: per fabric the algorithm used, its time, bound, algbw, "
        "busbw and every candidate considered with its time alone",
    )


#: --network-model: the engine each model runs on (fredfab.sim.engines.plan_run.ENGINES).
NETWORK_MODELS = {
    "cut-through": "flow",
    "congestion-unaware": "congestion-unaware",
    "congestion-aware": "congestion-aware",
}


def add_network_model_argument(p: argparse.ArgumentParser) -> None:
    """``--network-model``: ours (cut-through, max-min sharing) or ASTRA-sim's analytical
    backends (shared with `fred estimate` on Chakra traces)."""
    p.add_argument(
        "--network-model",
        choices=tuple(NETWORK_MODELS),
        default="cut-through",
        help="cut-through: our flow-level simulator, links shared max-min (default); "
        "congestion-unaware: ASTRA-sim's backend that ignores link sharing (size / bandwidth "
        "+ hops x latency per message); congestion-aware: ASTRA-sim's store-and-forward "
        "backend, one message per link at a time in arrival order",
    )


def add_system_argument(p: argparse.ArgumentParser) -> None:
    """``--system FILE``: an ASTRA-sim system-layer file (shared with `fred estimate`)."""
    p.add_argument(
        "--system",
        metavar="JSON",
        help="ASTRA-sim system file: its per-dimension implementations choose the algorithm on "
        "ASTRA-sim topologies, preferred-dataset-splits the chunks; every other key is listed "
        "as not modelled",
    )


def system_algorithm(system, fab, req) -> tuple[str | None, str]:
    """The algorithm ``system`` configures for ``req`` on ``fab`` (None: ours chooses),
    and why not when it configures one that cannot run here."""
    from fredfab.model.system.fabric import DIMS

    alg, note = algorithm_for(system, req.op, len(fab.dims.dims) if fab.routing == DIMS else None)
    if alg is not None:
        a = lookup(alg)
        if not (req.op in a.ops and len(req.group) > 1 and a.applies(fab, req)):
            return None, f"{alg} does not apply to this group; the fastest algorithm runs"
    return alg, note


def add_algorithm_argument(p: argparse.ArgumentParser) -> None:
    """``--algorithm NAME``, naming the registered algorithms (shared with `fred phases`)."""
    names = ", ".join(a.name for a in algorithms())
    p.add_argument(
        "--algorithm",
        metavar="NAME",
        help="run this algorithm instead of the fastest candidate (each candidate is simulated "
        "alone and the fastest runs by default); it must apply to the group on every fabric "
        f"asked: {names}",
    )


def fabrics_from(args: argparse.Namespace):
    names = args.fabric or ["all"]
    out = []
    for n in names:
        if n == "all":
            out += [load_fabric(s, timing_card=args.timing_card) for s in shipped_fabrics()]
        else:
            out.append(load_fabric(n, timing_card=args.timing_card))
    return out


def run(args: argparse.Namespace) -> int:
    if args.list_algorithms:
        return list_algorithms(fabrics_from(args), args.op, args.group, as_json=args.json)
    size = args.size
    if size is None:
        raise UserError("give --size (bytes per NPU), or --list-algorithms")
    if size == 0:
        # Zero bytes take no time: no bandwidth to report.
        raise UserError("--size 0: a collective needs at least 1 byte per NPU")
    if args.engine == "packet" and size > PACKET_MAX_SIZE:
        raise UserError(
            f"--engine packet handles at most {fmt_bytes(PACKET_MAX_SIZE)} per NPU; "
            "use the flow engine for larger sizes"
        )
    engine = args.engine
    if args.network_model != "cut-through":
        if args.engine != "flow":
            raise UserError(f"--network-model {args.network_model} replaces --engine {engine}")
        engine = NETWORK_MODELS[args.network_model]
    if engine != "flow":
        # Link sharing and the event grid are the flow engine's; the others would ignore them.
        by = "--engine packet" if args.engine == "packet" else "--network-model"
        if args.sharing is not None:
            raise UserError(f"--sharing is the flow engine's: not with {by}")
        if args.resolution_ns:
            raise UserError(f"--resolution-ns is the flow engine's: not with {by}")
    if args.algorithm is not None:
        alg = lookup(args.algorithm)
        if normalize_op(args.op) not in alg.ops:
            raise UserError(
                f"--algorithm {alg.name} runs {', '.join(sorted(alg.ops))}, not {args.op}"
            )
    system = load_astra_system(args.system) if args.system else None
    chunks = args.chunks or (system and system.chunks) or DEFAULT_CHUNKS
    rows = []
    for fab in fabrics_from(args):
        group = npu_group(args.group, fab.num_npus)
        if len(set(group)) < len(group):
            raise UserError(f"--group {args.group}: names an NPU twice")
        if len(group) < 2:
            # One NPU has nobody to exchange with: no time, no bandwidth to report.
            raise UserError(f"--group {args.group}: a collective needs at least 2 NPUs")
        req = CollectiveRequest(args.op, group, size, root=args.root)
        algorithm, why = args.algorithm, ""
        if system is not None and algorithm is None:
            algorithm, why = system_algorithm(system, fab, req)
        res = simulate(
            fab,
            [req],
            chunks=chunks,
            sharing=args.sharing or "maxmin",
            on_conflict=args.on_conflict,
            engine=engine,
            resolution=(args.resolution_ns or 0.0) * NS,
            algorithm=algorithm,
        )
        r = res.requests[0]
        grid = _grid_note(args.resolution_ns, r.time)
        rows.append(
            {
                "fabric": fab.name,
                **r.to_dict(),
                "fallbacks": list(res.fallbacks),
                "notes": list(res.notes)
                + ([f"system file: {why}"] if why else [])
                + ([grid] if grid else []),
                "chunks": chunks,
                "switch_timing": fab.timing.to_dict() if fab.has_fred_switches else None,
            }
        )
    mapping = system.mapping() if system else []
    if args.json:
        for r in rows:
            r["system"] = [{"key": k, "here": v} for k, v in mapping]
        print(json.dumps(rows, indent=1, allow_nan=False))
        return 0
    if system is not None:
        print(f"system file {system.source}:")
        for k, v in mapping:
            print(f"  {k}: {v}")
    sizes = {r["group_size"] for r in rows}  # the default group differs between fabrics
    over = (
        f"{sizes.pop()} NPUs"
        if len(sizes) == 1
        else ", ".join(f"{r['group_size']} NPUs on {r['fabric']}" for r in rows)
    )
    print(f"{rows[0]['op']} of {fmt_bytes(size)} over {over}")
    w = max(10, *(len(r["fabric"]) for r in rows))
    head = (
        f"{'fabric':<{w}} {'algorithm':<28} {'time':>11} {'bound':>11} "
        f"{'algbw GB/s':>11} {'busbw GB/s':>11}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        bound = "-" if r["bound_s"] is None else fmt_time(r["bound_s"])
        print(
            f"{r['fabric']:<{w}} {r['algorithm']:<28} {fmt_time(r['time_s']):>11} {bound:>11} "
            f"{r['algbw_GBps']:>11.1f} {r['busbw_GBps']:>11.1f}"
        )
        for fb in r["fallbacks"]:
            print(f"  fallback: {fb}")
        for nt in r["notes"]:
            print(f"  note: {nt}")
    factors = {r["bus_factor"] for r in rows}  # one per group size
    factor = f"bus factor {factors.pop():.4g}; " if len(factors) == 1 else ""
    print(f"{factor}{BANDWIDTHS}")
    print("bound = the algorithm's most loaded link at full bandwidth (no latency)")
    for line in timing_lines({r["fabric"]: r["switch_timing"] for r in rows}):
        print(line)
    return 0


#: Grid steps below which a result is called coarse: each event on the critical path may be
#: rounded up by almost one step, so a time of a few steps says more about the grid than
#: about the collective.
COARSE_STEPS = 10


def _grid_note(resolution_ns: float | None, time_s: float) -> str:
    """A note on a time measured on --resolution-ns's grid ("" when exact), saying when the
    grid is too coarse for it (a 1 MiB All-Reduce of 404.5 ns took 3 ms on a 1 ms grid)."""
    if not resolution_ns:
        return ""
    steps = time_s / (resolution_ns * NS)
    note = f"--resolution-ns {resolution_ns:.15g}: the time is {steps:.4g} steps of the event grid"
    if steps < COARSE_STEPS:
        note += "; the grid is coarse for it: rerun finer, or with 0 (exact)"
    return note
