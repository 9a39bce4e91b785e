"""`fred export --chakra`: a workload's training iteration as Chakra execution traces."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from fredfab.model.chakra import write_trace
from fredfab.model.chakra.reader import is_trace
from fredfab.sim.cli import UserError
from fredfab.sim.cli.estimate import add_training_arguments, npu_from, overrides, workload_from
from fredfab.sim.cli.output import check_file
from fredfab.sim.engines.chakra_export import export_chakra


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--chakra",
        action="store_true",
        required=True,
        help="write Chakra execution traces (the format ASTRA-sim 2.x reads), with "
        "PREFIX.comm_groups.json (its --comm-group-configuration)",
    )
    p.add_argument("--fabric", default="fred-d", metavar="NAME|FILE", help="fabric (fred-d)")
    p.add_argument(
        "-o",
        "--output",
        metavar="PREFIX",
        help="files PREFIX.0.et ... (default build/chakra/WORKLOAD-FABRIC-STRATEGY)",
    )
    p.add_argument("--gzip", action="store_true", help="gzip the traces (PREFIX.R.et.gz)")
    add_training_arguments(p)


def run(args: argparse.Namespace) -> int:
    if is_trace(args.workload):
        raise UserError(f"--workload {args.workload} is a Chakra trace already")
    if args.output:
        if args.output.endswith(("/", os.sep)):  # a folder: PREFIX.r.et would sit beside it
            raise UserError(
                f"-o {args.output} names a folder: give a prefix for the files, such as "
                f"{Path(args.output) / 'job'}"
            )
        check_file(f"{args.output}.0.et", "trace file")
    job = export_chakra(
        workload_from(args),
        args.fabric,
        args.strategy,
        npu=npu_from(args),
        timing_card=args.timing_card,
        ignore_memory=args.ignore_memory,
        **{k: v for k, v in overrides(args).items() if v is not None},
    )
    prefix = Path(
        args.output or f"build/chakra/{job.workload}-{Path(args.fabric).stem}-{job.strategy}"
    )
    files = write_trace(prefix, job.ranks, job.comm_groups, compress=args.gzip)
    nodes = sum(len(r) for r in job.ranks)
    out = {
        "workload": job.workload,
        "strategy": job.strategy,
        "execution": job.execution,
        "prefix": str(prefix),
        "ranks": len(job.ranks),
        "nodes": nodes,
        "comm_groups": len(job.comm_groups),
        "files": [str(f) for f in files],
        "notes": list(job.notes),
    }
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(
        f"{job.workload}, {job.strategy}, {job.execution}: {len(job.ranks)} ranks, {nodes} nodes, "
        f"{len(job.comm_groups)} communicator groups"
    )
    traces = files[: len(job.ranks)]
    print(f"  {traces[0]} ... {traces[-1]}" if len(traces) > 1 else f"  {traces[0]}")
    if job.comm_groups:
        print(f"  {prefix}.comm_groups.json")
    print(f"  estimate it: fred estimate --workload {prefix} --fabric {args.fabric}")
    for n in job.notes:
        print(f"  note: {n}")
    return 0
