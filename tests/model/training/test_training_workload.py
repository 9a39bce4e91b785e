"""Workload files: parameter counts recomputed from the public shapes, FLOPs, validation."""

import math

import pytest

from fredfab.model.training import WorkloadError, load_workload, shipped_workloads
from fredfab.model.training.workload import workload_from_dict


def gpt_params(L, h, s, V):
    # Written out independently of the generator: per block QKV (3h^2 + 3h), projection
    # (h^2 + h), MLP (4h^2 + 4h and 4h^2 + h), two LayerNorms (4h); token and position
    # embeddings; final LayerNorm (2h); the LM head is tied to the token embedding.
    block = (3 * h * h + 3 * h) + (h * h + h) + (4 * h * h + 4 * h) + (4 * h * h + h) + 4 * h
    return L * block + V * h + s * h + 2 * h


def resnet_params(blocks, classes=1000):
    def conv(cin, cout, k):
        return cin * cout * k * k + 2 * cout  # conv weights + BN scale and shift

    total = conv(3, 64, 7)
    cin = 64
    for i, n in enumerate(blocks):
        w = 64 * 2**i
        total += conv(cin, 4 * w, 1)  # projection shortcut of the first block
        for _ in range(n):
            total += conv(cin, w, 1) + conv(w, w, 3) + conv(w, 4 * w, 1)
            cin = 4 * w
    return total + cin * classes + classes


SHAPES = {
    "transformer-17b": (78, 4256, 28, 1024, 50257),
    "gpt3-175b": (96, 12288, 96, 2048, 50257),
    "transformer-1t": (128, 25600, 160, 2048, 51200),
}


def test_all_four_shipped():
    assert set(shipped_workloads()) >= {"resnet-152", *SHAPES}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_transformer_params_from_shape(name):
    wl = load_workload(name)
    L, h, a, s, V = SHAPES[name]
    assert (wl.shape["layers"], wl.shape["hidden"], wl.shape["heads"]) == (L, h, a)
    assert (wl.shape["seq"], wl.shape["vocab"]) == (s, V)
    assert wl.params == gpt_params(L, h, s, V)
    # ... and the shape is the published model: within 2% of its published count.
    assert wl.params == pytest.approx(wl.published_params, rel=0.02)


def test_resnet152_params_exact():
    wl = load_workload("resnet-152")
    assert wl.params == resnet_params([3, 8, 36, 3]) == 60_192_808 == wl.published_params


def test_resnet152_flops_match_published():
    # torchvision lists 11.51 GMAC (its "GFLOPS") for resnet152 at 224 x 224; conv + FC only.
    wl = load_workload("resnet-152")
    fwd = sum(x.fwd_flops for x in wl.layers)
    assert fwd / 2 == pytest.approx(11.51e9, rel=0.01)


def test_transformer_flops_per_block():
    wl = load_workload("transformer-17b")
    blk = next(x for x in wl.layers if x.kind == "transformer")
    h, s = 4256, 1024
    assert blk.fwd_flops == 24 * s * h * h + 4 * s * s * h
    assert blk.bwd_flops == 2 * blk.fwd_flops
    # Megatron: two All-Reduces of the s x h FP16 block output forward, two backward.
    assert [(c.op, c.pass_) for c in blk.mp_comm] == [("all-reduce", "fwd")] * 2 + [
        ("all-reduce", "bwd")
    ] * 2
    assert all(c.bytes == 2 * s * h for c in blk.mp_comm)


def test_flash_attention_changes_only_the_stash():
    base = {"schema": "fred-workload/1", "name": "t"}
    shape = {"layers": 2, "hidden": 64, "heads": 4, "seq": 128, "vocab": 100}
    a = workload_from_dict({**base, "transformer": {**shape, "flash_attention": True}})
    b = workload_from_dict({**base, "transformer": {**shape, "flash_attention": False}})
    blk_a, blk_b = a.layers[1], b.layers[1]
    # Korthikanti et al.: the scores add 5 a s^2 bytes per sample (t = 1).
    assert blk_b.stash_bytes - blk_a.stash_bytes == 5 * 4 * 128 * 128
    assert blk_a.fwd_flops == blk_b.fwd_flops and a.params == b.params


def _explicit(**layer):
    lyr = {"name": "l", "params": 10, "fwd_flops": 100, "in_bytes": 8, "out_bytes": 8}
    lyr.update(layer)
    return {"schema": "fred-workload/1", "name": "x", "input_bytes": 16, "layers": [lyr]}


def test_explicit_layers_with_repeat_and_defaults():
    d = _explicit(repeat=3, mp_comm=[{"op": "all-gather", "pass": "fwd", "bytes": 8}])
    wl = workload_from_dict(d)
    assert [x.name for x in wl.layers] == ["l.0", "l.1", "l.2"]
    assert wl.params == 30 and wl.layers[0].bwd_flops == 200
    assert wl.layers[0].hbm_bytes == 16 and wl.layers[0].mp_comm[0].op == "all-gather"


@pytest.mark.parametrize(
    "data, msg",
    [
        ({"schema": "fred-workload/2", "name": "x"}, "schema"),
        (_explicit(flops=3), "unknown key"),
        (_explicit(params=-1), "params"),
        (_explicit(mp="diagonal"), "mp"),
        (_explicit(mp_comm=[{"op": "scatter", "pass": "fwd", "bytes": 1}]), "scatter"),
        (_explicit(mp_comm=[{"op": "all-reduce", "pass": "sideways", "bytes": 1}]), "sideways"),
        (_explicit(fwd_flops=math.inf), "fwd_flops"),
        ({**_explicit(), "resnet": {"blocks": [1]}}, "exactly one"),
        (
            {
                "schema": "fred-workload/1",
                "name": "t",
                "transformer": {"layers": 2, "hidden": 65, "heads": 4, "seq": 8, "vocab": 9},
            },
            "multiple of heads",
        ),
        ({"schema": "fred-workload/1", "name": "t", "transformer": {"layers": 2}}, "missing"),
    ],
)
def test_bad_workloads_are_rejected(data, msg):
    with pytest.raises(WorkloadError, match=msg):
        workload_from_dict(data)


def test_unknown_workload_names_the_shipped_ones():
    with pytest.raises(WorkloadError, match="transformer-17b"):
        load_workload("gpt-5")
