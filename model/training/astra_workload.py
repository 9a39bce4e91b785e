"""ASTRA-sim 1.0 text workloads, read into a Workload the training model runs.

The format (ASTRA-sim, github.com/astra-sim/astra-sim: inputs/workload/ASTRA-sim-1.0/README.md
and the example files beside it, e.g. DLRM_HybridParallel.txt, microAllReduce.txt; the
parser is Workload::initialize_workload in astra-sim/workload/Workload.cc of the ASTRA-sim-1.0
branch). Communication sizes are in bytes, compute times in cycles::

    HYBRID_TRANSFORMER model_parallel_NPU_group: 4     parallelism type [, fields]
    2                                                  number of layers
    attn -1 100000 ALLREDUCE 1048576 100000 ALLREDUCE 1048576 100000 ALLREDUCE 4194304 10
    mlp  -1 200000 NONE 0 200000 ALLREDUCE 1048576 200000 ALLREDUCE 8388608 10

Each layer line: name, a reserved integer, then forward compute time, communication type and
size; input-gradient compute time, type and size; weight-gradient compute time, type and size;
and the update delay after a collective. HYBRID_CUSTOMIZED files end each layer line with that
layer's own type (DATA, MODEL, HYBRID_DATA_MODEL or HYBRID_MODEL_DATA).

How it maps onto the training model (docs/training-model.md, "ASTRA-sim text workloads"):

* Parallelism: the forward and input-gradient collectives run over the model-parallel (MP)
  group, the weight-gradient one over the data-parallel (DP) group, as ASTRA-sim's
  decode_involved_dimensions assigns them. DATA has no MP group (its forward and
  input-gradient collectives involve no dimension, so they are ignored, as ASTRA-sim does);
  MODEL has no DP collective. The MP group size is ``model_parallel_NPU_group:``; ASTRA-sim
  takes it from the network's dimensions for MODEL and the HYBRID_DATA_MODEL /
  HYBRID_MODEL_DATA types, which a text file does not carry, so those files must state it.
  Which NPUs form the groups is our placement (``--placement``), not ASTRA-sim's dimension.
* The file describes one reference run: MP = its group, one iteration of
  ``REFERENCE_SAMPLES`` samples per DP replica, no pipeline. Per-sample quantities are the
  file's divided by that; MP-split layers' compute is the file's times the group size (the
  training model splits it again by the MP degree a strategy uses). With the default NPU and
  the reference strategy each layer computes exactly the file's time.
* Compute: cycles / clock (``DEFAULT_CLOCK_HZ`` unless given) x the default NPU's sustained
  rate (peak x efficiency) = FLOPs. Backward = input-gradient + weight-gradient cycles. The
  update delay is checked but not added: the training model's own optimizer step (Adam's HBM
  traffic per parameter) takes its place.
* Weights: known only through the weight-gradient collective: parameters = its size / 2 (FP16
  gradients) x the MP group for split layers. The collective's type is dropped: DP
  communication follows ``--zero-stage`` (All-Reduce, or Reduce-Scatter + All-Gather).
* Not in the format, so zero: activation sizes (no pipeline transfers or activation memory),
  input bytes loaded per sample, HBM traffic besides the weights. Activation checkpoints of
  HYBRID_TRANSFORMER_FWD_IN_BCKWD are ignored (``--recompute`` decides recomputation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.errors import InputError
from fredfab.model.system.units import GHZ
from fredfab.model.training.config import NPU, TrainingConfig
from fredfab.model.training.workload import (
    FP16,
    MAX_LAYERS,
    Layer,
    MPComm,
    Workload,
    WorkloadError,
)

#: The format a Workload read here records in ``shape["format"]``.
FORMAT = "astra-sim-1.0-text"
#: ASTRA-sim 1.0 counts time in ticks of CLOCK_PERIOD = 1 ns (astra-sim/system/Common.hh:
#: ``#define CLOCK_PERIOD 1``, ``FREQ (1000.0 / CLOCK_PERIOD)`` ticks per us): 1 GHz.
DEFAULT_CLOCK_HZ = 1 * GHZ
#: Samples per DP replica the file's times and sizes cover: the training default
#: (TrainingConfig.samples_per_replica, paper §7.4), so a default estimate
#: runs the file's own batch.
REFERENCE_SAMPLES = TrainingConfig().samples_per_replica

#: The file's communication types; NONE (or size 0) is no collective.
COMM_TYPES: dict[str, CollectiveKind | None] = {
    "ALLREDUCE": CollectiveKind.ALL_REDUCE,
    "ALLGATHER": CollectiveKind.ALL_GATHER,
    "REDUCESCATTER": CollectiveKind.REDUCE_SCATTER,
    "ALLTOALL": CollectiveKind.ALL_TO_ALL,
    "NONE": None,
}


@dataclass(frozen=True)
class Policy:
    """What a parallelism type does with a layer's three collectives."""

    mp: bool  # forward and input-gradient collectives over the MP group; compute split
    dp: bool  # weight-gradient collective over the DP group


