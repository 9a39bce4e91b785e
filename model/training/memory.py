"""Per-NPU memory of a training strategy, and the recompute/accumulation policy.

Weight-stationary (per NPU of pipeline stage s, P_s its parameters after the MP split):
FP16 weights 2 P_s; FP16 gradients 2 P_s (/DP with ZeRO-2); optimizer state 12 P_s (/DP with
ZeRO-1/2); activations of the microbatches in flight (1F1B: min(m, PP - s), GPipe: m).

Weight-streaming (per NPU): ``stream_buffers`` layers of weights and as many of gradients (the
largest of its layers); no optimizer state (an off-wafer core updates the weights); the
activations of every one of its layers for all samples of one accumulation pass (the whole
batch goes through a layer before the next layer is streamed).

Activations per microbatch: every layer's stash (``recompute = "none"``); without the
attention scores selective recomputation does not keep (``"selective"``); or with full
recomputation each layer's input (checkpoint) plus one layer's stash as working set. Under
sequence parallelism what MP replicates (and the checkpoints) is split over the MP ranks.
Under the interleaved schedule (``virtual_stages`` v > 1) a stage holds the activations of
min(m v, (PP - s - 1) x 2 + (v - 1) x PP + 1) chunk-microbatches (its warm-up forwards and
the one in progress), each a 1/v share of the stage's layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fredfab.model.errors import InputError
from fredfab.model.system.units import GB
from fredfab.model.training.config import NPU, TrainingConfig
from fredfab.model.training.parallel import mp_split
from fredfab.model.training.workload import FP16, Workload


@dataclass(frozen=True)
class MemoryReport:
    stage: int  # the pipeline stage (NPU) with the largest footprint
    weights: float  # bytes
    gradients: float
    optimizer: float
    activations: float
    capacity: float
    recompute: str
    accumulation: int

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations

    @property
    def fits(self) -> bool:
        return self.total <= self.capacity

    def to_dict(self) -> dict:
        return {
            "stage": self.stage,
            "weights_GB": self.weights / GB,
            "gradients_GB": self.gradients / GB,
            "optimizer_GB": self.optimizer / GB,
            "activations_GB": self.activations / GB,
            "total_GB": self.total / GB,
            "capacity_GB": self.capacity / GB,
            "fits": self.fits,
            "recompute": self.recompute,
            "accumulation": self.accumulation,
        }

    def describe(self) -> str:
        return (
            f"{self.total / GB:.1f} GB per NPU (stage {self.stage}: weights "
            f"{self.weights / GB:.1f}, gradients {self.gradients / GB:.1f}, optimizer "
            f"{self.optimizer / GB:.1f}, activations {self.activations / GB:.1f}) "
            f"vs {self.capacity / GB:.0f} GB HBM; recompute {self.recompute}, "
            f"accumulation {self.accumulation}"
            + (" (the most passes tried)" if self.accumulation == MAX_ACCUMULATION else "")
        )


def stage_layers(
    wl: Workload, cfg: TrainingConfig, ranges: list[tuple[int, int]]
) -> list[np.ndarray]:
    """Layer indices each pipeline stage holds (contiguous ranges when weight-stationary,
    round-robin l % PP when weight-streaming)."""
    pp = cfg.strategy.pp
    if cfg.execution == "weight-streaming":
        return [np.arange(s, wl.num_layers, pp) for s in range(pp)]
    # Model chunk k runs on stage k mod PP (one chunk per stage without interleaving).
    return [
        np.concatenate([np.arange(a, b) for a, b in ranges[s::pp]]).astype(np.int64)
        for s in range(pp)
    ]


def memory(
    wl: Workload,
    cfg: TrainingConfig,
    npu: NPU,
    ranges: list[tuple[int, int]],
    recompute: str,
    accumulation: int,
) -> MemoryReport:
    a = wl.arrays()
    st = cfg.strategy
    # The footprint of the MP rank with the largest share (uneven head splits).
    div = np.where(a["split"], mp_split(wl, st.mp).divisor, 1)
    div_rep = div if cfg.sequence_parallel else np.ones_like(div)
    params = a["params"] / div
    split_stash = a["stash_bytes"]
    if recompute == "selective":
        split_stash = split_stash - a["selective_stash_bytes"]
    stash = split_stash / div + a["stash_replicated_bytes"] / div_rep
    ckpt = a["in_bytes"] / div_rep
    per_stage = stage_layers(wl, cfg, ranges)
    best: MemoryReport | None = None
    for s, idx in enumerate(per_stage):
        if not len(idx):
            continue
        b = cfg.microbatch_size
        if cfg.execution == "weight-streaming":
            b = cfg.samples_per_replica // (accumulation * cfg.microbatches)
            n_in_flight = cfg.microbatches  # every microbatch of the pass is alive
            w = cfg.stream_buffers * FP16 * float(params[idx].max())
            g = w
            opt = 0.0
        else:
            n_in_flight = (
                cfg.microbatches if cfg.pipeline == "gpipe" else min(cfg.microbatches, st.pp - s)
            )
            v = cfg.virtual_stages
            if v > 1:  # chunk-microbatches in flight, each 1/v of the stage's layers
                warm = (st.pp - s - 1) * 2 + (v - 1) * st.pp + 1
                n_in_flight = min(cfg.microbatches * v, warm) / v
            p = float(params[idx].sum())
            w = FP16 * p
            g = FP16 * p / (st.dp if cfg.zero_stage >= 2 else 1)
            opt = cfg.optimizer_bytes_per_param * p / (st.dp if cfg.zero_stage >= 1 else 1)
        if recompute in ("none", "selective"):
            act = n_in_flight * b * float(stash[idx].sum())
        else:
            act = n_in_flight * b * float(ckpt[idx].sum()) + b * float(stash[idx].max())
        rep = MemoryReport(s, w, g, opt, act, npu.hbm_bytes, recompute, accumulation)
        if best is None or rep.total > best.total:
            best = rep
    assert best is not None
    return best


#: Most gradient accumulation passes the policy tries (and `--accumulation` takes). The
#: iteration is built pass by pass, so its cost grows with them: 4,096 passes of GPT-3 took
#: about three minutes; a batch that needs more does not fit.
MAX_ACCUMULATION = 1024


def choose_policy(
    wl: Workload, cfg: TrainingConfig, npu: NPU, ranges: list[tuple[int, int]]
) -> MemoryReport:
    """The first (recompute, accumulation) that fits, in the order: no recomputation,
    selective, full recomputation, then (weight-streaming) more accumulation passes; the
    report of the last candidate tried if none fits. Fixed settings in ``cfg`` restrict the
    candidates."""
    recs = ["none", "selective", "full"] if cfg.recompute == "auto" else [cfg.recompute]
    if cfg.execution == "weight-streaming":
        per_mb = cfg.samples_per_replica // cfg.microbatches
        accs = (
            [cfg.accumulation]
            if cfg.accumulation
            else [k for k in range(1, min(per_mb, MAX_ACCUMULATION) + 1) if per_mb % k == 0]
        )
        if cfg.accumulation and per_mb % cfg.accumulation:
            raise InputError(
                f"accumulation {cfg.accumulation} does not divide the microbatch size {per_mb}"
            )
    else:
        if cfg.accumulation > 1:
            raise InputError(
                "accumulation passes apply to weight-streaming; weight-stationary runs "
                "use microbatches"
            )
        accs = [1]
    last = None
    for acc in accs:
        for rec in recs:
            last = memory(wl, cfg, npu, ranges, rec, acc)
            if last.fits:
                return last
    assert last is not None
    return last
