"""Training-iteration estimates on wafer fabrics: the public API of the training model.

    from fredfab.sim.engines.training import estimate, compare, sweep

    est = estimate("transformer-17b", "fred-d")            # the workload's default strategy
    est.time, est.breakdown, est.memory.describe()
    res = compare("transformer-17b", timing_card="build/timing/fred.json")
    res.to_dict()
    sw = sweep("transformer-17b")                          # every MP x DP x PP, every fabric

Results are data; fredfab.sim.cli.report turns them into tables and plots.

The iteration is a task graph (fredfab.model.training.iteration) whose collective times come
from the network simulator (fredfab.sim.engines.system.simulate), each distinct set of concurrent
collectives simulated once per fabric and memoised. Every fabric's links carry packets, so
every communication time is divided by the payload share a packet header leaves
(fredfab.model.training.packet_rate); on fabrics with FRED switches the graph then follows
the switch's phase rule (MP > PP > DP per switch; fredfab.model.training.phase_priority).
See docs/training-model.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.errors import InputError
from fredfab.model.system import CollectiveRequest, Fabric, Strategy, load_fabric
from fredfab.model.timing_card import load_timing_card
from fredfab.model.timing_packet import PacketCosts
from fredfab.model.training.astra_workload import implied_strategy
from fredfab.model.training.config import NPU, TrainingConfig, config_from_table
from fredfab.model.training.iteration import stationary, streaming
from fredfab.model.training.memory import MemoryReport, choose_policy
from fredfab.model.training.packet_rate import at_payload_rate
from fredfab.model.training.parallel import Layout, factorizations, mp_split, split_stages
from fredfab.model.training.phase_priority import (
    PhaseRule,
    Prioritised,
    prioritise,
    tree_switches,
)
from fredfab.model.training.timeline import CATEGORIES, Timeline, exposed
from fredfab.model.training.workload import Workload
from fredfab.model.training.workload_files import is_shipped, load_workload
from fredfab.sim.engines import algorithm_choice
from fredfab.sim.engines.symmetric_groups import representatives
from fredfab.sim.engines.system import simulate
from fredfab.sim.worker_pool import worker_pool

#: The fabrics `fred compare` and `fred sweep` run by default: the paper's baseline and
#: its four FRED variants (paper §7.1-7.2, Table 5).
DEFAULT_FABRICS = ("mesh-5x4", "fred-a", "fred-b", "fred-c", "fred-d")


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
        """Seconds until every collective ``op`` over ``groups`` has finished: the network's
        time plus what the fabric's collective library adds (Fabric.library). On a fabric
        without I/O controllers (ASTRA-sim's networks) the I/O patterns take no time: such a
        system has no I/O phases (inputs come from the host, as on a GPU cluster)."""
        if CollectiveKind(op).uses_io and not self.fabric.ios:
            return 0.0
        if op != CollectiveKind.P2P:
            groups = [self.order(g) for g in groups]
        key = (op, tuple(map(tuple, groups)), tuple(float(s) for s in sizes))
        t = self.cache.get(key)
        if t is None:
            reqs = [
                CollectiveRequest(op, g, s)
                for g, s in zip(groups, sizes, strict=True)
                if s > 0 and (len(g) > 1 or CollectiveKind(op).uses_io)
            ]
            if not reqs:
                t = 0.0
            else:
                # Link-disjoint translations of one group: one simulation per class.
                reps = representatives(
                    self.fabric, [r.group for r in reqs], [r.size_bytes for r in reqs]
                )
                net = 0.0
                for batch in [reqs] if reps is None else [[reqs[i]] for i in reps]:
                    res = simulate(self.fabric, batch, chunks=self.chunks)
                    self.calls += 1
                    net = max(net, res.time)
                    self.fallbacks.update(res.fallbacks)
                # Costed as one collective: the largest group and message (the groups of a
                # phase are alike in the training model).
                ranks = max(len(r.group) for r in reqs)
                size = max(r.size_bytes for r in reqs)
                t = self.fabric.library.time(op, ranks, net, size)
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
    timing_card: str = ""  # the card's file, "built-in", or "" on a fabric without switches
    #: The switch timing that applied (SwitchTiming.to_dict: card, latency, clock); {} without
    #: switches.
    switch_timing: dict[str, Any] = field(default_factory=dict)
    #: On FRED fabrics, what the switch's phase rule did (phase_rule_summary); {} elsewhere.
    phase_rule: dict[str, Any] = field(default_factory=dict)
    #: Share of every link's rate that carries payload under packet headers and link-level
    #: retry, on every fabric whose links carry FRED's packets (PacketCosts.link_fraction of
    #: the card that applied; 1 elsewhere); communication times were divided by it.
    payload_fraction: float = 1.0
    notes: tuple[str, ...] = ()
    #: The NPU the estimate ran (its name and numbers).
    npu: dict[str, Any] = field(default_factory=dict)
    #: The fabric's collective library (CollectiveLibrary.to_dict).
    library: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def throughput(self) -> float | None:
        """Samples per second."""
        return self.minibatch / self.time if self.ok and self.time else None

    @property
    def fits(self) -> bool:
        """The strategy fits in HBM. False with status "ok" only for an estimate made with
        ``ignore_memory``; such an estimate is flagged wherever it is shown."""
        return self.memory is None or self.memory.fits

    @property
    def exposed(self) -> dict[str, float]:
        """Exposed communication per kind (mp, dp, pp, io), seconds; the bubble is not in it:
        time = compute + bubble + sum(exposed) (fredfab.model.training.timeline.exposed)."""
        return exposed(self.breakdown) if self.ok else {}

    @property
    def exposed_comm(self) -> float | None:
        """All exposed communication, seconds (the bubble apart)."""
        return sum(self.exposed.values()) if self.ok else None

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
            "exposed_comm_s": self.exposed_comm,
            "exposed_s": self.exposed,
            "bubble_s": self.breakdown.get("bubble") if self.ok else None,
            "fits": self.fits,
            "compute_busy_s": self.compute_busy,
            "minibatch": self.minibatch,
            "samples_per_s": self.throughput,
            "memory": self.memory.to_dict() if self.memory else None,
            "settings": dict(self.settings),
            "timing_card": self.timing_card,
            "switch_timing": dict(self.switch_timing),
            "phase_rule": dict(self.phase_rule),
            "payload_fraction": self.payload_fraction,
            "npu": dict(self.npu),
            "library": dict(self.library),
            "notes": list(self.notes),
        }


_FABRICS: dict[tuple, tuple[Fabric, SimComm]] = {}


def clear_cache() -> None:
    """Forget loaded fabrics and memoised collective times (benchmarks measure cold runs)."""
    _FABRICS.clear()
    _CARD_COSTS.clear()
    algorithm_choice.clear_cache()


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
                raise InputError(f'{wl.source}: [sweep] microbatches must be "pp" or a table')
    return config_from_table(table, f"{wl.source} [training]", **over)


@dataclass(frozen=True)
class Prepared:
    """What an estimate runs before its task graph: the resolved settings, the fabric with
    its memoised collective times, the 3D layout, the stages' layers and the memory policy
    (shared by ``estimate`` and the Chakra exporter, fredfab.sim.engines.chakra_export)."""

    workload: Workload
    cfg: TrainingConfig
    fabric: Fabric
    comm: SimComm
    layout: Layout
    ranges: list[tuple[int, int]]
    memory: MemoryReport
    base: dict[str, Any]  # the Estimate fields every outcome shares
    notes: tuple[str, ...]


def prepare(
    workload: str | Path | Workload,
    fabric: str | Path | Fabric,
    strategy: str | Strategy | None = None,
    *,
    npu: NPU | None = None,
    timing_card: str | Path | None = None,
    sweep_settings: bool = False,
    **overrides: Any,
) -> Prepared:
    """The settings, fabric, layout and memory policy of an estimate (see ``estimate``);
    ValueError when the strategy cannot apply."""
    wl = _workload(workload)
    npu = npu or NPU()
    cfg = resolve_config(wl, strategy, sweep=sweep_settings, **overrides)
    fab, comm = _fabric(fabric, timing_card, cfg.chunks)
    if strategy is None and "strategy" not in wl.training:
        # An ASTRA-sim workload describes one strategy, which depends on the NPU count.
        implied = implied_strategy(wl, fab.num_npus)
        if implied is not None:
            cfg = resolve_config(wl, implied, sweep=sweep_settings, **overrides)
    st = cfg.strategy
    problem = applicable(wl, cfg, fab.num_npus) or _streams_from(fab, cfg)
    if problem:
        raise InputError(problem)
    layout = Layout(st, cfg.placement)
    a = wl.arrays()
    ranges = (  # model chunks: PP x virtual_stages contiguous blocks, chunk k on stage k % PP
        split_stages(a["fwd_flops"] + a["bwd_flops"] + 1.0, st.pp * cfg.virtual_stages)
        if cfg.execution == "weight-stationary"
        else [(0, wl.num_layers)]
    )
    mem = choose_policy(wl, cfg, npu, ranges)
    base = dict(
        workload=wl.name,
        fabric=fab.name,
        strategy=str(st),
        execution=cfg.execution,
        memory=mem,
        settings=_settings(cfg, mem),
        minibatch=cfg.minibatch,
        timing_card=fab.timing.card.name if fab.switches else "",
        switch_timing=fab.timing.to_dict() if fab.has_fred_switches else {},
        npu=npu_summary(npu),
        library=fab.library.to_dict(),
    )
    notes = tuple(n for n in (mp_split(wl, st.mp).note(),) if n)
    return Prepared(wl, cfg, fab, comm, layout, ranges, mem, base, notes)


def iteration_timeline(prep: Prepared, npu: NPU, comm: Any = None) -> Timeline:
    """The iteration's task graph (before packet headers and the phase rule); ``comm``
    replaces the prepared collective costs (the exporter records them)."""
    comm = prep.comm if comm is None else comm
    wl, cfg, mem = prep.workload, prep.cfg, prep.memory
    if cfg.execution == "weight-stationary":
        return stationary(wl, cfg, npu, prep.layout, comm, prep.ranges, mem.recompute)
    return streaming(wl, cfg, npu, prep.layout, comm, mem.recompute, mem.accumulation)


def estimate(
    workload: str | Path | Workload,
    fabric: str | Path | Fabric,
    strategy: str | Strategy | None = None,
    *,
    npu: NPU | None = None,
    timing_card: str | Path | None = None,
    sweep_settings: bool = False,
    ignore_memory: bool = False,
    **overrides: Any,
) -> Estimate:
    """Estimate one training iteration of ``workload`` on ``fabric``.

    ``strategy`` (e.g. "MP2-DP5-PP2") and ``overrides`` (TrainingConfig fields: execution,
    microbatches, samples_per_replica, zero_stage, placement, recompute, accumulation,
    pipeline, chunks, ...) replace the workload's [training] defaults; ``sweep_settings``
    uses its [sweep] batch and microbatch rule. Strategies that cannot apply raise
    ValueError; strategies that do not fit in memory return status "does-not-fit", unless
    ``ignore_memory``: then they are estimated anyway (with the memory policy that needs the
    least HBM, the last one tried) and flagged (``Estimate.fits`` False, and a note).
    """
    npu = npu or NPU()
    prep = prepare(
        workload,
        fabric,
        strategy,
        npu=npu,
        timing_card=timing_card,
        sweep_settings=sweep_settings,
        **overrides,
    )
    fab, comm, mem, base = prep.fabric, prep.comm, prep.memory, prep.base
    notes = list(prep.notes)
    if not mem.fits:
        if not ignore_memory:
            return Estimate(status="does-not-fit", reason=mem.describe(), **base)
        notes.append(f"does not fit, estimated anyway (ignore memory): {mem.describe()}")
    tl = iteration_timeline(prep, npu)
    # The mesh's routers forward the same packets as FRED's switches (a header flit per
    # packet_flits payload flits) over the same links, whose link-level retry replays a
    # faulted flit: the header and the faults cost every fabric the same share of its
    # links, from the same card; charging them to FRED alone would bias the comparison.
    payload = payload_fraction(fab, timing_card)
    tl = at_payload_rate(tl, payload)
    rule_summary: dict[str, Any] = {}
    if fab.has_fred_switches:
        # FRED switches serve one phase at a time, MP > PP > DP (FRED only).
        rule = PhaseRule.from_timing(fab.timing)
        done = prioritise(tl, rule, _switches(fab))
        tl, rule_summary = done.timeline, phase_rule_summary(rule, done)
    sch = tl.schedule()
    if sch.makespan <= 0:  # every rate and speed-up of it would be 0 / 0
        raise InputError(
            f"{prep.workload.source or prep.workload.name}: its training iteration takes no "
            "time (no compute and no communication on any NPU): nothing to estimate"
        )
    busy = max(
        (v for k, v in _compute_busy(tl, sch).items()),
        default=0.0,
    )
    return Estimate(
        status="ok",
        time=sch.makespan,
        breakdown={k: sch.breakdown[k] for k in CATEGORIES},
        compute_busy=busy,
        phase_rule=rule_summary,
        payload_fraction=payload,
        notes=tuple(notes) + tuple(sorted(comm.fallbacks)),
        **base,
    )


def npu_summary(npu: NPU) -> dict[str, Any]:
    return {
        "name": npu.name,
        "peak_TFLOPS": npu.peak_flops / 1e12,
        "kernel_efficiency": npu.efficiency,
        "hbm_GBps": npu.hbm_bandwidth / 1e9,
        "hbm_efficiency": npu.hbm_efficiency,
        "hbm_GB": npu.hbm_bytes / 1e9,
        "gemm": None
        if npu.gemm is None
        else {
            "sms": npu.gemm.sms,
            "tiles": [f"{m}x{n}" for m, n in npu.gemm.tiles],
            "tile_k": npu.gemm.tile_k,
            "l2_GBps": npu.gemm.l2_bandwidth / 1e9,
        },
    }


def _streams_from(fab: Fabric, cfg: TrainingConfig) -> str:
    if cfg.execution == "weight-streaming" and not fab.ios:
        return (
            f"weight streaming needs I/O controllers to stream from; {fab.name} has none "
            "(use execution weight-stationary)"
        )
    return ""


def phase_rule_summary(rule: PhaseRule, done: Prioritised) -> dict[str, Any]:
    """The rule that applied and its effect over the whole iteration: seconds each class
    waited for higher ones (preemption costs included), seconds each class lost to the
    competing share while it stopped a lower one (both summed over tasks, so concurrent
    times add up) and how many preemptions there were."""

    def per_class(seconds: tuple[tuple[float, ...], ...]) -> dict[str, float]:
        out: dict[str, float] = {}
        for task, w in zip(done.timeline.tasks, seconds, strict=True):
            for (c, _), x in zip(task.parts, w, strict=True):
                if x > 0:
                    out[c] = out.get(c, 0.0) + x
        return out

    return {
        "preempt_s": rule.preempt_s,
        "switch_fraction": rule.switch_fraction,
        "competing_share": rule.competing_share,
        "waited_s": per_class(done.waited),
        "slowed_s": per_class(done.slowed),
        "preemptions": sum(done.preemptions),
    }


def payload_fraction(fab: Fabric, timing_card: str | Path | None = None) -> float:
    """The share of every link's rate that carries payload under packet headers and
    link-level retry, from the card that applies to ``fab`` (PacketCosts.link_fraction); 1
    on a fabric whose links carry no FRED packet headers (``Fabric.packet_headers``)."""
    if not fab.packet_headers:
        return 1.0
    return _packet_costs(fab, timing_card).link_fraction


def _packet_costs(fab: Fabric, timing_card: str | Path | None) -> PacketCosts:
    """The packet costs of the card that applies to ``fab``: on a fabric with FRED switches
    its own (the card given, or its file's); elsewhere the card given, else the built-in one.
    A mesh has no switch to carry a card, but its packets are those of the card's format."""
    if fab.has_fred_switches or timing_card is None:
        return fab.timing.card.packet_costs
    tc = Path(timing_card).resolve()
    key = (str(tc), tc.stat().st_mtime if tc.is_file() else None)
    hit = _CARD_COSTS.get(key)
    if hit is None:
        hit = _CARD_COSTS[key] = load_timing_card(tc).packet_costs
    return hit


_CARD_COSTS: dict[tuple, PacketCosts] = {}


def _switches(fab: Fabric):
    """The switches a group's communication uses on a FRED fabric, memoised per fabric."""
    hit = _SWITCHES.get(id(fab))
    if hit is None or hit[0] is not fab:
        hit = _SWITCHES[id(fab)] = (
            fab,
            tree_switches(fab.parent, lambda v: fab.nodes[v].kind == "switch"),
        )
    return hit[1]


_SWITCHES: dict[int, tuple[Fabric, Any]] = {}


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
        "virtual_stages": cfg.virtual_stages,
        "sequence_parallel": cfg.sequence_parallel,
        "pp_scatter_gather": cfg.pp_scatter_gather,
        "dp_overlap": cfg.dp_overlap,
    }


def applicable(wl: Workload, cfg: TrainingConfig, npus: int) -> str:
    """Why a strategy cannot run this workload on ``npus`` NPUs ("" if it can)."""
    st = cfg.strategy
    if st.workers != npus:
        return (
            f"strategy {st} uses {st.workers} NPUs; the fabric has {npus} "
            "(MP x DP x PP must equal it)"
        )
    split = mp_split(wl, st.mp) if st.mp <= (wl.shape.get("heads") or st.mp) else None
    if split is None:
        return f"MP {st.mp} exceeds the model's {wl.shape['heads']} heads (a rank would get none)"
    # Heads may split unevenly (MPSplit); ResNet channels and explicit layers must divide.
    if split.units is None and wl.mp_divides is not None and wl.mp_divides % st.mp:
        return f"MP {st.mp} does not divide the model ({wl.mp_divides} channels or units)"
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
        """Training throughput (samples/s) of ``e`` over the baseline's. With one minibatch
        that is the ratio of the times per iteration; fabrics of different NPU counts run
        different minibatches (DP, and the minibatch with it, follows the NPU count), and
        then only the throughputs compare (``same_minibatch``)."""
        base = next((x for x in self.estimates if x.fabric == self.baseline), None)
        if base is None or not base.ok or not e.ok or not e.time or not base.minibatch:
            return None
        return (base.time / e.time) * (e.minibatch / base.minibatch)

    @property
    def same_minibatch(self) -> bool:
        """Every fabric estimated ran the same minibatch, so times per iteration compare."""
        return len({e.minibatch for e in self.estimates if e.ok}) <= 1

    def to_dict(self) -> dict:
        return {
            "workload": self.workload,
            "strategy": self.strategy,
            "baseline": self.baseline,
            "speedup_of": "samples_per_s",
            "same_minibatch": self.same_minibatch,
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
    writes to build/timing/<variant>.json) replaces the switch timing of every FRED fabric;
    None keeps each fabric's own (the built-in card unless its file names one)."""
    wl = _workload(workload)
    fabs = list(fabrics)
    out = tuple(
        estimate(wl, f, strategy, npu=npu, timing_card=timing_card, **overrides) for f in fabs
    )
    st = out[0].strategy if out else str(strategy)
    return CompareResult(wl.name, st, out, out[0].fabric if out else "")


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
            if not (e.ok and e.fits):  # strategies estimated with ignore_memory cannot run
                continue
            if e.fabric not in out or e.throughput > out[e.fabric].throughput:
                out[e.fabric] = e
        return out

    def spread(self) -> dict[str, float]:
        """Per fabric: best / worst throughput among strategies that fit."""
        out: dict[str, float] = {}
        for f in dict.fromkeys(e.fabric for e in self.estimates):
            ts = [e.throughput for e in self.estimates if e.fabric == f and e.ok and e.fits]
            if ts:
                out[f] = max(ts) / min(ts)
        return out

    @property
    def baseline(self) -> str:
        """The fabric reductions are measured against: the first one swept (the mesh by
        default)."""
        return self.estimates[0].fabric if self.estimates else ""

    def reduction(self, e: Estimate) -> float | None:
        """How much less communication ``e`` exposes than the baseline fabric with the same
        strategy: 1 - exposed / baseline's exposed (0.25 = a quarter less; negative = more).
        None when either was not estimated or the baseline exposes none."""
        base = next(
            (x for x in self.estimates if x.fabric == self.baseline and x.strategy == e.strategy),
            None,
        )
        if base is None or not (base.ok and e.ok) or not base.exposed_comm:
            return None
        return 1.0 - e.exposed_comm / base.exposed_comm

    def mean_reduction(self) -> dict[str, tuple[float, int]]:
        """Per fabric: the mean of ``reduction`` over the strategies where it is defined, and
        how many strategies that is."""
        out: dict[str, tuple[float, int]] = {}
        for f in dict.fromkeys(e.fabric for e in self.estimates):
            found = (self.reduction(e) for e in self.estimates if e.fabric == f)
            rs = [r for r in found if r is not None]
            if rs:
                out[f] = (sum(rs) / len(rs), len(rs))
        return out

    def to_dict(self) -> dict:
        return {
            "workload": self.workload,
            "baseline": self.baseline,
            "best": {f: e.to_dict() for f, e in self.best().items()},
            "spread": self.spread(),
            "mean_exposed_reduction": {
                f: {"mean": m, "strategies": n} for f, (m, n) in self.mean_reduction().items()
            },
            "exposed_reduction": [
                {"fabric": e.fabric, "strategy": e.strategy, "reduction": self.reduction(e)}
                for e in self.estimates
            ],
            "invalid": [{"strategy": s, "reason": r} for s, r in self.invalid],
            "estimates": [e.to_dict() for e in self.estimates],
        }


def _sweep_task(args: tuple) -> dict:
    wl_spec, fab_spec, card, st, npu, over = args
    try:
        e = estimate(wl_spec, fab_spec, st, npu=npu, timing_card=card, sweep_settings=True, **over)
    except InputError as exc:  # a strategy this workload or fabric cannot run
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
    wl_spec: Any = wl.name if is_shipped(wl) else wl
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
            raise InputError(
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
        with worker_pool(workers) as ex:
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