#: Layer-level parallelism types (also the per-layer field of HYBRID_CUSTOMIZED).
LAYER_POLICIES = {
    "DATA": Policy(mp=False, dp=True),
    "MODEL": Policy(mp=True, dp=False),
    "HYBRID_DATA_MODEL": Policy(mp=True, dp=True),
    "HYBRID_MODEL_DATA": Policy(mp=True, dp=True),
}
#: First-line parallelism types read here (None: each layer line names its own).
POLICIES: dict[str, Policy | None] = {
    **LAYER_POLICIES,
    "HYBRID_TRANSFORMER": Policy(mp=True, dp=True),
    "HYBRID_TRANSFORMER_FWD_IN_BCKWD": Policy(mp=True, dp=True),
    "HYBRID_CUSTOMIZED": None,
}
#: Types ASTRA-sim 1.0 knows that have no meaning here (DLRM's embedding All-to-All spans
#: every NPU whatever the groups; the others are not training loops).
UNSUPPORTED = ("HYBRID_DLRM", "HYBRID_DLRM_ENHANCED", "MICRO", "DISTRIBUTED_INFERENCE")
#: First-line fields, each followed by a count (checkpoints: the count, then that many layers).
GROUP_FIELD = "model_parallel_NPU_group:"
LIST_FIELDS = ("checkpoints:", "checkpoint_initiates:")

_LAYER_FIELDS = (
    "name",
    "reserved",
    "forward compute time",
    "forward comm type",
    "forward comm size",
    "input-gradient compute time",
    "input-gradient comm type",
    "input-gradient comm size",
    "weight-gradient compute time",
    "weight-gradient comm type",
    "weight-gradient comm size",
    "update time",
)


def looks_like_astra(text: str) -> bool:
    """True if the first word of ``text`` is an ASTRA-sim parallelism type."""
    words = text.split(maxsplit=1)
    return bool(words) and (words[0] in POLICIES or words[0] in UNSUPPORTED)


