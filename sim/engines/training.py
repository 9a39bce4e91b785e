"""Training-iteration estimates on wafer fabrics: the public API of the training model.

    from fredfab.sim.engines.training import estimate, compare, sweep, format_compare_table

    est = estimate("transformer-17b", "fred-d")            # the workload's default strategy
    est.time, est.breakdown, est.memory.describe()
    res = compare("transformer-17b", timing_card="build/timing/fred.json")
    print(format_compare_table(res))
    sw = sweep("transformer-17b")                          # every MP x DP x PP, every fabric

The iteration is a task graph (fredfab.model.training.iteration) whose collective times come
from the network simulator (fredfab.sim.engines.system.simulate), each distinct set of concurrent
collectives simulated once per fabric and memoised. See docs/training-model.md.
"""

from __future__ import annotations

import math
import os
import sys
import time as _time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fredfab.model.system import CollectiveRequest, Fabric, Strategy, load_fabric
from fredfab.model.training.config import NPU, TrainingConfig, config_from_table
from fredfab.model.training.iteration import stationary, streaming
from fredfab.model.training.memory import MemoryReport, choose_policy
from fredfab.model.training.parallel import Layout, factorizations, split_stages
from fredfab.model.training.timeline import CATEGORIES
from fredfab.model.training.workload import Workload, load_workload
from fredfab.sim.engines.system import simulate

#: The fabrics `fred compare` and `fred sweep` run by default: the paper's baseline and
#: its four FRED variants (fred-reference.md section 3).
DEFAULT_FABRICS = ("mesh-5x4", "fred-a", "fred-b", "fred-c", "fred-d")
#: Breakdown labels, in table order.
LABELS = {
    "compute": "compute",
    "bubble": "bubble",
    "input": "input",
    "dp": "DP",
    "mp": "MP",
    "pp": "PP",
    "weights": "weights",
}


# ---------------------------------------------------------------------- collectives
class SimComm:
    """Collective times from the network simulator, memoised per set of concurrent requests.

    Group members are put in ring order: on a mesh, the snake (boustrophedon) order of the
    grid, so that consecutive members are neighbours where the group allows it; on a tree,
    NPU order (members under one L1 switch are consecutive). Point-to-point pairs keep their
    order."""

    def __init__(self, fabric: Fabric, chunks: int = 2) -> None:
        self.fabric = fabric
        self.chunks = chunks
        self.cache: dict[tuple, float] = {}
        self.fallbacks: set[str] = set()
        self.calls = 0
        if fabric.routing == "xy":
            rank = {
                u: (fabric.nodes[u].y, fabric.nodes[u].x * (-1 if fabric.nodes[u].y % 2 else 1))
                for u in fabric.npus
            }
        else:
            rank = {u: (0, u) for u in fabric.npus}
        self._rank = rank

    def order(self, group: Sequence[int]) -> tuple[int, ...]:
        return tuple(sorted(group, key=self._rank.__getitem__))

    def time(self, op: str, groups: Sequence[tuple[int, ...]], sizes: Sequence[float]) -> float:
        if op != "p2p":
            groups = [self.order(g) for g in groups]
        key = (op, tuple(map(tuple, groups)), tuple(float(s) for s in sizes))
        t = self.cache.get(key)
        if t is None:
            reqs = [
                CollectiveRequest(op, g, s)
                for g, s in zip(groups, sizes, strict=True)
                if s > 0 and (len(g) > 1 or op.startswith("io-"))
            ]
            if not reqs:
                t = 0.0
            else:
                res = simulate(self.fabric, reqs, chunks=self.chunks)
                self.calls += 1
                t = res.time
                self.fallbacks.update(res.fallbacks)
            self.cache[key] = t
        return t


