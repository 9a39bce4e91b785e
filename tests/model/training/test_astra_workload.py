"""ASTRA-sim 1.0 text workloads: small files written from the format's description
(inputs/workload/ASTRA-sim-1.0/README.md of astra-sim/astra-sim) become workloads whose
compute, collectives and weights follow the documented mapping; bad files fail on one line
naming the line and the field."""

import pytest

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.training import NPU, WorkloadError, load_workload
from fredfab.model.training.astra_workload import (
    DEFAULT_CLOCK_HZ,
    FORMAT,
    REFERENCE_SAMPLES,
    implied_strategy,
)
from fredfab.sim.engines.training import estimate

RATE = NPU().peak_flops * NPU().efficiency

TRANSFORMER = """\
HYBRID_TRANSFORMER\tmodel_parallel_NPU_group: 2
2
attn\t-1\t100000\tALLREDUCE\t1048576\t100000\tALLREDUCE\t2097152\t50000\tALLREDUCE\t4194304\t10
mlp\t-1\t200000\tNONE\t0\t200000\tALLGATHER\t65536\t100000\tALLREDUCE\t8388608\t10
"""

DATA = """\
DATA
1
fc -1 5000 ALLREDUCE 4096 6000 ALLREDUCE 4096 7000 ALLREDUCE 1048576 5
"""

CUSTOMIZED = """\
HYBRID_CUSTOMIZED model_parallel_NPU_group: 4
2
a -1 1000 ALLGATHER 4096 1000 REDUCESCATTER 4096 1000 ALLREDUCE 4096 1 DATA
b -1 1000 ALLGATHER 4096 1000 REDUCESCATTER 4096 1000 NONE 0 1 MODEL
"""


