"""Workload files and [training] tables are read strictly: one clear error per mistake,
naming the file, the table and the field; the shipped workloads load as before."""

import tomllib

import pytest

from fredfab.model.training import WorkloadError, load_workload, shipped_workloads
from fredfab.model.training.config import TrainingConfig, config_from_table
from fredfab.model.training.workload import DATA_DIR, MAX_LAYERS

TRANSFORMER = """\
schema = "fred-workload/1"
name = "t"
[transformer]
layers = {layers}
hidden = {hidden}
heads = 4
seq = 8
vocab = 16
flash_attention = {fa}
"""
GOOD_T = dict(layers="2", hidden="64", fa="true")

LAYERS = """\
schema = "fred-workload/1"
name = "l"
input_bytes = {input}
[[layers]]
name = "fc"
params = {params}
fwd_flops = {fwd}
in_bytes = 8
out_bytes = 8
repeat = {repeat}
[[layers.mp_comm]]
op = {op}
pass = "fwd"
bytes = {bytes}
"""
GOOD_L = dict(input="16", params="1.048576e6", fwd="100", repeat="2", op='"all-reduce"', bytes="8")


def _write(tmp_path, text):
    p = tmp_path / "w.toml"
    p.write_text(text)
    return p


def test_the_templates_are_valid(tmp_path):
    assert load_workload(_write(tmp_path, TRANSFORMER.format(**GOOD_T))).num_layers == 4
    wl = load_workload(_write(tmp_path, LAYERS.format(**GOOD_L)))
    # A whole float is a parameter count (1.048576e6 = 2**20).
    assert [x.params for x in wl.layers] == [2**20, 2**20]


@pytest.mark.parametrize(
    ("template", "field", "value", "message"),
    [
        ("t", "layers", "2.5", r"\[transformer\]: 'layers' must be an integer, got 2.5"),
        ("t", "hidden", '"64"', r"\[transformer\]: 'hidden' must be an integer, got '64'"),
        ("t", "hidden", "true", r"'hidden' must be an integer, got True"),
        ("t", "fa", "1", r"'flash_attention' must be true or false, got 1"),
        ("t", "layers", "10000000", rf"layers must be an integer in \[1, {MAX_LAYERS - 2}\]"),
        ("l", "params", "2.5", r"layers\[0\]: 'params' must be an integer >= 0, got 2.5"),
        ("l", "params", "true", r"'params' must be an integer >= 0, got True"),
        ("l", "fwd", '"100"', r"'fwd_flops' must be a finite number >= 0, got '100'"),
        ("l", "fwd", "false", r"'fwd_flops' must be a finite number >= 0, got False"),
        ("l", "input", "-1", r"'input_bytes' must be a finite number >= 0, got -1"),
        ("l", "repeat", "1.5", r"'repeat' must be an integer in \[1, 100000\], got 1.5"),
        ("l", "repeat", "1000000", r"'repeat' must be an integer in \[1, 100000\]"),
        ("l", "op", '"scatter"', r"mp_comm\[0\]: 'op' must be one of .*'all-reduce'"),
        ("l", "op", "1", r"'op' must be one of .*, got 1"),
        ("l", "bytes", "nan", r"'bytes' must be a finite number >= 0, got nan"),
    ],
)
def test_bad_workload_field(tmp_path, template, field, value, message):
    text = TRANSFORMER.format(**{**GOOD_T, field: value}) if template == "t" else None
    text = text or LAYERS.format(**{**GOOD_L, field: value})
    p = _write(tmp_path, text)
    with pytest.raises(WorkloadError, match=message) as info:
        load_workload(p)
    assert str(info.value).startswith(str(p))


def test_resnet_blocks_are_counts(tmp_path):
    base = 'schema = "fred-workload/1"\nname = "r"\n[resnet]\n'
    for blocks, message in (
        ("[3, 4.0, 6, 3]", r"'blocks'\[1\] must be an integer, got 4.0"),
        ("[3, 4, 6, 3, 3, 3, 3, 3, 3]", r"'blocks': at most 8 entries, got 9"),
        ("3", r"'blocks' must be a non-empty array, got 3"),
    ):
        with pytest.raises(WorkloadError, match=message):
            load_workload(_write(tmp_path, f"{base}blocks = {blocks}\n"))


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("microbatches", 2.0, r"\[training\]: 'microbatches' must be an integer >= 1, got 2.0"),
        ("chunks", True, r"'chunks' must be an integer >= 1, got True"),
        ("zero_stage", True, r"'zero_stage' must be one of 0, 1, 2, got True"),
        ("zero_stage", 3, r"'zero_stage' must be one of 0, 1, 2, got 3"),
        ("execution", "weight-sharing", r"'execution' must be one of 'weight-stationary'"),
        ("dp_bucket_bytes", "25MiB", r"'dp_bucket_bytes' must be a finite number > 0"),
        ("placement", 3, r"'placement' must be a string such as 'mp-pp-dp', got 3"),
        ("strategy", 4, r"'strategy' must be a string"),
        ("colour", "red", r"unknown key\(s\) \['colour'\]"),
    ],
)
def test_bad_training_table(key, value, message):
    with pytest.raises(ValueError, match=message) as info:
        config_from_table({key: value}, "w.toml [training]")
    assert str(info.value).startswith("w.toml [training]")


def test_config_rules_also_hold_for_the_python_api():
    with pytest.raises(ValueError, match="microbatches must be an integer >= 1, got 2.0"):
        TrainingConfig(microbatches=2.0)
    with pytest.raises(ValueError, match="dp_bucket_bytes must be a finite number > 0"):
        TrainingConfig(dp_bucket_bytes=True)


@pytest.mark.parametrize("name", shipped_workloads())
def test_shipped_workloads_and_their_training_tables_load(name):
    wl = load_workload(name)
    raw = tomllib.loads((DATA_DIR / f"{name}.toml").read_text())
    assert wl.training == raw.get("training", {})
    cfg = config_from_table(wl.training)
    for k, v in raw.get("training", {}).items():
        got = getattr(cfg, k)
        assert (str(got) if k == "strategy" else got) == v


@pytest.mark.parametrize(
    ("sweep", "message"),
    [
        ('microbatches = "PP"', r"'microbatches' must be \"pp\" or a table"),
        ('microbatches = { "2" = 2.5 }', r"microbatches.2 must be an integer >= 1, got 2.5"),
        ('microbatches = { "x" = 2 }', r"microbatches keys are PP degrees, got 'x'"),
        ("samples_per_replica = true", r"'samples_per_replica' must be an integer >= 1"),
    ],
)
def test_bad_sweep_table(tmp_path, sweep, message):
    p = _write(tmp_path, TRANSFORMER.format(**GOOD_T) + f"[sweep]\n{sweep}\n")
    with pytest.raises(WorkloadError, match=message) as info:
        load_workload(p)
    assert str(info.value).startswith(f"{p} [sweep]: ")
