"""Which part of the slow suite a CI run adds: one shard, chosen by a seed.

The slow tests (``-m slow``) are split into K shards of about equal estimated time, K being
the smallest count whose shards fit the budget; seed S runs shard S mod K. The split depends
only on the collected tests, the estimates and the budget, not on the seed, so K successive
seeds run every slow test once. The default seed is the UTC day number: one shard a day, the
whole slow suite every K days, and a failing day's shard reruns with FRED_SLOW_SEED=S.

FRED_SLOW_BUDGET is the slice's size: seconds of test time (summed over workers, as a lone
worker would spend them on the reference machine), or, when at most 1, a fraction of the
whole slow suite's estimate. A test's estimate is its duration measured on that machine in
one run of the whole slow suite (tests/slow_durations.json, MEASURED); a test that run did not
have is estimated by a rule for its test function (ESTIMATES), or counts DEFAULT_SECONDS.
"""

from __future__ import annotations

import json
import math
import re
import sys
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: Default budget (seconds of test time): each shard adds at most about 12 minutes to
#: `make test` on two cores (README, "Tests", gives the shard count it makes).
DEFAULT_BUDGET = 1500.0
#: Estimate of a slow test that neither MEASURED nor ESTIMATES knows.
DEFAULT_SECONDS = 60.0


#: Each slow test's measured seconds, and the run they come from (written by ``main``).
DURATIONS_FILE = Path(__file__).with_name("slow_durations.json")


def _measured() -> dict[str, float]:
    """Seconds of each slow test (setup, call and teardown) in the run the file describes."""
    seconds = json.loads(DURATIONS_FILE.read_text())["seconds"]
    return {k: float(v) for k, v in seconds.items()}


#: Node id -> measured seconds (tests/slow_durations.json).
MEASURED = _measured()


def _ports(params: str) -> int:
    """P of a parametrisation id: ``16-3-xbar-fp32`` or ``fred_clos_p16_m3_l2_fp32_r1-icarus``."""
    m = re.search(r"_p(\d+)_", params) or re.match(r"(\d+)-", params)
    return int(m.group(1)) if m else 8


# The estimates are CPU seconds (the test process and the simulators and compilers it runs)
# measured on samples of each parametrisation on a shared two-core machine, with cold
# build caches, fitted in P: P = 2, 8, 16 of the cross product (0.3, 4.2, 21 s), P = 2 and
# 16 on Icarus (0.8, 29 s), P = 7 and 16 on Verilator (73, 129 s), 1/64 of the fp16
# and bf16 exhaustive sweeps (3.7, 2.7 s) and their harness builds (8 s).


def _cross_product(params: str) -> float:
    return 0.5 + 0.08 * _ports(params) ** 2


def _cosim(params: str) -> float:
    """Build and scenarios of one variant: Verilator's C++ build dominates its time."""
    p2 = _ports(params) ** 2
    return 45.0 + 0.4 * p2 if params.endswith("verilator") else 1.0 + 0.12 * p2


def _packet_cosim(params: str) -> float:
    """Packet-mode scenarios of one variant (Python NPUs every cycle): measured at P = 2 to
    8 on both simulators (12 to 75 s on Icarus, 31 to 84 s on Verilator with its build);
    the P = 8 variants on Icarus take longest (Go-Back-N resends at their fault rates)."""
    p2 = _ports(params) ** 2
    return 40.0 + 0.8 * p2 if params.endswith("verilator") else 5.0 + 1.5 * p2


#: Slow formal proofs (tests/sim/formal/test_proofs.py, id = the proof's name) that take
#: longer than FORMAL_DEFAULT_SECONDS: wall seconds (above their CPU seconds) of `make formal`
#: on the shared two-core machine (docs/formal.md, "Times"), proof and mutant alike.
FORMAL_SECONDS = {
    "packet.switch.links": 1200.0,
    "packet.switch.covers": 180.0,
    "packet.link_retry.order": 160.0,
    "packet.input_port.credits": 670.0,
    "packet.control.seq_floor": 150.0,
    "interconnect.flits.p4m3": 270.0,
    "interconnect.function.xbar_p4": 190.0,
    "interconnect.function.p4m3": 80.0,
    "interconnect.function.p5m2": 45.0,
    "interconnect.function.p5m3": 75.0,
    "packet.output_port.credits": 75.0,
    "switch.no_mixing": 55.0,
    "interconnect.rules.p5m3": 30.0,
    "interconnect.rules.xbar_p4": 40.0,
    "interconnect.flits.p4m2": 35.0,
    "interconnect.flits.p4m2_a2": 40.0,
    "interconnect.flits.xbar_p4": 150.0,
    "uswitch.ART_4x4.flits": 40.0,
    "uswitch.R_2x3.flits": 30.0,
}
#: A slow formal proof not listed above: one uSwitch shape or a small network, a few seconds.
FORMAL_DEFAULT_SECONDS = 12.0


