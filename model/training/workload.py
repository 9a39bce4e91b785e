"""Training workloads as data: layer-level descriptions, and the TOML form a file gives them
(files of every format are read by fredfab.model.training.workload_files).

Schema ``fred-workload/1``. A file describes the model in exactly one of three ways:

    schema = "fred-workload/1"
    name = "transformer-17b"
    description = "..."

    [transformer]              # a GPT-style decoder (transformer_layers): embedding,
    layers = 78                # `layers` blocks, final LayerNorm + tied LM head
    hidden = 4256
    heads = 28
    seq = 1024
    vocab = 50257
    flash_attention = true     # optional (default true): attention scores not stashed

    [resnet]                   # a bottleneck ResNet v1.5 (resnet_layers)
    blocks = [3, 8, 36, 3]
    image = 224
    classes = 1000

    [[layers]]                 # or explicit layers (all numbers per sample, FP16 bytes)
    name = "fc1"
    params = 1048576
    fwd_flops = 2.1e6
    bwd_flops = 4.2e6          # optional, default 2 x fwd_flops
    in_bytes = 2048            # input activation (checkpoint, pipeline boundary)
    out_bytes = 2048           # output activation (pipeline boundary)
    stash_bytes = 4096         # kept for backward, split over MP ranks (optional, 0)
    stash_replicated_bytes = 0 # kept for backward, replicated on MP ranks (optional, 0)
    hbm_bytes = 6144           # forward HBM traffic of its memory-bound kernels, split over
                               # MP ranks (optional: in+out+stash)
    hbm_replicated_bytes = 0   # ... and replicated on MP ranks (optional, 0; split too under
                               # sequence parallelism)
    selective_flops = 0        # forward FLOPs selective recomputation repeats (optional, 0)
    selective_hbm_bytes = 0    # ... and their HBM traffic (split; optional, 0)
    selective_stash_bytes = 0  # stash bytes selective recomputation does not keep (split)
    mp = "split"               # "split" (tensor-parallel) or "replicate" (optional, split)
    repeat = 1                 # optional: the layer N times
    [[layers.mp_comm]]         # collectives the layer needs under MP (bytes per sample)
    op = "all-reduce"          # all-reduce, all-gather, reduce-scatter, all-to-all
    pass = "fwd"               # fwd or bwd
    bytes = 2048
    # explicit form only: bytes of one input sample loaded from off-wafer memory
    input_bytes = 4096

    [published]                # optional: the published parameter count (tests compare)
    params = 17.2e9
    source = "..."

    [training]                 # execution defaults (fredfab.model.training.config)
    ...
    [sweep]                    # strategy-sweep settings
    ...
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fredfab.model.collective_kind import MP_OPS, CollectiveKind
from fredfab.model.errors import InputError
from fredfab.model.system.units import GIGA
from fredfab.model.toml_fields import Table, check_int

SCHEMA = "fred-workload/1"
DATA_DIR = Path(__file__).with_name("data")
#: Bytes per activation, weight and gradient element: FP16 (paper §7.3).
FP16 = 2
PASSES = ("fwd", "bwd")
MP_MODES = ("split", "replicate")


class WorkloadError(InputError):
    """A workload description that is malformed or inconsistent."""


# Size limits of a workload (docs/training-model.md): far above the shipped models (the
# largest has a few hundred layers) and low enough that a typo fails at once.
#: Layers of a workload, after ``repeat``.
MAX_LAYERS = 100_000
#: Stages of a ResNet (ResNets have 4; each doubles the width).
MAX_RESNET_STAGES = 8


#: The numeric columns of a layer, in a workload file and in ``Workload.arrays()``.
LAYER_NUMBERS = (
    "params",
    "fwd_flops",
    "bwd_flops",
    "in_bytes",
    "out_bytes",
    "stash_bytes",
    "stash_replicated_bytes",
    "hbm_bytes",
    "hbm_replicated_bytes",
    "selective_flops",
    "selective_hbm_bytes",
    "selective_stash_bytes",
)


@dataclass(frozen=True)
class MPComm:
    """One collective a layer needs under model parallelism, per sample (scaled by the
    microbatch size); ``bytes`` is the collective's size in CollectiveRequest terms."""

    op: CollectiveKind
    pass_: str
    bytes: float


