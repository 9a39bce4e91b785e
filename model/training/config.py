"""The NPU and the execution settings of a training estimate.

Every default is either a fact from the paper (section named) or an assumption with
its source written next to it.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from fredfab.model.errors import InputError
from fredfab.model.system.placement import Strategy
from fredfab.model.system.units import GB, MIB
from fredfab.model.toml_fields import Table, check_choice, check_int, check_number
from fredfab.model.training.gemm import H100_GEMM, GemmModel

EXECUTIONS = ("weight-stationary", "weight-streaming")
RECOMPUTE = ("auto", "none", "selective", "full")
PIPELINES = ("1f1b", "gpipe")
ZERO_STAGES = (0, 1, 2)
DIMS = ("mp", "pp", "dp")
#: Model chunks per pipeline stage (interleaved 1F1B): Megatron-LM runs a few.
MAX_VIRTUAL_STAGES = 64


#: The NPU whose calibrated kernel efficiency the wafer's NPU carries over (its file's
#: ``kernel_efficiency``; docs/training-model.md, "What the calibration means for FRED").
CALIBRATED_NPU = Path(__file__).with_name("data") / "npus" / "a100.toml"


def carried_kernel_efficiency() -> float:
    """The kernel efficiency calibrated on measured A100 training runs (CALIBRATED_NPU;
    fitted by fredfab.model.validation.calibration, checked by the tests)."""
    return _value_of(CALIBRATED_NPU, "kernel_efficiency")


def carried_hbm_efficiency() -> float:
    """The share of HBM bandwidth measured on the A100 (CALIBRATED_NPU's ``hbm_efficiency``)."""
    return _value_of(CALIBRATED_NPU, "hbm_efficiency")


@functools.lru_cache(maxsize=8)
def _value_of(path: Path, key: str) -> float:
    return float(tomllib.loads(path.read_text())[key])


@dataclass(frozen=True)
class NPU:
    """One NPU: a roofline (GEMMs at the kernel efficiency of peak, memory-bound kernels at
    HBM bandwidth) and HBM capacity. The defaults are the paper's wafer NPU (the shipped
    ``wafer`` NPU file, model/training/data/npus/wafer.toml, states the same with sources).

    Per layer (fredfab.model.training.iteration.layer_costs): max(GEMM FLOPs / (peak_flops x
    efficiency), weight bytes / hbm_bandwidth) + elementwise HBM bytes / hbm_bandwidth.
    ``efficiency`` is a *kernel* efficiency, the share of peak a training GEMM sustains, not
    an end-to-end utilisation (MFU): pipeline bubbles, communication, memory-bound kernels
    and the optimizer are modelled on their own.
    """

    #: Dense FP16/BF16 tensor rate of an H100 SXM (NVIDIA H100 datasheet: 989.4 TFLOP/s
    #: without sparsity). The paper's NPU is "H100-like" and gives no rate (paper §6.1).
    peak_flops: float = 989e12
    #: Kernel efficiency: calibrated on measured A100 runs (CALIBRATED_NPU) and carried over;
    #: the paper assumes the same compute efficiency on every fabric (paper §7.3).
    efficiency: float = field(default_factory=carried_kernel_efficiency)
    #: HBM bandwidth: the paper's NPU has 6 TB/s to its 5 HBM3 stacks (3 read + 3 write,
    #: paper §6.1); taken as one 6 TB/s budget. (An H100 SXM has 3.35 TB/s.)
    hbm_bandwidth: float = 6000 * GB
    #: HBM capacity: H100 SXM, 80 GB (not stated by the paper, §6.1; H100 figures taken).
    hbm_bytes: float = 80 * GB
    #: The NPU's name (its file's, or "wafer" for these defaults).
    name: str = "wafer"
    #: How its GEMM library tiles a GEMM (fredfab.model.training.gemm): with it, a
    #: transformer's GEMMs are timed one by one (tile and wave quantization, rooflines) and
    #: ``efficiency`` is the share of peak a full tile sustains; None: every GEMM at
    #: ``efficiency`` of peak. Default: an H100's (the paper's NPU is H100-like, §6.1).
    gemm: GemmModel | None = H100_GEMM
    #: Share of ``hbm_bandwidth`` a streaming kernel sustains (memory-bound kernels, GEMMs'
    #: HBM roofline, weight reads, the optimizer): measured on the A100 (CALIBRATED_NPU's
    #: file names the measurement) and carried over; the paper's NPU is not measured.
    hbm_efficiency: float = field(default_factory=carried_hbm_efficiency)

    @property
    def hbm_rate(self) -> float:
        """Bytes/s a streaming kernel moves: hbm_bandwidth x hbm_efficiency."""
        return self.hbm_bandwidth * self.hbm_efficiency

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name == "gemm":
                if self.gemm is not None and not isinstance(self.gemm, GemmModel):
                    raise ValueError(f"NPU gemm must be a GemmModel or None, got {self.gemm!r}")
                continue
            if f.name == "name":
                if not isinstance(self.name, str) or not self.name:
                    raise ValueError(f"NPU name must be a non-empty string, got {self.name!r}")
                continue
            hi = 1 if f.name in ("efficiency", "hbm_efficiency") else None
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
    #: Activation memory policy: "none" keeps every activation for backward; "selective"
    #: keeps all but the attention scores and recomputes the attention core in backward
    #: (Korthikanti et al., 2022, sec. 5; Megatron-LM's --recompute-activations); "full"
    #: recomputes each layer's forward in backward from its input (checkpoint per layer,
    #: Megatron-LM's --checkpoint-activations); "auto" uses the first that fits (none,
    #: selective, full), then (weight-streaming only) gradient accumulation passes, each of
    #: which re-streams the weights.
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
    #: Model chunks per pipeline stage: 1 = one contiguous block of layers per stage; v > 1
    #: = Megatron-LM's interleaved 1F1B schedule (Narayanan et al., SC'21, sec. 2.2.2), the
    #: layers cut into PP x v chunks, chunk k on stage k mod PP, the bubble v times smaller.
    #: Weight-stationary, with microbatches a multiple of PP (as Megatron-LM requires).
    virtual_stages: int = 1
    #: Sequence parallelism (Korthikanti et al., 2022, sec. 4.2.2): the MP ranks split the
    #: layers MP replicates (LayerNorms, dropouts) along the sequence, so their activations
    #: and traffic are split too; each MP All-Reduce becomes a Reduce-Scatter and an
    #: All-Gather of the same size.
    sequence_parallel: bool = False
    #: Pipeline sends of a split activation (Narayanan et al., SC'21, sec. 4.1, the scatter /
    #: gather optimisation, Megatron-LM's default): each MP rank sends 1/MP of the stage's
    #: output to its counterpart, and the receiving MP group All-Gathers it. False: every
    #: rank sends the whole activation. With sequence parallelism the activation is split
    #: already and no All-Gather is needed.
    pp_scatter_gather: bool = True
    #: DP gradient reduction overlapping the backward in buckets (PyTorch DDP, Megatron-LM's
    #: --DDP-impl torch); False: one reduction of all gradients after the backward
    #: (Megatron-LM's --DDP-impl local, used with pipelining).
    dp_overlap: bool = True

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
        if self.virtual_stages > 1:
            if self.execution != "weight-stationary":
                raise ValueError("virtual_stages > 1 (interleaved 1F1B) is weight-stationary only")
            if self.pipeline != "1f1b":
                raise ValueError("virtual_stages > 1 runs the interleaved 1F1B schedule only")
            if self.strategy.pp < 2:
                raise ValueError(
                    f"virtual_stages > 1 (interleaved 1F1B) needs pipeline stages (PP >= 2); "
                    f"{self.strategy} has PP {self.strategy.pp}"
                )
            if self.microbatches % self.strategy.pp:
                raise ValueError(
                    f"the interleaved schedule needs microbatches ({self.microbatches}) to be "
                    f"a multiple of PP ({self.strategy.pp}), as Megatron-LM does"
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
    "virtual_stages": lambda v, what: check_int(v, what, lo=1, hi=MAX_VIRTUAL_STAGES),
    "sequence_parallel": lambda v, what: _boolean(v, what),
    "pp_scatter_gather": lambda v, what: _boolean(v, what),
    "dp_overlap": lambda v, what: _boolean(v, what),
}


def _boolean(v: Any, what: str) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"{what} must be true or false, got {v!r}")
    return v


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
    "virtual_stages",
    "sequence_parallel",
    "pp_scatter_gather",
    "dp_overlap",
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
