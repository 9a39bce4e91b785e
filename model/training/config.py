"""The NPU and the execution settings of a training estimate.

Every default is either a fact from the paper (section named) or an assumption with
its source written next to it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from fredfab.model.errors import InputError
from fredfab.model.system.placement import Strategy
from fredfab.model.system.units import GB, MIB
from fredfab.model.toml_fields import Table, check_choice, check_int, check_number

EXECUTIONS = ("weight-stationary", "weight-streaming")
RECOMPUTE = ("auto", "none", "full")
PIPELINES = ("1f1b", "gpipe")
ZERO_STAGES = (0, 1, 2)
DIMS = ("mp", "pp", "dp")


@dataclass(frozen=True)
class NPU:
    """One NPU of the wafer: a roofline (compute rate x efficiency, HBM bandwidth) and HBM.

    Per-layer time = max(FLOPs / (peak_flops * efficiency), HBM bytes / hbm_bandwidth).
    """

    #: Dense FP16/BF16 tensor rate of an H100 SXM (NVIDIA H100 datasheet: 989.4 TFLOP/s
    #: without sparsity). The paper's NPU is "H100-like" and gives no rate (paper §6.1).
    peak_flops: float = 989e12
    #: Fraction of peak a training kernel mix sustains. Assumption: Megatron-LM reaches
    #: 52% of A100 peak on its 1T GPT (Narayanan et al., SC'21, Table 1: 163 of 312 TFLOP/s);
    #: 0.5 is applied to every layer on every fabric (the paper assumes the same compute
    #: efficiency everywhere, paper §7.3).
    efficiency: float = 0.5
    #: HBM bandwidth: the paper's NPU has 6 TB/s to its 5 HBM3 stacks (3 read + 3 write,
    #: paper §6.1); taken as one 6 TB/s budget. (An H100 SXM has 3.35 TB/s.)
    hbm_bandwidth: float = 6000 * GB
    #: HBM capacity: H100 SXM, 80 GB (not stated by the paper, §6.1; H100 figures taken).
    hbm_bytes: float = 80 * GB

    def __post_init__(self) -> None:
        for f in fields(self):
            hi = 1 if f.name == "efficiency" else None
            check_number(getattr(self, f.name), f"NPU {f.name}", lo=0, hi=hi, lo_open=True)


@dataclass(frozen=True)
class TrainingConfig:
    """How one iteration runs. Defaults come from the workload's [training] table, then here."""

    strategy: Strategy = Strategy(1, 1, 1)
    execution: str = "weight-stationary"
    #: Samples per DP replica per iteration: minibatch = DP x this (paper §7.4: 16 for
    #: per-fabric comparisons, 40 for strategy sweeps).
    samples_per_replica: int = 16
    #: Microbatches per iteration (pipeline). Weight-streaming: microbatches pipeline through
    #: the PP stages of each streamed layer group.
    microbatches: int = 1
    #: ZeRO stage on the DP dimension: 0 = gradients All-Reduced, full optimizer state per
    #: replica; 1 = optimizer state partitioned; 2 = gradients partitioned too (Rajbhandari
    #: et al., SC'20). Stages 1 and 2 reduce-scatter gradients and all-gather the updated
    #: FP16 weights after the step (DeepSpeed's implementation).
    zero_stage: int = 0
    #: Placement: dimension order from innermost to outermost; the paper's "MP consecutive,
    #: then PP, then DP" is mp-pp-dp (paper §5.3).
    placement: str = "mp-pp-dp"
    #: Activation memory policy: "none" keeps every activation for backward; "full"
    #: recomputes each layer's forward in backward from its input (checkpoint per layer);
    #: "auto" uses the first that fits, then (weight-streaming only) gradient accumulation
    #: passes, each of which re-streams the weights.
    recompute: str = "auto"
    #: Gradient accumulation passes (weight-streaming); 0 = choose (auto) or 1.
    accumulation: int = 0
    #: Pipeline order: 1F1B (PipeDream-flush; Narayanan et al., SC'21) or GPipe.
    pipeline: str = "1f1b"
    #: Gradients are reduced in buckets of at least this many bytes, each as soon as the
    #: backward of its layers is done. PyTorch DDP's default bucket_cap_mb = 25.
    dp_bucket_bytes: float = 25 * MIB
    #: Chunks per collective in the network simulator (sim/engines/system.py DEFAULT_CHUNKS).
    chunks: int = 2
    #: Adam with mixed precision: FP32 master weights, momentum and variance, 12 bytes per
    #: parameter (ZeRO paper, K = 12); FP16 weights and gradients, 2 bytes each.
    optimizer_bytes_per_param: float = 12.0
    #: HBM bytes moved per parameter by the optimizer step (read FP32 master, m, v and the
    #: FP16 gradient: 14; write master, m, v and the FP16 weight: 14). Memory-bound.
    optimizer_hbm_bytes_per_param: float = 28.0
    #: Weight-streaming: layer groups whose weights (and gradients) fit on the NPU at once;
    #: 2 = double buffering (compute one group while the next streams in).
    stream_buffers: int = 2

    def __post_init__(self) -> None:
        if not isinstance(self.strategy, Strategy):
            raise InputError(f"strategy must be a Strategy, got {self.strategy!r}")
        for k, check in _FIELD_CHECKS.items():
            check(getattr(self, k), k)
        if self.stream_buffers < 2 and self.execution == "weight-streaming":
            raise InputError("stream_buffers must be >= 2 (one computing, one streaming)")
        if self.samples_per_replica % self.microbatches:
            raise InputError(
                f"{self.microbatches} microbatches do not divide {self.samples_per_replica} "
                "samples per replica"
            )

    @property
    def microbatch_size(self) -> int:
        return self.samples_per_replica // self.microbatches

    @property
    def minibatch(self) -> int:
        return self.samples_per_replica * self.strategy.dp

    def with_(self, **kw: Any) -> TrainingConfig:
        return replace(self, **kw)