@dataclass(frozen=True)
class Layer:
    name: str
    kind: str
    params: int
    fwd_flops: float
    bwd_flops: float
    in_bytes: float
    out_bytes: float
    stash_bytes: float = 0.0
    stash_replicated_bytes: float = 0.0
    #: Forward HBM traffic of the layer's memory-bound (elementwise) kernels, per sample:
    #: split over MP ranks, and replicated on them (split too under sequence parallelism).
    #: GEMMs are timed from FLOPs; these kernels from bytes (iteration.layer_costs).
    hbm_bytes: float = 0.0
    mp: str = "split"
    mp_comm: tuple[MPComm, ...] = ()
    hbm_replicated_bytes: float = 0.0
    #: Selective activation recomputation (Korthikanti et al., 2022, sec. 5): the forward
    #: FLOPs and HBM bytes it repeats in backward, and the stash bytes it does not keep.
    selective_flops: float = 0.0
    selective_hbm_bytes: float = 0.0
    selective_stash_bytes: float = 0.0


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    layers: tuple[Layer, ...]
    input_bytes: float  # per sample, loaded from off-wafer memory each iteration
    #: Largest MP degree that divides the model cleanly (attention heads); None = any.
    mp_divides: int | None = None
    shape: Mapping[str, Any] = field(default_factory=dict)  # the generator's parameters
    published_params: float | None = None
    published_source: str = ""
    training: Mapping[str, Any] = field(default_factory=dict)  # [training] table, raw
    sweep: Mapping[str, Any] = field(default_factory=dict)  # [sweep] table, raw
    source: str = ""

    @property
    def params(self) -> int:
        return sum(lyr.params for lyr in self.layers)

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def arrays(self) -> dict[str, np.ndarray]:
        """Per-layer numeric columns as numpy arrays (for vectorised costs)."""
        out = {c: np.array([float(getattr(x, c)) for x in self.layers]) for c in LAYER_NUMBERS}
        out["split"] = np.array([x.mp == "split" for x in self.layers])
        return out

    def summary(self) -> dict:
        a = self.arrays()
        return {
            "name": self.name,
            "layers": self.num_layers,
            "params": self.params,
            "published_params": self.published_params,
            "fwd_GFLOP_per_sample": float(a["fwd_flops"].sum() / GIGA),
            "input_bytes_per_sample": self.input_bytes,
            "shape": dict(self.shape),
        }