# ---------------------------------------------------------------------- estimate
@dataclass(frozen=True)
class Estimate:
    workload: str
    fabric: str
    strategy: str
    execution: str
    status: str  # "ok", "does-not-fit" or "invalid"
    reason: str = ""
    time: float | None = None  # seconds per iteration
    breakdown: dict[str, float] = field(default_factory=dict)  # seconds on the critical path
    memory: MemoryReport | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    minibatch: int = 0
    compute_busy: float = 0.0  # the busiest NPU's compute seconds
    timing_card: str = ""
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def throughput(self) -> float | None:
        """Samples per second."""
        return self.minibatch / self.time if self.ok and self.time else None

    def to_dict(self) -> dict:
        return {
            "workload": self.workload,
            "fabric": self.fabric,
            "strategy": self.strategy,
            "execution": self.execution,
            "status": self.status,
            "reason": self.reason,
            "time_s": self.time,
            "breakdown_s": dict(self.breakdown),
            "exposed_comm_s": (self.time - self.breakdown.get("compute", 0.0))
            if self.time is not None
            else None,
            "compute_busy_s": self.compute_busy,
            "minibatch": self.minibatch,
            "samples_per_s": self.throughput,
            "memory": self.memory.to_dict() if self.memory else None,
            "settings": dict(self.settings),
            "timing_card": self.timing_card,
            "notes": list(self.notes),
        }


_FABRICS: dict[tuple, tuple[Fabric, SimComm]] = {}


def clear_cache() -> None:
    """Forget loaded fabrics and memoised collective times (benchmarks measure cold runs)."""
    _FABRICS.clear()


def _fabric(spec: str | Path | Fabric, timing_card: str | Path | None, chunks: int):
    if isinstance(spec, Fabric):
        key = (id(spec), chunks)
        hit = _FABRICS.get(key)
        if hit is None or hit[0] is not spec:
            hit = _FABRICS[key] = (spec, SimComm(spec, chunks))
        return hit
    tc = None if timing_card is None else str(Path(timing_card).resolve())
    mt = Path(tc).stat().st_mtime if tc and Path(tc).is_file() else None
    key = (str(spec), tc, mt, chunks)
    hit = _FABRICS.get(key)
    if hit is None:
        fab = load_fabric(spec, timing_card=timing_card)
        hit = _FABRICS[key] = (fab, SimComm(fab, chunks))
    return hit


def _workload(spec: str | Path | Workload) -> Workload:
    return spec if isinstance(spec, Workload) else load_workload(spec)


def resolve_config(
    wl: Workload, strategy: str | Strategy | None = None, sweep: bool = False, **over: Any
) -> TrainingConfig:
    """The workload's [training] defaults (with its [sweep] batch and microbatch rule when
    ``sweep``) and explicit overrides (None = keep)."""
    table = dict(wl.training)
    if strategy is not None:
        table["strategy"] = strategy if isinstance(strategy, str) else str(strategy)
    if sweep:
        sw = wl.sweep
        if "samples_per_replica" in sw:
            table["samples_per_replica"] = sw["samples_per_replica"]
        st = Strategy.parse(table["strategy"]) if isinstance(table.get("strategy"), str) else None
        rule = sw.get("microbatches", "pp")
        if st is not None and "microbatches" not in over:
            if rule == "pp":
                table["microbatches"] = st.pp
            elif isinstance(rule, dict):
                table["microbatches"] = int(rule.get(str(st.pp), st.pp))
            else:
                raise ValueError(f'{wl.source}: [sweep] microbatches must be "pp" or a table')
    return config_from_table(table, f"{wl.source} [training]", **over)