def parse_placement(text: str) -> tuple[str, str, str]:
    """``mp-pp-dp`` (innermost first) -> ("mp", "pp", "dp")."""
    parts = (
        tuple(p for p in re.split(r"[-,_ ]+", text.lower()) if p) if isinstance(text, str) else ()
    )
    if sorted(parts) != sorted(DIMS):
        raise InputError(
            f"placement {text!r}: give the three dimensions mp, pp, dp innermost first, "
            "e.g. mp-pp-dp (the paper's)"
        )
    return parts  # type: ignore[return-value]


def _count(lo: int) -> Callable[[Any, str], Any]:
    return lambda v, what: check_int(v, what, lo=lo)


def _one_of(choices: tuple) -> Callable[[Any, str], Any]:
    return lambda v, what: check_choice(v, what, choices)


def _placement(v: Any, what: str) -> Any:
    if not isinstance(v, str):
        raise InputError(f"{what} must be a string such as 'mp-pp-dp', got {v!r}")
    return parse_placement(v)


#: The rule of every TrainingConfig field a file or a caller sets (besides strategy): used
#: by TrainingConfig and, with the file's name in the message, by config_from_table.
_FIELD_CHECKS: dict[str, Callable[[Any, str], Any]] = {
    "execution": _one_of(EXECUTIONS),
    "samples_per_replica": _count(1),
    "microbatches": _count(1),
    "zero_stage": _one_of(ZERO_STAGES),
    "placement": _placement,
    "recompute": _one_of(RECOMPUTE),
    "accumulation": _count(0),
    "pipeline": _one_of(PIPELINES),
    "dp_bucket_bytes": lambda v, what: check_number(v, what, lo=0, lo_open=True),
    "chunks": _count(1),
    "optimizer_bytes_per_param": lambda v, what: check_number(v, what, lo=0),
    "optimizer_hbm_bytes_per_param": lambda v, what: check_number(v, what, lo=0),
    "stream_buffers": _count(1),
}


_TRAINING_KEYS = {
    "execution",
    "strategy",
    "samples_per_replica",
    "microbatches",
    "zero_stage",
    "placement",
    "recompute",
    "accumulation",
    "pipeline",
    "dp_bucket_bytes",
    "chunks",
    "stream_buffers",
}


def config_from_table(
    table: Mapping[str, Any], where: str = "[training]", **over: Any
) -> TrainingConfig:
    """A TrainingConfig from a workload's [training] table plus keyword overrides (None =
    keep)."""
    Table.read(table, where, _TRAINING_KEYS)
    for k, v in table.items():
        if k == "strategy":
            if not isinstance(v, str):
                raise InputError(f"{where}: 'strategy' must be a string such as 'MP2-DP5-PP2'")
        else:
            _FIELD_CHECKS[k](v, f"{where}: '{k}'")
    kw = dict(table)
    kw.update({k: v for k, v in over.items() if v is not None})
    st = kw.get("strategy", Strategy(1, 1, 1))
    if isinstance(st, str):
        st = Strategy.parse(st)
    kw["strategy"] = st
    return TrainingConfig(**kw)