# ---------------------------------------------------------------------- generators
def transformer_layers(
    layers: int, hidden: int, heads: int, seq: int, vocab: int, flash_attention: bool = True
) -> list[Layer]:
    """A GPT-style decoder split Megatron-style (paper §7.4).

    Per block (h hidden, s sequence, a heads, MLP 4h; Narayanan et al., SC'21, eq. 2):
    params 12h^2 + 13h (QKV 3h^2+3h, projection h^2+h, MLP 8h^2+5h, two LayerNorms 4h);
    forward FLOPs 24 s h^2 + 4 s^2 h per sample; backward 2x forward. Under MP the QKV/MLP-in
    weights are column-split and projection/MLP-out row-split: two All-Reduces of the block
    output (s h FP16) in forward and two in backward.

    Activations kept for backward per sample (Korthikanti et al., "Reducing Activation
    Recomputation in Large Transformer Models", 2022, sec. 4.1, tensor parallel t without
    sequence parallelism): s h (10 + 24/t + 5 a s/(h t)) bytes; 10 s h replicated on MP ranks,
    the rest split. FlashAttention (Dao et al., 2022) keeps no s x s attention scores, which
    removes the 5 a s / h term; without it, selective recomputation (Korthikanti et al.,
    sec. 5) drops that term too and repeats the attention core in backward (its 4 s^2 h
    FLOPs of QK^T and softmax x V, and the softmax and dropout traffic).

    HBM traffic of the memory-bound kernels per sample and forward pass, FP16 elements of
    2 bytes and 1-byte dropout masks, as Megatron-LM fuses them (LayerNorm; fused scale,
    mask and softmax; attention dropout; fused bias + dropout + residual add; fused bias +
    GeLU): replicated on MP ranks 22 s h (two LayerNorms 4 s h each, two bias-dropout-adds
    7 s h each); split 16 s h (bias-GeLU over the 4h MLP) + 9 a s^2 (softmax 4, dropout 5 per
    score); with FlashAttention the scores stay on chip and the attention kernel reads Q, K,
    V and writes its output, 8 s h. GEMMs are timed from their FLOPs (iteration.layer_costs).

    The embedding (vocabulary V and learned positions: (V + s) h params) is vocabulary-split
    with one forward All-Reduce; the LM head reuses the embedding weights (tied, as in GPT-2/3
    and Megatron) plus the final LayerNorm (2h), costs 2 s h V FLOPs forward, keeps the FP32
    logits (4 s V bytes, split) for the loss, and All-Reduces its input gradient in backward.
    """
    check_int(layers, "[transformer] layers", lo=1, hi=MAX_LAYERS - 2, error=WorkloadError)
    for k, v in (("hidden", hidden), ("heads", heads), ("seq", seq), ("vocab", vocab)):
        check_int(v, f"[transformer] {k}", lo=1, error=WorkloadError)
    if hidden % heads:
        raise WorkloadError(f"[transformer] hidden {hidden} is not a multiple of heads {heads}")
    h, s, a, V = hidden, seq, heads, vocab
    act = FP16 * s * h  # one s x h FP16 tensor
    block_fwd = 24 * s * h * h + 4 * s * s * h
    scores = 0 if flash_attention else 5 * a * s * s  # attention scores kept (bytes)
    split = 24 * s * h + scores
    repl = 10 * s * h
    # Memory-bound kernels' traffic (docstring): replicated and split parts.
    hbm_repl = 22 * s * h
    hbm_split = 16 * s * h + (8 * s * h if flash_attention else 9 * a * s * s)
    ar = (MPComm(CollectiveKind.ALL_REDUCE, "fwd", act),) * 2 + (
        MPComm(CollectiveKind.ALL_REDUCE, "bwd", act),
    ) * 2
    out = [
        Layer(
            "embedding",
            "embedding",
            (V + s) * h,
            0.0,
            0.0,
            in_bytes=4 * s,  # int32 token ids
            out_bytes=act,
            hbm_bytes=2 * act,
            mp="split",
            mp_comm=(MPComm(CollectiveKind.ALL_REDUCE, "fwd", act),),
        )
    ]
    for i in range(layers):
        out.append(
            Layer(
                f"block{i}",
                "transformer",
                12 * h * h + 13 * h,
                float(block_fwd),
                float(2 * block_fwd),
                in_bytes=act,
                out_bytes=act,
                stash_bytes=split,
                stash_replicated_bytes=repl,
                hbm_bytes=hbm_split,
                mp="split",
                mp_comm=ar,
                hbm_replicated_bytes=hbm_repl,
                selective_flops=0.0 if flash_attention else 4.0 * s * s * h,
                selective_hbm_bytes=0.0 if flash_attention else 9.0 * a * s * s,
                selective_stash_bytes=scores,
            )
        )
    logits = 4 * s * V  # FP32 logits for the softmax cross-entropy
    out.append(
        Layer(
            "lm-head",
            "head",
            2 * h,
            float(2 * s * h * V),
            float(4 * s * h * V),
            in_bytes=act,
            out_bytes=4 * s,  # per-token loss
            stash_bytes=logits,
            stash_replicated_bytes=act,
            hbm_bytes=act + logits,
            mp="split",
            mp_comm=(MPComm(CollectiveKind.ALL_REDUCE, "bwd", act),),
        )
    )
    return out