def estimate(
    workload: str | Path | Workload,
    fabric: str | Path | Fabric,
    strategy: str | Strategy | None = None,
    *,
    npu: NPU | None = None,
    timing_card: str | Path | None = None,
    sweep_settings: bool = False,
    **overrides: Any,
) -> Estimate:
    """Estimate one training iteration of ``workload`` on ``fabric``.

    ``strategy`` (e.g. "MP2-DP5-PP2") and ``overrides`` (TrainingConfig fields: execution,
    microbatches, samples_per_replica, zero_stage, placement, recompute, accumulation,
    pipeline, chunks, ...) replace the workload's [training] defaults; ``sweep_settings``
    uses its [sweep] batch and microbatch rule. Strategies that cannot apply raise
    ValueError; strategies that do not fit in memory return status "does-not-fit".
    """
    wl = _workload(workload)
    npu = npu or NPU()
    cfg = resolve_config(wl, strategy, sweep=sweep_settings, **overrides)
    fab, comm = _fabric(fabric, timing_card, cfg.chunks)
    st = cfg.strategy
    problem = applicable(wl, cfg, fab.num_npus)
    if problem:
        raise ValueError(problem)
    layout = Layout(st, cfg.placement)
    a = wl.arrays()
    ranges = (
        split_stages(a["fwd_flops"] + a["bwd_flops"] + 1.0, st.pp)
        if cfg.execution == "weight-stationary"
        else [(0, wl.num_layers)]
    )
    mem = choose_policy(wl, cfg, npu, ranges)
    card = fab.timing.card.source or fab.timing.card.simulator if fab.switches else ""
    base = dict(
        workload=wl.name,
        fabric=fab.name,
        strategy=str(st),
        execution=cfg.execution,
        memory=mem,
        settings=_settings(cfg, mem),
        minibatch=cfg.minibatch,
        timing_card=card,
    )
    if not mem.fits:
        return Estimate(status="does-not-fit", reason=mem.describe(), **base)
    if cfg.execution == "weight-stationary":
        tl = stationary(wl, cfg, npu, layout, comm, ranges, mem.recompute)
    else:
        tl = streaming(wl, cfg, npu, layout, comm, mem.recompute, mem.accumulation)
    sch = tl.schedule()
    busy = max(
        (v for k, v in _compute_busy(tl, sch).items()),
        default=0.0,
    )
    return Estimate(
        status="ok",
        time=sch.makespan,
        breakdown={k: sch.breakdown[k] for k in CATEGORIES},
        compute_busy=busy,
        notes=tuple(sorted(comm.fallbacks)),
        **base,
    )


def _compute_busy(tl, sch) -> dict[str, float]:
    out: dict[str, float] = {}
    for task in tl.tasks:
        if task.resource.startswith("stage"):
            out[task.resource] = out.get(task.resource, 0.0) + sum(
                d for c, d in task.parts if c == "compute"
            )
    return out


def _settings(cfg: TrainingConfig, mem: MemoryReport) -> dict[str, Any]:
    return {
        "samples_per_replica": cfg.samples_per_replica,
        "microbatches": cfg.microbatches,
        "zero_stage": cfg.zero_stage,
        "placement": cfg.placement,
        "pipeline": cfg.pipeline,
        "recompute": mem.recompute,
        "accumulation": mem.accumulation,
        "chunks": cfg.chunks,
    }


def applicable(wl: Workload, cfg: TrainingConfig, npus: int) -> str:
    """Why a strategy cannot run this workload on ``npus`` NPUs ("" if it can)."""
    st = cfg.strategy
    if st.workers != npus:
        return (
            f"strategy {st} uses {st.workers} NPUs; the fabric has {npus} "
            "(MP x DP x PP must equal it)"
        )
    if wl.mp_divides is not None and wl.mp_divides % st.mp:
        return f"MP {st.mp} does not divide the model ({wl.mp_divides} heads or channels)"
    if st.pp > wl.num_layers:
        return f"PP {st.pp} exceeds the {wl.num_layers} layers"
    if cfg.execution == "weight-stationary" and cfg.accumulation > 1:
        return "accumulation passes apply to weight-streaming only"
    return ""


# ---------------------------------------------------------------------- compare
@dataclass(frozen=True)
class CompareResult:
    workload: str
    strategy: str
    estimates: tuple[Estimate, ...]
    baseline: str  # fabric the speedups are relative to

    def speedup(self, e: Estimate) -> float | None:
        base = next((x for x in self.estimates if x.fabric == self.baseline), None)
        if base is None or not base.ok or not e.ok or not e.time:
            return None
        return base.time / e.time

    def to_dict(self) -> dict:
        return {
            "workload": self.workload,
            "strategy": self.strategy,
            "baseline": self.baseline,
            "fabrics": [dict(e.to_dict(), speedup=self.speedup(e)) for e in self.estimates],
        }


