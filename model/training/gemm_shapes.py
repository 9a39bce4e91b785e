"""The GEMMs of a GPT-style transformer layer under Megatron-style tensor parallelism, per
microbatch on one MP rank (the shapes fredfab.model.training.gemm times).

Per block (hidden h, heads a of size d = h/a, sequence s, microbatch b, the slowest MP rank
holding a_t = ceil(a/t) heads, h_t = a_t d; Megatron-LM's ParallelAttention and ParallelMLP,
Narayanan et al., SC'21, sec. 2.3 and eq. 2):

* QKV projection [b s, h] x [h, 3 h_t] (column-split);
* attention scores, a batched GEMM over b a_t heads: Q [s, d] x K^T [d, s];
* attention over values, batched: P [s, s] x V [s, d];
* output projection [b s, h_t] x [h_t, h] (row-split);
* MLP [b s, h] x [h, 4 h_t] and [b s, 4 h_t] x [4 h_t, h].

Their FLOPs sum to the block's 24 b s h h_t + 4 b s^2 h_t (workload.transformer_layers; a
test checks it). The LM head: [b s, h] x [h, V_t], V_t = ceil(V/t) (vocabulary-split).

Backward of C[m, n] = A[m, k] B[k, n]: the input gradient dA = dC B^T, [m, n] x [n, k], and
the weight (or second operand's) gradient dB = A^T dC, [k, m] x [m, n]; twice the forward
FLOPs, as the workload counts them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fredfab.model.training.gemm import Gemm


@dataclass(frozen=True)
class LayerGemms:
    """A layer's GEMMs per microbatch: forward, backward, and the part of the forward that
    selective recomputation repeats (the attention core)."""

    fwd: tuple[Gemm, ...]
    bwd: tuple[Gemm, ...]
    attention_core: tuple[Gemm, ...] = ()


def backward(g: Gemm) -> tuple[Gemm, Gemm]:
    """The two GEMMs of ``g``'s backward: dA [m, n] x [n, k] and dB [k, m] x [m, n]."""
    return Gemm(g.batch, g.m, g.k, g.n), Gemm(g.batch, g.k, g.n, g.m)


def _layer(fwd: tuple[Gemm, ...], core: tuple[Gemm, ...] = ()) -> LayerGemms:
    return LayerGemms(fwd, tuple(x for g in fwd for x in backward(g)), core)


def transformer_block(hidden: int, heads: int, seq: int, b: int, mp: int) -> LayerGemms:
    """The six GEMMs of one block on the slowest of ``mp`` ranks, microbatch ``b``."""
    d = hidden // heads
    h_t = math.ceil(heads / mp) * d
    tokens = b * seq
    scores = Gemm(b * math.ceil(heads / mp), seq, seq, d)
    context = Gemm(b * math.ceil(heads / mp), seq, d, seq)
    fwd = (
        Gemm(1, tokens, 3 * h_t, hidden),
        scores,
        context,
        Gemm(1, tokens, hidden, h_t),
        Gemm(1, tokens, 4 * h_t, hidden),
        Gemm(1, tokens, hidden, 4 * h_t),
    )
    return _layer(fwd, (scores, context))


def lm_head(hidden: int, seq: int, vocab: int, b: int, mp: int) -> LayerGemms:
    """The tied LM head's logits GEMM on one of ``mp`` ranks (vocabulary-split)."""
    return _layer((Gemm(1, b * seq, math.ceil(vocab / mp), hidden),))


#: The layer kinds (workload.transformer_layers) whose GEMMs this module lists.
GEMM_KINDS = ("transformer", "head")


def transformer_gemms(shape: dict, b: int, mp: int) -> dict[str, LayerGemms] | None:
    """Per layer kind, the GEMMs of a ``[transformer]`` workload's ``shape`` (None for other
    workloads: ResNets and explicit layers are timed from their FLOPs)."""
    if not all(k in shape for k in ("hidden", "heads", "seq", "vocab", "layers")):
        return None
    h, a, s, v = (int(shape[k]) for k in ("hidden", "heads", "seq", "vocab"))
    return {"transformer": transformer_block(h, a, s, b, mp), "head": lm_head(h, s, v, b, mp)}