def resnet_layers(blocks: list[int], image: int = 224, classes: int = 1000) -> list[Layer]:
    """A bottleneck ResNet (v1.5: stride in the 3x3 conv, torchvision's layout).

    One layer per convolution with its BatchNorm (and ReLU), the projection shortcuts as their
    own layers, and the final fully connected layer. Params count conv weights, BN scale and
    shift, and the FC weights and bias (torchvision's resnet152 has 60,192,808). Forward
    FLOPs 2 Cin Cout k^2 Hout Wout (+ 2 in*out for FC); BN, ReLU, pooling and residual adds are
    left out (under 1% of FLOPs); backward 2x forward.

    Under MP a layer is split by output channels: forward All-Gather of the output, backward
    All-Reduce of the input gradient (partial sums over the channel shards) (paper, Table 1).
    Kept for backward per sample: the conv input and the BN input (FP16).
    """
    if not 1 <= len(blocks) <= MAX_RESNET_STAGES:
        raise WorkloadError(
            f"[resnet] blocks needs 1 to {MAX_RESNET_STAGES} stages, got {list(blocks)}"
        )
    for i, b in enumerate(blocks):
        check_int(b, f"[resnet] blocks[{i}]", lo=1, hi=MAX_LAYERS // 4, error=WorkloadError)
    layers = 2 + len(blocks) + 3 * sum(blocks)  # conv1, fc, a downsample per stage, 3 per block
    if layers > MAX_LAYERS:
        raise WorkloadError(
            f"[resnet] blocks {list(blocks)} make {layers} layers; at most {MAX_LAYERS}"
        )
    check_int(image, "[resnet] image", lo=32, error=WorkloadError)
    check_int(classes, "[resnet] classes", lo=1, error=WorkloadError)
    out: list[Layer] = []

    def conv(name, cin, cout, k, stride, hw_in, first=False):
        hw = (hw_in + stride - 1) // stride
        params = cin * cout * k * k + 2 * cout
        fwd = 2.0 * cin * cout * k * k * hw * hw
        inb = FP16 * cin * hw_in * hw_in
        outb = FP16 * cout * hw * hw
        comm = [MPComm(CollectiveKind.ALL_GATHER, "fwd", outb)]
        if not first:
            comm.append(MPComm(CollectiveKind.ALL_REDUCE, "bwd", inb))
        out.append(
            Layer(
                name,
                "conv",
                params,
                fwd,
                2 * fwd,
                in_bytes=inb,
                out_bytes=outb,
                stash_bytes=outb,
                stash_replicated_bytes=inb,
                hbm_bytes=inb + 2 * outb,
                mp="split",
                mp_comm=tuple(comm),
            )
        )
        return hw

    hw = conv("conv1", 3, 64, 7, 2, image, first=True)
    hw = (hw + 1) // 2  # 3x3 max pool, stride 2
    cin = 64
    for stage, n in enumerate(blocks):
        width = 64 * 2**stage
        for b in range(n):
            stride = 2 if (b == 0 and stage > 0) else 1
            pre = f"layer{stage + 1}.{b}"
            if b == 0:
                conv(f"{pre}.downsample", cin, 4 * width, 1, stride, hw)
            h1 = conv(f"{pre}.conv1", cin, width, 1, 1, hw)
            h2 = conv(f"{pre}.conv2", width, width, 3, stride, h1)
            hw = conv(f"{pre}.conv3", width, 4 * width, 1, 1, h2)
            cin = 4 * width
    fin = FP16 * cin
    out.append(
        Layer(
            "fc",
            "fc",
            cin * classes + classes,
            2.0 * cin * classes,
            4.0 * cin * classes,
            in_bytes=fin,
            out_bytes=FP16 * classes,
            stash_replicated_bytes=fin,
            hbm_bytes=fin + FP16 * classes,
            mp="split",
            mp_comm=(
                MPComm(CollectiveKind.ALL_GATHER, "fwd", FP16 * classes),
                MPComm(CollectiveKind.ALL_REDUCE, "bwd", fin),
            ),
        )
    )
    return out


# ---------------------------------------------------------------------- loading
_TOP = {
    "schema",
    "name",
    "description",
    "transformer",
    "resnet",
    "layers",
    "input_bytes",
    "published",
    "training",
    "sweep",
}
_TRANSFORMER = {"layers", "hidden", "heads", "seq", "vocab", "flash_attention"}
_RESNET = {"blocks", "image", "classes"}
_LAYER = {"name", "kind", *LAYER_NUMBERS, "mp", "mp_comm", "repeat"}
_COMM = {"op", "pass", "bytes"}
_PUBLISHED = {"params", "source"}
_SWEEP = {"samples_per_replica", "microbatches"}


def workload_from_dict(data: Mapping[str, Any], source: str = "<dict>") -> Workload:
    where = source
    top = Table.read(data, where, _TOP, WorkloadError)
    if data.get("schema") != SCHEMA:
        raise WorkloadError(f"{where}: 'schema' must be {SCHEMA!r}, got {data.get('schema')!r}")
    name = top.string("name", nonempty=True)
    forms = [k for k in ("transformer", "resnet", "layers") if k in data]
    if len(forms) != 1:
        raise WorkloadError(
            f"{where}: describe the model with exactly one of [transformer], [resnet] or "
            f"[[layers]] (found {forms or 'none'})"
        )
    form = forms[0]
    mp_divides = None
    shape: dict[str, Any] = {}
    try:
        if form == "transformer":
            t = top.table("transformer", _TRANSFORMER)
            shape = dict(t.data)
            seq, heads = t.integer("seq"), t.integer("heads")
            layers = transformer_layers(
                t.integer("layers"),
                t.integer("hidden"),
                heads,
                seq,
                t.integer("vocab"),
                t.boolean("flash_attention", True),
            )
            input_bytes = 4.0 * seq  # int32 token ids per sample
            mp_divides = heads
        elif form == "resnet":
            r = top.table("resnet", _RESNET)
            shape = dict(r.data)
            image = r.integer("image", 224)
            classes = r.integer("classes", 1000)
            layers = resnet_layers(r.integers("blocks", max_len=MAX_RESNET_STAGES), image, classes)
            # Assumption: images arrive decoded and normalised, 3 x H x W FP16.
            input_bytes = float(FP16 * 3 * image * image)
            # MP splits output channels: every width is a multiple of 64, plus the classes.
            mp_divides = math.gcd(64, classes)
        else:
            layers = _explicit_layers(top)
            if "input_bytes" not in data:
                raise WorkloadError(f"{where}: explicit [[layers]] need top-level input_bytes")
            input_bytes = top.number("input_bytes", lo=0)
        if form != "layers" and "input_bytes" in data:
            raise WorkloadError(f"{where}: input_bytes is derived from [{form}]; drop it")
        pub = top.table("published", _PUBLISHED)
        published = pub.number("params", None, lo=0)
        published_source = pub.string("source", "")
        _check_sweep(top.table("sweep", _SWEEP))
    except WorkloadError as exc:
        msg = str(exc)
        raise WorkloadError(msg if msg.startswith(where) else f"{where}: {msg}") from None
    # [training] is checked field by field when a TrainingConfig is made from it
    # (config_from_table), with the file named in the message.
    training = data.get("training", {})
    sweep = data.get("sweep", {})
    if not isinstance(training, Mapping):
        raise WorkloadError(f"{where}: [training] must be a table")
    return Workload(
        name=name,
        description=top.string("description", ""),
        layers=tuple(layers),
        input_bytes=float(input_bytes),
        mp_divides=mp_divides,
        shape=shape,
        published_params=published,
        published_source=published_source,
        training=dict(training),
        sweep=dict(sweep),
        source=source,
    )


def _check_sweep(sw: Table) -> None:
    """[sweep]: samples per replica, and microbatches "pp" (= the PP degree) or a table
    from PP degree to microbatches."""
    sw.integer("samples_per_replica", None, lo=1)
    rule = sw.data.get("microbatches", "pp")
    if isinstance(rule, Mapping):
        for pp, m in rule.items():
            if not pp.isdigit():
                raise WorkloadError(f"{sw.where}: microbatches keys are PP degrees, got {pp!r}")
            check_int(m, f"{sw.where}: microbatches.{pp}", lo=1, error=WorkloadError)
    elif rule != "pp":
        raise WorkloadError(
            f"{sw.where}: 'microbatches' must be \"pp\" or a table from PP degree to "
            f"microbatches, got {rule!r}"
        )


def _explicit_layers(top: Table) -> list[Layer]:
    out: list[Layer] = []
    names: set[str] = set()
    for ly in top.tables("layers", _LAYER, max_len=MAX_LAYERS):
        name = ly.string("name", nonempty=True)
        # Parameter counts are often written 1.048576e6: a whole float is a count.
        params = ly.integer("params", lo=0, whole_float=True)
        fwd = ly.number("fwd_flops", lo=0)
        bwd = ly.number("bwd_flops", 2 * fwd, lo=0)
        inb = ly.number("in_bytes", lo=0)
        outb = ly.number("out_bytes", lo=0)
        st = ly.number("stash_bytes", 0.0, lo=0)
        sr = ly.number("stash_replicated_bytes", 0.0, lo=0)
        hbm = ly.number("hbm_bytes", inb + outb + st + sr, lo=0)
        extra = {
            k: ly.number(k, 0.0, lo=0)
            for k in (
                "hbm_replicated_bytes",
                "selective_flops",
                "selective_hbm_bytes",
                "selective_stash_bytes",
            )
        }
        mp = ly.string("mp", "split", choices=MP_MODES)
        comms = tuple(
            MPComm(
                CollectiveKind(c.string("op", choices=MP_OPS)),
                c.string("pass", choices=PASSES),
                c.number("bytes", lo=0),
            )
            for c in ly.tables("mp_comm", _COMM, required=False)
        )
        rep = ly.integer("repeat", 1, lo=1, hi=MAX_LAYERS)
        if len(out) + rep > MAX_LAYERS:
            raise WorkloadError(f"{ly.where}: more than {MAX_LAYERS} layers in all")
        kind = ly.string("kind", "layer")
        for k in range(rep):
            nm = name if rep == 1 else f"{name}.{k}"
            if nm in names:
                raise WorkloadError(f"{ly.where}: layer name {nm!r} used twice")
            names.add(nm)
            out.append(
                Layer(nm, kind, params, fwd, bwd, inb, outb, st, sr, hbm, mp, comms, **extra)
            )
    return out