def _write(tmp_path, text: str, name: str = "w.txt"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_transformer_layers_follow_the_mapping(tmp_path):
    wl = load_workload(_write(tmp_path, TRANSFORMER))
    assert wl.name == "w" and wl.num_layers == 2 and wl.mp_divides == 2
    assert wl.shape["format"] == FORMAT and wl.shape["model_parallel_NPU_group"] == 2
    attn, mlp = wl.layers
    # One NPU of the reference run computes exactly the file's cycles at 1 GHz.
    per_npu = attn.fwd_flops * REFERENCE_SAMPLES / 2 / RATE
    assert per_npu == pytest.approx(100000 / DEFAULT_CLOCK_HZ)
    assert attn.bwd_flops * REFERENCE_SAMPLES / 2 / RATE == pytest.approx(150000 / 1e9)
    # Forward and input-gradient collectives run over MP, per sample.
    assert [(c.op, c.pass_, c.bytes) for c in attn.mp_comm] == [
        (CollectiveKind.ALL_REDUCE, "fwd", 1048576 / REFERENCE_SAMPLES),
        (CollectiveKind.ALL_REDUCE, "bwd", 2097152 / REFERENCE_SAMPLES),
    ]
    assert [(c.op, c.pass_) for c in mlp.mp_comm] == [(CollectiveKind.ALL_GATHER, "bwd")]
    # Weights from the weight-gradient collective: FP16 gradients of the MP-split layer.
    assert attn.params == 4194304 // 2 * 2 and mlp.params == 8388608 // 2 * 2
    assert attn.mp == "split" and attn.in_bytes == 0 and wl.input_bytes == 0


def test_the_clock_scales_compute(tmp_path):
    p = _write(tmp_path, TRANSFORMER)
    at_1 = load_workload(p).layers[0].fwd_flops
    assert load_workload(p, astra_clock_hz=2e9).layers[0].fwd_flops == pytest.approx(at_1 / 2)


def test_data_parallel_ignores_forward_collectives_and_allows_no_mp(tmp_path):
    wl = load_workload(_write(tmp_path, DATA))
    (fc,) = wl.layers
    assert fc.mp_comm == () and wl.mp_divides == 1 and fc.mp == "replicate"
    assert fc.params == 1048576 // 2
    assert fc.fwd_flops * REFERENCE_SAMPLES / RATE == pytest.approx(5000 / 1e9)
    assert implied_strategy(wl, 20) == "MP1-DP20-PP1"


def test_customized_layers_take_their_own_parallelism(tmp_path):
    a, b = load_workload(_write(tmp_path, CUSTOMIZED)).layers
    assert a.mp == "replicate" and a.mp_comm == () and a.params == 4096 // 2
    assert b.mp == "split" and b.params == 0  # MODEL reduces no weight gradients
    assert [c.op for c in b.mp_comm] == [CollectiveKind.ALL_GATHER, CollectiveKind.REDUCE_SCATTER]
    # An unsplit layer's compute is the file's; a split one is the file's x the group.
    assert b.fwd_flops == pytest.approx(4 * a.fwd_flops)


def test_estimate_runs_the_files_strategy_and_compute(tmp_path):
    slow = TRANSFORMER.replace("\t100000\tALLREDUCE\t1048576", "\t300000\tALLREDUCE\t1048576")
    e = estimate(load_workload(_write(tmp_path, TRANSFORMER)), "fred-d")
    e_slow = estimate(load_workload(_write(tmp_path, slow, "slow.txt")), "fred-d")
    assert e.ok and e.strategy == "MP2-DP10-PP1" and e.minibatch == 10 * REFERENCE_SAMPLES
    # 200,000 more forward cycles of one layer = 200 us more compute per NPU at 1 GHz.
    assert e_slow.compute_busy - e.compute_busy == pytest.approx(200e-6)


def test_group_must_divide_the_fabric(tmp_path):
    text = TRANSFORMER.replace("group: 2", "group: 8")
    wl = load_workload(_write(tmp_path, text))
    with pytest.raises(ValueError, match="group of 8 NPUs does not divide the fabric's 20"):
        estimate(wl, "fred-d")
    assert estimate(wl, "fred-d", "MP4-DP5-PP1").ok  # MP 4 divides the file's 8


def test_found_by_content_and_the_clock_is_for_astra_files_only(tmp_path):
    wl = load_workload(_write(tmp_path, DATA, "dp.workload"))
    assert wl.shape["parallelism"] == "DATA"
    with pytest.raises(WorkloadError, match="only to ASTRA-sim text workloads"):
        load_workload("resnet-152", astra_clock_hz=1e9)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"w\.txt: empty"),
        ("PIPELINE\n1\n", r"w\.txt:1: unknown parallelism type 'PIPELINE'"),
        ("HYBRID_DLRM 4\n1\n", r"w\.txt:1: parallelism type HYBRID_DLRM is not supported"),
        ("DATA extra: 3\n1\n", r"w\.txt:1: unknown field 'extra:' after DATA"),
        ("HYBRID_TRANSFORMER model_parallel_NPU_group:\n", r"w\.txt:1: .*needs a value"),
        ("MODEL\n1\n" + DATA.splitlines()[2] + "\n", r"w\.txt:1: MODEL needs 'model_para"),
        ("DATA\n", r"w\.txt: no layer count"),
        ("DATA\ntwo\n", r"w\.txt:2: layer count 'two' is not an integer"),
        ("DATA\n2\n" + DATA.splitlines()[2] + "\n", r"declares 2 layer\(s\) on line 2 but has 1"),
        ("DATA\n1\nfc -1 5000 NONE 0\n", r"w\.txt:3: a layer line has 12 fields .* got 5"),
        (
            "DATA\n1\nfc -1 5000 NONE 0 5000 NONE 0 5000 ALLREDUCE_EP 4096 5\n",
            r"w\.txt:3: layer 'fc': weight-gradient comm type 'ALLREDUCE_EP'; expected one of",
        ),
        (
            "DATA\n1\nfc -1 5e3 NONE 0 5000 NONE 0 5000 ALLREDUCE 4096 5\n",
            r"w\.txt:3: layer 'fc': forward compute time '5e3' is not an integer",
        ),
        (
            "DATA\n1\nfc -1 5000 NONE 0 5000 NONE 0 5000 ALLREDUCE -4096 5\n",
            r"w\.txt:3: layer 'fc': weight-gradient comm size -4096 must be >= 0",
        ),
        (
            "HYBRID_CUSTOMIZED\n1\nfc -1 1 NONE 0 1 NONE 0 1 NONE 0 1 PIPE\n",
            r"w\.txt:3: layer 'fc': parallelism type 'PIPE'",
        ),
    ],
)
def test_bad_files_fail_naming_line_and_field(tmp_path, text, message):
    with pytest.raises(WorkloadError, match=message):
        load_workload(_write(tmp_path, text))


def test_the_documented_example_loads():
    from pathlib import Path

    path = Path(__file__).parents[3] / "docs/workloads/astra-hybrid-transformer.txt"
    wl = load_workload(path)
    assert [ly.name for ly in wl.layers] == ["embedding", "attention", "mlp"]
    assert implied_strategy(wl, 20) == "MP2-DP10-PP1"
    # docs/training-model.md: 2.74 M forward cycles and 5.48 M backward cycles per NPU.
    fwd = sum(ly.fwd_flops for ly in wl.layers) * REFERENCE_SAMPLES / 2 / RATE
    bwd = sum(ly.bwd_flops for ly in wl.layers) * REFERENCE_SAMPLES / 2 / RATE
    assert (fwd, bwd) == (pytest.approx(2.74e-3), pytest.approx(5.48e-3))