def compare(
    workload: str | Path | Workload = "transformer-17b",
    timing_card: str | Path | None = None,
    *,
    fabrics: Iterable[str | Path] = DEFAULT_FABRICS,
    strategy: str | Strategy | None = None,
    npu: NPU | None = None,
    **overrides: Any,
) -> CompareResult:
    """One estimate per fabric (default: mesh and FRED-A..D), speedups over the first.

    ``timing_card`` (a JSON file in model/timing_card.py's schema, e.g. the card co-simulation
    writes to build/timing/<variant>.json) replaces the switch timing of every FRED fabric."""
    wl = _workload(workload)
    fabs = list(fabrics)
    out = tuple(
        estimate(wl, f, strategy, npu=npu, timing_card=timing_card, **overrides) for f in fabs
    )
    st = out[0].strategy if out else str(strategy)
    return CompareResult(wl.name, st, out, out[0].fabric if out else "")


def format_compare_table(result: CompareResult) -> str:
    """The compare table: time per iteration, breakdown (ms on the critical path) and
    speedup over the baseline, one row per fabric."""
    cats = list(LABELS)
    lines = [
        f"{result.workload}, {result.strategy}: time per iteration and its breakdown (ms), "
        "seen from the busiest NPU"
    ]
    head = f"{'fabric':<10}{'time ms':>11}" + "".join(f"{LABELS[c]:>10}" for c in cats)
    head += f"{'speedup':>9}"
    lines += [head, "-" * len(head)]
    for e in result.estimates:
        if not e.ok:
            lines.append(f"{e.fabric:<10}  {e.status}: {e.reason}")
            continue
        sp = result.speedup(e)
        row = f"{e.fabric:<10}{e.time * 1e3:>11.2f}"
        row += "".join(f"{e.breakdown[c] * 1e3:>10.2f}" for c in cats)
        row += f"{sp:>8.2f}x" if sp is not None else f"{'-':>9}"
        lines.append(row)
    ok = [e for e in result.estimates if e.ok]
    if ok:
        e0 = ok[0]
        s = e0.settings
        lines.append(
            f"minibatch {e0.minibatch}, {s['microbatches']} microbatch(es), "
            f"ZeRO-{s['zero_stage']}, {e0.execution}, recompute {s['recompute']}, "
            f"accumulation {s['accumulation']}"
        )
    cards = sorted({e.timing_card for e in result.estimates if e.timing_card})
    if cards:
        lines.append(f"switch timing card: {', '.join(cards)}")
    for e in result.estimates:
        for n in e.notes:
            lines.append(f"  {e.fabric}: {n}")
    return "\n".join(lines)


