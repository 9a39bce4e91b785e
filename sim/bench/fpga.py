"""FPGA place and route of the switch variants (fredfab.sim.verify.fpga, ECP5 LFE5U-85F
speed 8, out of context) against adder pipeline depth: LUTs, flip-flops, latency, Fmax, the
critical path and the time synthesis and place and route take, for Clos and crossbar at one
lane of bf16; int16 beside them; then placer seeds, to show how much Fmax depends on them.

Full: P = 4 at every depth 0..4 and 6, P = 8 at 0, 2, 3, 4 and 6, both architectures; int16
at P = 8, depths 0 and 1; seeds 1..4 of the Clos at P = 8 with three adder stages (bf16) and
one (int16). Quick (--quick): P = 4 at depths 0 and 3, both architectures, and the seed
spread of the P = 4 Clos at depth 3. P = 16 stays out: a Clos takes over half an hour and
the crossbar's routing did not finish in 40 minutes (docs/architecture-cost.md).
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

NAME = "fpga"

#: Placer seeds of the spread rows (the first is the default one).
SEEDS = (1, 2, 3, 4)
#: Adder stages swept per port count.
DEPTHS = {4: (0, 1, 2, 3, 4, 6), 8: (0, 2, 3, 4, 6)}
QUICK_DEPTHS = {4: (0, 3)}


def _pnr(job) -> dict:
    from fredfab.sim.verify.fpga import variant_row

    params, seed = job
    return variant_row(params, Path("build/bench/fpga") / f"{params.name}_s{seed}", seed)


def _jobs(quick: bool) -> list:
    from fredfab.hw.params import SwitchParams
    from fredfab.sim.verify.fpga import DEFAULT_SEED

    def variant(ports, arch, stages, dtype="bf16"):
        return SwitchParams(ports=ports, m=3, lanes=1, dtype=dtype, arch=arch, adder_stages=stages)

    depths = QUICK_DEPTHS if quick else DEPTHS
    jobs = [
        (variant(p, a, n), DEFAULT_SEED)
        for p, ns in depths.items()
        for a in ("clos", "xbar")
        for n in ns
    ]
    spread = [variant(4, "clos", 3)] if quick else [variant(8, "clos", 3)]
    if not quick:
        jobs += [
            (variant(8, a, n, "int16"), DEFAULT_SEED) for a in ("clos", "xbar") for n in (0, 1)
        ]
        spread.append(variant(8, "clos", 1, "int16"))
    jobs += [(v, s) for v in spread for s in SEEDS if s != DEFAULT_SEED]
    return jobs


#: What each row keeps of a place and route (fredfab.sim.verify.fpga.variant_row).
KEEP = (
    "arch",
    "ports",
    "dtype",
    "adder_stages",
    "latency_cycles",
    "seed",
    "status",
    "luts",
    "ffs",
    "dsp",
    "carry",
    "fmax_mhz",
    "synth_seconds",
    "pnr_seconds",
    "critical_path",
)


def _key(r: dict) -> tuple:
    return r["arch"], r["ports"], r["dtype"], r["adder_stages"]


def run(quick: bool = False) -> list[dict]:
    from fredfab.sim.verify.fpga import DEFAULT_SEED

    jobs = _jobs(quick)
    with ProcessPoolExecutor(max_workers=2) as pool:
        reports = list(pool.map(_pnr, jobs))
    rows = [
        {
            "what": "variant" if seed == DEFAULT_SEED else "seed spread",
            **{k: rep.get(k) for k in KEEP},
        }
        for rep, (_, seed) in zip(reports, jobs, strict=True)
    ]
    ok = [r for r in rows if r["status"] == "ok"]
    # How far the pipeline takes Fmax: each variant against the same switch at depth 0.
    depth0 = {_key(r)[:3]: r["fmax_mhz"] for r in ok if r["adder_stages"] == 0}
    for r in ok:
        if r["what"] == "variant" and _key(r)[:3] in depth0:
            r["fmax_vs_depth0"] = r["fmax_mhz"] / depth0[_key(r)[:3]]
    for key in dict.fromkeys(_key(r) for r in ok if r["what"] == "seed spread"):
        fmax = [r["fmax_mhz"] for r in ok if _key(r) == key]
        arch, ports, dtype, stages = key
        rows.append(
            {
                "what": f"Fmax over seeds {list(SEEDS)}",
                "arch": arch,
                "ports": ports,
                "dtype": dtype,
                "adder_stages": stages,
                "fmax_min": min(fmax),
                "fmax_max": max(fmax),
                "spread_percent": 100 * (max(fmax) - min(fmax)) / min(fmax),
            }
        )
    return rows
