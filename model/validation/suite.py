"""Validation data: measured runs of real systems, each with its source and the system and
workload that model it (schema ``fred-validation/1``, files in data/).

A file is one dataset (one published table or log) of one kind:

* ``training``: transformer training runs (Megatron-LM). ``[system]`` names the NPU and the
  fabric file (relative to the data file; a ``[dims]`` cluster whose last dimension is the
  node count, set per point from ``gpus / gpus_per_node``), and optionally
  ``kernel_efficiency_factor``: the calibrated ratio of this software's GEMM efficiency to
  that of the NPU file's (fredfab.model.validation.calibration, ``software_2022_factor``);
  ``[defaults]`` holds what every
  point shares (sequence, vocabulary, FlashAttention, recomputation, sequence parallelism,
  placement, ZeRO stage, microbatch, DP overlap); a point gives the model's shape (heads,
  hidden, layers), the parallelism (tensor, pipeline, gpus; data-parallel = the rest), the
  global batch, microbatch, virtual_stages (interleaved 1F1B) and the measured quantity:
  ``tflops_per_gpu`` (with ``flops = "megatron-sc21"``) or ``mfu`` (``"korthikanti-2022"``),
  turned into seconds per iteration with the publication's own FLOP count (FLOP_COUNTS).
* ``collective``: one collective ``op`` over ``ranks`` GPUs (``nodes``, default 1) of
  ``size`` bytes each, measured ``time_us``.

Every point says where it comes from (``source``) and whether it belongs to the calibration
subset (``calibration = true``, with ``fits`` naming the parameters it calibrates: see
fredfab.model.validation.calibration); the others are only checked. A point's ``precision`` is
half a unit of the last digit the source prints, relative to the value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fredfab.model.errors import InputError
from fredfab.model.toml_fields import REQUIRED, Table, read_toml
from fredfab.model.training.npu_files import load_npu

SCHEMA = "fred-validation/1"
DATA_DIR = Path(__file__).with_name("data")
KINDS = ("training", "collective")


class ValidationDataError(InputError):
    """A validation file that is malformed."""


def _megatron_sc21(p: Mapping[str, Any]) -> float:
    """Narayanan et al., SC'21, eq. 3 (recomputation counted): 96 B s l h^2 (1 + s/6h +
    V/16lh)."""
    B, s, L, h, V = p["batch"], p["seq"], p["layers"], p["hidden"], p["vocab"]
    return 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))


def _korthikanti_2022(p: Mapping[str, Any]) -> float:
    """Korthikanti et al., 2022, sec. 6.3 (model FLOPs, no recomputation): 72 B s l h^2
    (1 + s/6h + V/12lh)."""
    B, s, L, h, V = p["batch"], p["seq"], p["layers"], p["hidden"], p["vocab"]
    return 72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h))


#: FLOPs of one iteration as each publication counts them (the number its FLOP/s divide).
FLOP_COUNTS: dict[str, Callable[[Mapping[str, Any]], float]] = {
    "megatron-sc21": _megatron_sc21,
    "korthikanti-2022": _korthikanti_2022,
}
MEASURES = {"training": ("tflops_per_gpu", "mfu"), "collective": ("time_us",)}

_TOP = {
    "schema",
    "name",
    "kind",
    "description",
    "source",
    "measured",
    "flops",
    "op",
    "system",
    "defaults",
    "points",
}
_SYSTEM = {"npu", "fabric", "gpus_per_node", "kernel_efficiency_factor"}
_SHAPE = ("heads", "hidden", "layers", "seq", "vocab")
_PARALLEL = ("tensor", "pipeline", "gpus", "batch", "microbatch", "virtual_stages")
_TRAINING_FLAGS = ("flash_attention", "sequence_parallel", "dp_overlap")
_TRAINING_CHOICES = {
    "recompute": ("none", "selective", "full"),
    "placement": ("mp-pp-dp", "mp-dp-pp"),
}
_TRAINING_KEYS = {*_SHAPE, *_PARALLEL, *_TRAINING_FLAGS, *_TRAINING_CHOICES, "zero_stage"}
_POINT_COMMON = {"name", "calibration", "fits", "source"}
_COLLECTIVE_KEYS = {"size", "ranks", "nodes"}


@dataclass(frozen=True)
class Point:
    dataset: str
    name: str
    kind: str
    measured: float  # seconds (an iteration, or a collective)
    precision: float  # relative: half a unit of the source's last printed digit
    calibration: bool
    fits: tuple[str, ...]
    source: str
    #: The run: for training the merged [defaults] and point keys, for collectives size,
    #: ranks and nodes; plus the measured value as published (``value``).
    run: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.dataset}/{self.name}"


@dataclass(frozen=True)
class Dataset:
    name: str
    kind: str
    description: str
    source: str
    file: Path
    npu: str  # NPU name or file (training)
    fabric: Path
    gpus_per_node: int
    measure: str  # tflops_per_gpu, mfu or time_us
    op: str = ""  # collective datasets
    points: tuple[Point, ...] = ()
    #: The frozen software factor of the file's [system] (None: the NPU file's software).
    kernel_efficiency_factor: float | None = None


def shipped_datasets() -> list[Path]:
    return sorted(DATA_DIR.glob("*.toml"))


def load_suite(paths: list[str | Path] | None = None) -> list[Dataset]:
    """The datasets of ``paths`` (default: every shipped file, data/*.toml)."""
    return [load_dataset(p) for p in (paths or shipped_datasets())]


def load_dataset(path: str | Path) -> Dataset:
    path = Path(path)
    return dataset_from_dict(read_toml(path, ValidationDataError, "the dataset"), path)


def _check_fabric(path: Path, where: str) -> None:
    """A dataset's fabric: a fabric file in the [dims] form whose last dimension is the
    nodes' (the validation sizes it to each point's nodes, or drops it for one node)."""
    from fredfab.model.system.elements import FabricError
    from fredfab.model.system.loader import YAML_SUFFIXES, fabric_from_dict

    if path.suffix.lower() in YAML_SUFFIXES:
        raise ValidationDataError(
            f"{where}: fabric {path}: an ASTRA-sim network file; the validation needs a TOML "
            "fabric file with [dims], the nodes' dimension last"
        )
    try:  # the file read once, checked as load_fabric checks a TOML fabric
        data = read_toml(path, FabricError, "the fabric")
        fabric_from_dict(data, source=str(path), base=path.parent)
    except InputError as exc:
        raise ValidationDataError(f"{where}: fabric: {exc}") from None
    dims = data.get("dims")
    if not isinstance(dims, Mapping) or len(dims.get("npus_count", ())) < 2:
        raise ValidationDataError(
            f"{where}: fabric {path}: must give [dims] of two dimensions or more, the nodes' last"
        )


def dataset_from_dict(data: Mapping[str, Any], path: Path) -> Dataset:
    where = str(path)
    top = Table.read(data, where, _TOP, ValidationDataError)
    if data.get("schema") != SCHEMA:
        raise ValidationDataError(
            f"{where}: 'schema' must be {SCHEMA!r}, got {data.get('schema')!r}"
        )
    name = top.string("name", nonempty=True)
    kind = top.string("kind", choices=KINDS)
    sysd = top.table("system", _SYSTEM)
    fabric = path.parent / sysd.string("fabric", nonempty=True)
    if not fabric.is_file():
        raise ValidationDataError(f"{sysd.where}: fabric file {fabric} does not exist")
    _check_fabric(fabric, sysd.where)
    npu = sysd.string("npu", "" if kind == "collective" else REQUIRED)
    per_node = sysd.integer("gpus_per_node", lo=1)
    factor = sysd.number("kernel_efficiency_factor", None, lo=0, lo_open=True)
    measure = top.string("measured", "time_us", choices=MEASURES[kind])
    flops = top.string("flops", "", choices=(*FLOP_COUNTS, "")) if kind == "training" else ""
    if kind == "training" and not flops:
        raise ValidationDataError(f"{where}: 'flops' must name the publication's FLOP count")
    op = top.string("op", "") if kind == "collective" else ""
    defaults = top.table("defaults", _TRAINING_KEYS if kind == "training" else set())
    allowed = (
        _POINT_COMMON | _TRAINING_KEYS | {measure}
        if kind == "training"
        else _POINT_COMMON | _COLLECTIVE_KEYS | {measure}
    )
    points = []
    names: set[str] = set()
    for t in top.tables("points", allowed):
        run = dict(defaults.data)
        run.update({k: v for k, v in t.data.items() if k not in _POINT_COMMON})
        rt = Table(run, t.where, ValidationDataError)
        pname = t.string("name", nonempty=True)
        if pname in names:
            raise ValidationDataError(f"{t.where}: point name {pname!r} used twice")
        names.add(pname)
        value = rt.number(measure, lo=0, lo_open=True)
        if kind == "training":
            _check_training(rt, per_node)
            run["value"] = value
            measured, precision = _training_time(run, measure, flops, npu, value)
        else:
            rt.integer("size", lo=1)
            rt.integer("ranks", lo=2)
            rt.integer("nodes", 1, lo=1)
            run.setdefault("nodes", 1)
            run["value"] = value
            measured = value * 1e-6
            precision = _half_digit(t.data[measure]) / value
        cal = t.boolean("calibration", False)
        fits = tuple(t.string("fits", "").split())
        if cal and not fits:
            raise ValidationDataError(f"{t.where}: a calibration point names what it 'fits'")
        if fits and not cal:
            raise ValidationDataError(f"{t.where}: 'fits' is for calibration points only")
        _check_fits(fits, t.where)
        points.append(
            Point(
                name,
                pname,
                kind,
                measured,
                precision,
                cal,
                fits,
                t.string("source", nonempty=True),
                run,
            )
        )
    return Dataset(
        name,
        kind,
        top.string("description", ""),
        top.string("source", nonempty=True),
        path,
        npu,
        fabric,
        per_node,
        measure,
        op,
        tuple(points),
        factor,
    )


def _check_fits(fits: tuple[str, ...], where: str) -> None:
    """Each name in a point's ``fits`` is a calibrated parameter."""
    # Imported here: the calibration module reads this one's DATA_DIR.
    from fredfab.model.validation.calibration import PARAMETERS

    for k in fits:
        if k not in PARAMETERS:
            raise ValidationDataError(
                f"{where}: 'fits' names {k!r}, not a calibrated parameter; they are "
                f"{', '.join(PARAMETERS)}"
            )


def _check_training(t: Table, per_node: int) -> None:
    for k in _SHAPE:
        t.integer(k, lo=1)
    for k in ("tensor", "pipeline", "gpus", "batch", "microbatch"):
        t.integer(k, lo=1)
    t.integer("virtual_stages", 1, lo=1)
    for k in _TRAINING_FLAGS:
        t.boolean(k)
    for k, choices in _TRAINING_CHOICES.items():
        t.string(k, choices=choices)
    t.integer("zero_stage", lo=0, hi=2)
    d = t.data
    mp = d["tensor"] * d["pipeline"]
    if d["gpus"] % mp:
        raise ValidationDataError(f"{t.where}: gpus {d['gpus']} is not a multiple of {mp}")
    dp = d["gpus"] // mp
    if d["batch"] % (dp * d["microbatch"]):
        raise ValidationDataError(
            f"{t.where}: batch {d['batch']} is not a multiple of DP {dp} x microbatch "
            f"{d['microbatch']}"
        )
    if d["gpus"] % per_node and d["gpus"] > per_node:
        raise ValidationDataError(f"{t.where}: gpus {d['gpus']} fill no whole number of nodes")


def _training_time(
    run: Mapping[str, Any], measure: str, flops: str, npu: str, value: float
) -> tuple[float, float]:
    """Seconds per iteration the published quantity stands for, and its relative precision."""
    f = FLOP_COUNTS[flops](run)
    if measure == "tflops_per_gpu":
        return f / (run["gpus"] * value * 1e12), 0.5 / value
    peak = load_npu(npu).peak_flops
    return f / (run["gpus"] * peak * value), 0.0005 / value


def _half_digit(raw: Any) -> float:
    """Half a unit of the last digit of a number as written (TOML keeps no digits: the
    float's shortest repr is taken, 18.75 -> 0.005, 85820 -> 0.5)."""
    text = repr(raw)
    if "e" in text or "E" in text:
        return abs(float(raw)) * 5e-4
    if "." in text:
        return 0.5 * 10 ** -len(text.split(".")[1])
    return 0.5