def plot_compare(result: CompareResult, path: str | Path) -> Path:
    """Stacked bars of the breakdown per fabric (PNG or SVG by suffix)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(path)
    if out.suffix not in (".png", ".svg"):
        raise ValueError(f"plot file {out}: use a .png or .svg name")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    names = [e.fabric for e in result.estimates]
    bottom = np.zeros(len(names))
    for c in LABELS:
        vals = np.array([e.breakdown.get(c, 0.0) * 1e3 if e.ok else 0.0 for e in result.estimates])
        if vals.any():
            ax.bar(names, vals, bottom=bottom, label=LABELS[c])
            bottom += vals
    for i, e in enumerate(result.estimates):
        if not e.ok:
            ax.text(i, 0, "does not fit", rotation=90, ha="center", va="bottom", fontsize=8)
        elif (sp := result.speedup(e)) is not None:
            ax.text(i, bottom[i], f"{sp:.2f}x", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("time per iteration (ms)")
    ax.set_title(f"{result.workload}, {result.strategy}")
    ax.legend(fontsize="small", ncol=3)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out


# ---------------------------------------------------------------------- sweep
@dataclass(frozen=True)
class SweepResult:
    workload: str
    estimates: tuple[Estimate, ...]
    invalid: tuple[tuple[str, str], ...]  # (strategy, reason) that apply nowhere

    def best(self) -> dict[str, Estimate]:
        """Per fabric, the strategy with the highest throughput (samples/s): strategies differ
        in minibatch (DP x samples per replica), so time per iteration is not comparable."""
        out: dict[str, Estimate] = {}
        for e in self.estimates:
            if e.ok and (e.fabric not in out or e.throughput > out[e.fabric].throughput):
                out[e.fabric] = e
        return out

    def spread(self) -> dict[str, float]:
        """Per fabric: best / worst throughput among strategies that fit."""
        out: dict[str, float] = {}
        for f in dict.fromkeys(e.fabric for e in self.estimates):
            ts = [e.throughput for e in self.estimates if e.fabric == f and e.ok]
            if ts:
                out[f] = max(ts) / min(ts)
        return out

    def to_dict(self) -> dict:
        return {
            "workload": self.workload,
            "best": {f: e.to_dict() for f, e in self.best().items()},
            "spread": self.spread(),
            "invalid": [{"strategy": s, "reason": r} for s, r in self.invalid],
            "estimates": [e.to_dict() for e in self.estimates],
        }


def _sweep_task(args: tuple) -> dict:
    wl_spec, fab_spec, card, st, npu, over = args
    try:
        e = estimate(wl_spec, fab_spec, st, npu=npu, timing_card=card, sweep_settings=True, **over)
    except ValueError as exc:
        return {"strategy": st, "fabric": str(fab_spec), "invalid": str(exc)}
    return {"estimate": e}


def sweep(
    workload: str | Path | Workload,
    *,
    fabrics: Iterable[str | Path] = DEFAULT_FABRICS,
    timing_card: str | Path | None = None,
    npu: NPU | None = None,
    processes: int | None = None,
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    **overrides: Any,
) -> SweepResult:
    """Every MP x DP x PP factorisation of the NPU count on every fabric.

    Runs in ``processes`` worker processes (default: one per CPU; 1 = in this process), or
    on a Dask cluster when ``scheduler`` is its address (e.g. "tcp://host:8786"; needs the
    ``cluster`` extra, and workers that can import fredfab and read the workload and fabric
    files). ``progress(done, total)`` is called as results arrive."""
    wl = _workload(workload)
    fabs = [str(f) for f in fabrics]
    n = load_fabric(fabs[0]).num_npus
    strategies = [str(s) for s in factorizations(n)]
    # Shipped workloads go by name (cheap to send); others as the parsed object.
    wl_spec: Any = (
        wl.name if Path(wl.source).parent == Path(load_workload.__globals__["DATA_DIR"]) else wl
    )
    tasks = [(wl_spec, f, timing_card, s, npu, overrides) for f in fabs for s in strategies]
    results: list[dict] = [None] * len(tasks)  # type: ignore[list-item]
    total = len(tasks)
    done = 0

    def tick():
        if progress:
            progress(done, total)

    if scheduler:
        try:
            from distributed import Client
            from distributed import as_completed as dask_completed
        except ImportError as exc:  # pragma: no cover - depends on the extra
            raise ValueError(
                "a Dask scheduler needs the 'cluster' extra: pip install 'fred-fabric[cluster]'"
            ) from exc
        with Client(scheduler) as client:
            futs = client.map(_sweep_task, tasks, pure=False)
            index = {f.key: i for i, f in enumerate(futs)}
            for fut in dask_completed(futs):
                results[index[fut.key]] = fut.result()
                done += 1
                tick()
    elif (processes or os.cpu_count() or 1) > 1 and total > 1:
        workers = processes or os.cpu_count() or 1
        # One chunk of strategies per fabric and worker keeps the per-process memo useful.
        with ProcessPoolExecutor(max_workers=workers) as ex:
            futs = {ex.submit(_sweep_task, t): i for i, t in enumerate(tasks)}
            for fut in as_completed(futs):
                results[futs[fut]] = fut.result()
                done += 1
                tick()
    else:
        for i, t in enumerate(tasks):
            results[i] = _sweep_task(t)
            done += 1
            tick()
    ests = tuple(r["estimate"] for r in results if "estimate" in r)
    bad: dict[str, str] = {}
    for r in results:
        if "invalid" in r:
            bad.setdefault(r["strategy"], r["invalid"])
    return SweepResult(wl.name, ests, tuple(bad.items()))


def format_sweep_table(result: SweepResult) -> str:
    lines = [
        f"{result.workload}: every MP x DP x PP strategy on every fabric "
        "(training throughput, samples/s; minibatch = DP x samples per replica)"
    ]
    fabs = list(dict.fromkeys(e.fabric for e in result.estimates))
    strategies = list(dict.fromkeys(e.strategy for e in result.estimates))
    cell = {(e.fabric, e.strategy): e for e in result.estimates}
    head = f"{'strategy':<16}{'batch':>6}{'ubatch':>7}" + "".join(f"{f:>11}" for f in fabs)
    lines += [head, "-" * len(head)]
    best = result.best()
    for s in strategies:
        any_e = next(e for e in result.estimates if e.strategy == s)
        row = f"{s:<16}{any_e.minibatch:>6}{any_e.settings['microbatches']:>7}"
        for f in fabs:
            e = cell.get((f, s))
            if e is None:
                txt = "-"
            elif not e.ok:
                txt = "no fit"
            else:
                txt = f"{e.throughput:.2f}" + ("*" if best.get(f) is e else "")
            row += f"{txt:>11}"
        lines.append(row)
    lines.append("* best strategy per fabric; 'no fit': exceeds HBM capacity")
    spread = result.spread()
    for f, e in best.items():
        lines.append(
            f"best on {f}: {e.strategy}, {e.throughput:.2f} samples/s, "
            f"{e.time * 1e3:.1f} ms per iteration (worst fitting strategy: "
            f"{spread[f]:.2f}x lower throughput)"
        )
    for s, r in result.invalid:
        lines.append(f"not applicable: {s}: {r}")
    return "\n".join(lines)


def plot_sweep(result: SweepResult, path: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(path)
    if out.suffix not in (".png", ".svg"):
        raise ValueError(f"plot file {out}: use a .png or .svg name")
    out.parent.mkdir(parents=True, exist_ok=True)
    fabs = list(dict.fromkeys(e.fabric for e in result.estimates))
    strategies = list(dict.fromkeys(e.strategy for e in result.estimates))
    fig, ax = plt.subplots(figsize=(max(6.4, 0.5 * len(strategies) + 2), 4.0))
    width = 0.8 / max(len(fabs), 1)
    for k, f in enumerate(fabs):
        ys = []
        for s in strategies:
            e = next((x for x in result.estimates if x.fabric == f and x.strategy == s), None)
            ys.append(e.throughput if e is not None and e.ok else math.nan)
        xs = np.arange(len(strategies)) + (k - (len(fabs) - 1) / 2) * width
        ax.bar(xs, ys, width, label=f)
    ax.set_xticks(range(len(strategies)), strategies, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("training throughput (samples/s)")
    ax.set_title(f"{result.workload}: strategy sweep (missing bars: does not fit)")
    ax.legend(fontsize="small", ncol=min(len(fabs), 5))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out


class Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, label: str, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.label = label
        self.on = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = _time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        if not self.on:
            return
        w = 30
        k = int(w * done / max(total, 1))
        el = _time.perf_counter() - self.t0
        self.stream.write(f"\r{self.label} [{'#' * k}{'.' * (w - k)}] {done}/{total} {el:.0f}s")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()