def _formal(params: str) -> float:
    return FORMAL_SECONDS.get(params, FORMAL_DEFAULT_SECONDS)


#: Test function name -> estimated seconds from its parametrisation id, for a slow test that
#: MEASURED lacks (one added since). The rules' figures predate the measured run: it found
#: them high, most of all the formal proofs' (wall times on a heavily loaded machine).
ESTIMATES: dict[str, Callable[[str], float]] = {
    "test_full_cross_product": _cross_product,
    "test_wide_sweep": _cosim,
    "test_every_pattern_on_one_variant": _cosim,
    "test_verilator_million_pairs": lambda params: 15.0,
    # Pipelined adders: each depth is its own harness build (about 10 s) and clocks twice per
    # vector; the exhaustive runs at depth 6 are estimated at twice the combinational ones.
    "test_verilator_million_pairs_pipelined": lambda params: 30.0,
    "test_exhaustive_every_pair": lambda params: (
        (250.0 if params.startswith("fp16") else 190.0) * (1 if params.endswith("-0") else 2)
    ),
    "test_generic_float_adder_exhaustive_on_float8": lambda params: 12.0,
    "test_pipelined_adders_equal_the_reference_at_every_depth": lambda params: 5.0,
    "test_wide_sweep_pipelined": _cosim,
    "test_timing_card_of_a_pipelined_switch": lambda params: (
        60.0 if params == "verilator" else 30.0
    ),
    # Flow against packet engine on the 20-NPU fabrics: 1.5 to 12 s each (measured).
    "test_engines_agree_on_the_paper_fabrics": lambda params: 4.0,
    # FRED-D in RTL (20 switch ports at the L2): a cold Verilator build of about 200 s that
    # either test may pay (they share the build cache); Icarus needs no build.
    "test_fred_d_all_npus": lambda params: 210.0 if params == "verilator" else 15.0,
    "test_fred_d_cycles_match_the_system_model": lambda params: (
        210.0 if params == "verilator" else 10.0
    ),
    "test_collectives_and_phases_on_icarus": lambda params: 25.0,
    "test_generated_verilog_is_lint_clean": lambda params: 10.0,
    "test_packet_wide_sweep": _packet_cosim,
    # 10**6 cycles at about 5,000 cycles/s on Verilator.
    "test_packet_soak_million_cycles": lambda params: 250.0,
    # 10**8 cycles of the hardware soak (P = 4), run once on the shared two-core machine at a
    # load average of about 4: a 113 s build and an 870 s clock loop (114,900 cycles/s of
    # wall clock, 217,600 per CPU second), 983 s in all (docs/cosim.md). On two threads
    # (id "2") about half of that: some 500,000 cycles/s of wall clock on an idle machine.
    "test_packet_hardware_soak_hundred_million_cycles": lambda params: (
        500.0 if params == "2" else 1000.0
    ),
    # Chakra round trips (export, read, simulate, estimate), measured on a shared machine.
    "test_pipeline_round_trip": lambda params: 15.0,
    "test_weight_streaming_round_trip": lambda params: 25.0,
    "test_proof_passes": _formal,
    "test_mutant_fails": _formal,
    "test_rejected_words_can_emit_a_flit_before_its_input_accepts_it": lambda params: 25.0,
    # The Verilator halves of the default sweeps (the Icarus halves stay in the default
    # suite): a cold build and the standard scenarios, as the wide sweep's.
    "test_sweep_standard_scenarios": _cosim,
    "test_crossbar_standard_scenarios": _cosim,
    "test_every_element_type": lambda params: _cosim(f"4-{params}"),
    "test_standard_scenarios": _packet_cosim,
    # P = 2 and 4 placed and routed on the ECP5 (110 s measured on the shared machine).
    "test_fpga_cost_grows_with_ports": lambda params: 110.0,
    # Amaranth simulations of the largest interconnect and switch cases: 249 to 370 s each
    # measured at a load average of about 15, about twenty times an idle run.
    "test_random_flows": lambda params: 15.0,
    "test_random_phases_grid": lambda params: 12.0,
    # The ten SC'21 Table 1 rows estimated (15 s of CPU measured on the shared machine).
    "test_sc21_table1_meets_the_goal_on_its_checked_rows": lambda params: 20.0,
    # Six variants of the compute model, each refitted and run on the twelve checked rows
    # (130 s measured on the shared machine, 76 s of CPU).
    "test_ablations_refit_every_variant_and_the_shipped_model_is_the_best": lambda params: 130.0,
}


def estimate(nodeid: str) -> float:
    """Estimated seconds of one slow test, from its node id."""
    if nodeid in MEASURED:
        return MEASURED[nodeid]
    name = nodeid.rpartition("::")[2]
    func, _, params = name.partition("[")
    rule = ESTIMATES.get(func)
    return float(rule(params.rstrip("]"))) if rule else DEFAULT_SECONDS