def astra_workload_from_text(
    text: str, source: str = "<text>", clock_hz: float | None = None
) -> Workload:
    """The workload in ``text`` (from the file ``source``); compute cycles at ``clock_hz``
    (default DEFAULT_CLOCK_HZ). Errors name the line and the field."""
    clock = DEFAULT_CLOCK_HZ if clock_hz is None else clock_hz
    if not (isinstance(clock, int | float) and math.isfinite(clock) and clock > 0):
        raise WorkloadError(f"{source}: the ASTRA-sim clock must be a number > 0 Hz, got {clock}")
    lines = [(n, line.split()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise WorkloadError(f"{source}: empty; an ASTRA-sim workload starts with its parallelism")
    n1, head = lines[0]
    kind, group = _head(head, f"{source}:{n1}")
    if len(lines) < 2:
        raise WorkloadError(f"{source}: no layer count after the parallelism line")
    n2, count = lines[1]
    where = f"{source}:{n2}"
    if len(count) != 1:
        raise WorkloadError(f"{where}: the second line is the layer count alone, got {count}")
    layers_declared = _int(count[0], where, "layer count")
    if not 1 <= layers_declared <= MAX_LAYERS:
        raise WorkloadError(f"{where}: layer count {layers_declared} is not in 1..{MAX_LAYERS}")
    rows = lines[2:]
    if len(rows) != layers_declared:
        raise WorkloadError(
            f"{source}: declares {layers_declared} layer(s) on line {n2} but has {len(rows)}"
        )
    policies = [_row_policy(r, f"{source}:{n}", kind) for n, r in rows]
    need_group = any(pol.mp for pol in policies)
    if need_group and group is None:
        raise WorkloadError(
            f"{source}:{n1}: {kind} needs '{GROUP_FIELD} N' on the first line (the model-parallel "
            "group: ASTRA-sim takes it from the network, which a text workload does not carry)"
        )
    mp_group = group if need_group else 1
    rate = NPU().peak_flops * NPU().efficiency
    flops_per_cycle = rate / clock / REFERENCE_SAMPLES
    layers = [
        _layer(r, f"{source}:{n}", pol, mp_group, flops_per_cycle)
        for (n, r), pol in zip(rows, policies, strict=True)
    ]
    shape = {
        "format": FORMAT,
        "parallelism": kind,
        "model_parallel_NPU_group": mp_group,
        "clock_GHz": clock / GHZ,
        "reference_samples_per_replica": REFERENCE_SAMPLES,
    }
    return Workload(
        name=Path(source).stem,
        description=(
            f"ASTRA-sim text workload ({kind}, MP group {mp_group}, compute cycles at "
            f"{clock / GHZ:g} GHz, one iteration of {REFERENCE_SAMPLES} samples per replica)"
        ),
        layers=tuple(layers),
        input_bytes=0.0,
        mp_divides=mp_group,
        shape=shape,
        source=source,
    )


def implied_strategy(wl: Workload, npus: int) -> str | None:
    """The strategy an ASTRA-sim workload describes on ``npus`` NPUs: its MP group, DP over
    the rest, no pipeline. None for other workloads (their [training] table says)."""
    if wl.shape.get("format") != FORMAT:
        return None
    mp = int(wl.shape["model_parallel_NPU_group"])
    if npus % mp:
        raise InputError(
            f"{wl.source}: its model-parallel group of {mp} NPUs does not divide the fabric's "
            f"{npus} NPUs; give a strategy (--strategy MPa-DPb-PPc)"
        )
    return f"MP{mp}-DP{npus // mp}-PP1"


def _head(tokens: list[str], where: str) -> tuple[str, int | None]:
    kind = tokens[0]
    if kind in UNSUPPORTED:
        raise WorkloadError(
            f"{where}: parallelism type {kind} is not supported; use one of {list(POLICIES)}"
        )
    if kind not in POLICIES:
        raise WorkloadError(
            f"{where}: unknown parallelism type {kind!r}; expected one of {list(POLICIES)}"
        )
    group = None
    i = 1
    while i < len(tokens):
        field = tokens[i]
        if i + 1 >= len(tokens):
            raise WorkloadError(f"{where}: {field!r} needs a value")
        if field == GROUP_FIELD:
            group = _int(tokens[i + 1], where, GROUP_FIELD)
            if group < 1:
                raise WorkloadError(f"{where}: {GROUP_FIELD} must be >= 1, got {group}")
            i += 2
        elif field in LIST_FIELDS and kind == "HYBRID_TRANSFORMER_FWD_IN_BCKWD":
            n = _int(tokens[i + 1], where, field)
            if n < 0 or i + 2 + n > len(tokens):
                raise WorkloadError(f"{where}: {field} {n} needs {n} layer number(s) after it")
            for t in tokens[i + 2 : i + 2 + n]:
                _int(t, where, field)
            i += 2 + n
        else:
            allowed = [GROUP_FIELD]
            if kind == "HYBRID_TRANSFORMER_FWD_IN_BCKWD":
                allowed += LIST_FIELDS
            raise WorkloadError(
                f"{where}: unknown field {field!r} after {kind}; allowed: {allowed}"
            )
    return kind, group


def _row_policy(row: list[str], where: str, kind: str) -> Policy:
    """The layer line's parallelism (its own for HYBRID_CUSTOMIZED), its field count checked."""
    policy = POLICIES[kind]
    expected = len(_LAYER_FIELDS) + (1 if policy is None else 0)
    if len(row) != expected:
        what = f"{len(_LAYER_FIELDS)} fields" + (
            " and the layer's parallelism type" if policy is None else ""
        )
        raise WorkloadError(
            f"{where}: a layer line has {what} ({', '.join(_LAYER_FIELDS)}); got {len(row)} "
            "field(s)"
        )
    if policy is None:
        policy = LAYER_POLICIES.get(row[-1])
        if policy is None:
            raise WorkloadError(
                f"{where}: layer {row[0]!r}: parallelism type {row[-1]!r}; expected one of "
                f"{list(LAYER_POLICIES)}"
            )
    return policy


def _layer(
    row: list[str], where: str, policy: Policy, mp_group: int, flops_per_cycle: float
) -> Layer:
    name = row[0]
    where = f"{where}: layer {name!r}"
    _int(row[1], where, _LAYER_FIELDS[1], lo=None)
    values: dict[str, int] = {}
    comms: dict[str, CollectiveKind | None] = {}
    for i in (2, 4, 5, 7, 8, 10, 11):
        values[_LAYER_FIELDS[i]] = _int(row[i], where, _LAYER_FIELDS[i])
    for i in (3, 6, 9):
        if row[i] not in COMM_TYPES:
            raise WorkloadError(
                f"{where}: {_LAYER_FIELDS[i]} {row[i]!r}; expected one of {list(COMM_TYPES)}"
            )
        comms[_LAYER_FIELDS[i]] = COMM_TYPES[row[i]]
    split = mp_group if policy.mp else 1
    scale = flops_per_cycle * split
    mp_comm = []
    if policy.mp:
        for pass_, phase in (("fwd", "forward"), ("bwd", "input-gradient")):
            op = comms[f"{phase} comm type"]
            size = values[f"{phase} comm size"]
            if op is not None and size > 0:
                mp_comm.append(MPComm(op, pass_, size / REFERENCE_SAMPLES))
    wg_size = values["weight-gradient comm size"]
    reduces = policy.dp and comms["weight-gradient comm type"] is not None
    params = round(wg_size / FP16 * split) if reduces else 0
    # The update delay is not added: the training model's optimizer step (Adam's HBM
    # traffic, TrainingConfig.optimizer_hbm_bytes_per_param) stands for it.
    backward = values["input-gradient compute time"] + values["weight-gradient compute time"]
    return Layer(
        name,
        "astra-sim",
        params,
        values["forward compute time"] * scale,
        backward * scale,
        in_bytes=0.0,
        out_bytes=0.0,
        mp="split" if policy.mp else "replicate",
        mp_comm=tuple(mp_comm),
    )


def _int(text: str, where: str, field: str, lo: int | None = 0) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise WorkloadError(f"{where}: {field} {text!r} is not an integer") from None
    if lo is not None and value < lo:
        raise WorkloadError(f"{where}: {field} {value} must be >= {lo}")
    return value