@dataclass(frozen=True)
class Slice:
    seed: int
    shard: int
    shards: int
    chosen: tuple[str, ...]
    total: int
    chosen_seconds: float
    total_seconds: float

    def describe(self) -> str:
        return (
            f"slow slice seed {self.seed}: {len(self.chosen)} of {self.total} slow tests "
            f"(shard {self.shard} of {self.shards}, about {self.chosen_seconds:.0f} of "
            f"{self.total_seconds:.0f} s estimated; FRED_SLOW_SEED={self.seed} reruns it)"
        )


def partition(nodeids: Sequence[str], shards: int) -> list[list[str]]:
    """Longest estimate first, each test to the shard with the least time so far; ties by a
    stable digest of the id, so the split is the same in every process."""
    order = sorted(nodeids, key=lambda n: (-estimate(n), zlib.crc32(n.encode()), n))
    bins: list[list[str]] = [[] for _ in range(shards)]
    loads = [0.0] * shards
    for nodeid in order:
        i = min(range(shards), key=lambda k: (loads[k], k))
        bins[i].append(nodeid)
        loads[i] += estimate(nodeid)
    return bins


def choose(nodeids: Sequence[str], seed: int, budget: float) -> Slice:
    """The shard of ``nodeids`` that ``seed`` selects, shards being at most ``budget`` seconds
    each, except that a test longer than the budget gets a shard of its own."""
    ids = sorted(set(nodeids))
    total = sum(estimate(n) for n in ids)
    # Tests longer than the budget fit no shard: each runs alone, the others are packed
    # to the budget (packing them to the longest test's time would multiply every slice).
    alone = [[n] for n in ids if estimate(n) > budget]
    rest = [n for n in ids if estimate(n) <= budget]
    shards = max(1, min(len(rest), math.ceil(sum(estimate(n) for n in rest) / budget)))
    while shards < len(rest):
        if max(sum(estimate(n) for n in b) for b in partition(rest, shards)) <= budget:
            break
        shards += 1
    bins = alone + (partition(rest, shards) if rest or not alone else [])  # never none
    shards = len(bins)
    shard = seed % shards
    chosen = tuple(sorted(bins[shard]))
    return Slice(
        seed=seed,
        shard=shard,
        shards=shards,
        chosen=chosen,
        total=len(ids),
        chosen_seconds=sum(estimate(n) for n in chosen),
        total_seconds=total,
    )


def seed_from(environ: Mapping[str, str], now: float | None = None) -> int:
    """FRED_SLOW_SEED if set, else the UTC day number (days since 1970-01-01)."""
    text = environ.get("FRED_SLOW_SEED", "").strip()
    if text:
        return int(text)
    return int((time.time() if now is None else now) // 86400)


def budget_seconds(environ: Mapping[str, str], nodeids: Sequence[str]) -> float:
    """FRED_SLOW_BUDGET in seconds (a value of at most 1 is a fraction of the whole slow
    suite's estimate), else DEFAULT_BUDGET."""
    text = environ.get("FRED_SLOW_BUDGET", "").strip()
    if not text:
        return DEFAULT_BUDGET
    value = float(text)
    if value <= 0:
        raise ValueError(f"FRED_SLOW_BUDGET must be positive, got {text!r}")
    if value <= 1:
        return value * sum(estimate(n) for n in set(nodeids))
    return value


def durations_from_report(text: str) -> dict[str, float]:
    """Seconds per node id (setup, call and teardown summed) from pytest's report of
    ``--durations=0``; pytest leaves out phases under 5 ms."""
    out: dict[str, float] = {}
    for m in re.finditer(r"^([0-9.]+)s (?:setup|call|teardown)\s+(.+?)\s*$", text, re.M):
        out[m.group(2)] = out.get(m.group(2), 0.0) + float(m.group(1))
    return out


def main(argv: Sequence[str]) -> int:
    """``python -m tests.slow_slice LOG "HOW"``: tests/slow_durations.json from the report of a
    run of the whole slow suite (``pytest -m slow --durations=0``) saved in LOG; HOW says
    where and how it ran."""
    if len(argv) != 2:
        print(main.__doc__)
        return 2
    try:
        seconds = durations_from_report(Path(argv[0]).read_text())
    except OSError as e:
        print(f"{argv[0]}: {e.strerror or e}", file=sys.stderr)
        return 2
    if not seconds:
        # An empty table would make every slow test an unknown one again: keep the old file.
        print(
            f"{argv[0]}: no --durations=0 report in it; {DURATIONS_FILE.name} unchanged",
            file=sys.stderr,
        )
        return 2
    doc = {"measured": argv[1], "seconds": {k: round(v, 1) for k, v in sorted(seconds.items())}}
    DURATIONS_FILE.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{len(seconds)} tests, {sum(seconds.values()):.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
