"""Self-checking RTL soak: traffic generators and checkers in hardware, no Python per cycle.

``soak(params, cycles, sim="verilator")`` wraps the switch's generated Verilog in the
``fred_soak`` harness (fredfab.sim.verify.soak_harness: an Amaranth component converted to
Verilog that instantiates the switch module by name, so the soak runs the very file the
cocotb benches use), builds both with a small driver (fredfab.sim.verify.soak_drivers: a C++
main for Verilator, a testbench for Icarus), runs it for ``cycles`` clock cycles from power-up
and reads the counters at the end.

Traffic: one routed flow set (``soak_flows``: an All-Reduce, a reduce, a multicast and
unicasts, together using every port) is configured into slot 1, then every input of a flow
sends and every output checks (the harness module says how, and why that is sound).

Builds are cached by content (fredfab.sim.verify.build_cache) under ``root/soak``:
``harness/<variant>/`` holds the converted harness, ``<sim>/<variant>/`` the simulator build.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from fredfab.hw.params import SwitchParams
from fredfab.model.errors import InputError
from fredfab.model.switch.flow import Flow
from fredfab.model.switch.router import RouteConflict, Routing, route
from fredfab.sim.verify import cosim
from fredfab.sim.verify.build_cache import cached_build


def soak_flows(ports: int) -> list[Flow]:
    """An All-Reduce, a reduce, a multicast and unicasts over all ports (P >= 6); smaller
    switches get what fits (P = 4: an All-Reduce and a reduce, output 3 stays silent)."""
    P = ports
    if P < 4:
        return [Flow([p], [(p + 1) % P]) for p in range(P)]
    if P < 6:
        flows = [Flow([0, 1], [0, 1]), Flow([2, 3], [2])]
        return flows + ([Flow([4], [3, 4])] if P == 5 else [])
    a, r = P // 3, max(2, P // 4)
    mc = a + r
    flows = [
        Flow(range(a), range(a)),  # All-Reduce
        Flow(range(a, a + r), [a]),  # reduce
        Flow([mc], range(a + 1, a + 1 + r)),  # multicast
    ]
    rest = list(range(mc + 1, P))
    return flows + [Flow([p], [q]) for p, q in zip(rest, rest[1:] + rest[:1], strict=True)]


def soak_routing(params: SwitchParams) -> Routing:
    flows = soak_flows(params.ports)
    if not params.element.is_float:
        try:
            return route(flows, params.ports, params.m, arch=params.arch)
        except RouteConflict:
            pass
    # Float types (or a conflict): a multicast and a rotation, single-input flows only.
    P = params.ports
    flows = [Flow([0], [0, 1])] + [Flow([p], [(p + 1) % P]) for p in range(2, P)]
    flows = [f for f in flows if f.ops.isdisjoint({0, 1}) or f.ips == {0}]
    outs = {q for f in flows for q in f.ops}
    return route(flows, P, params.m) if outs else route([Flow([0], [0])], P, params.m)


@dataclass
class SoakResult:
    sim: str
    variant: str
    flows: list[str]
    clocked: int  # cycles clocked from power-up
    cycles: int  # cycles with traffic running (after configuration)
    in_flits: int
    out_flits: list[int]
    errors: int
    first_error: dict | None
    seconds: float  # simulation wall time (the loop only, Verilator; whole run, Icarus)
    build_seconds: float

    @property
    def cycles_per_second(self) -> float:
        return self.clocked / self.seconds if self.seconds else float("nan")


def _harness(
    params: SwitchParams, manifest_path: Path, routing: Routing, root: Path
) -> tuple[str, float]:
    """The ``fred_soak`` harness Verilog and the seconds spent converting it (once per
    harness source, generator version, variant and flows: conversion takes seconds)."""
    import amaranth

    from fredfab.hw.manifest import load_manifest
    from fredfab.sim.verify import soak_harness

    out = Path(root).resolve() / "soak" / "harness" / params.name
    path = out / f"{soak_harness.MODULE}.v"
    words = routing.config.to_words(params.word_width)
    key = hashlib.sha256(
        "\0".join(
            [
                amaranth.__version__,
                cosim.generator_digest(),
                Path(soak_harness.__file__).read_text(),
                manifest_path.read_text(),
                json.dumps(params.to_dict(), sort_keys=True),
                *map(str, routing.flows),
                *map(hex, words),
            ]
        ).encode()
    ).hexdigest()

    def convert() -> None:
        manifest = load_manifest(manifest_path)
        path.write_text(soak_harness.harness_verilog(params, manifest, routing))

    seconds = cached_build(out, key, convert, outputs=[path])
    return path.read_text(), seconds


def _driver(sim: str, ports: int, flit_bits: int) -> tuple[dict[str, str], list[str], str]:
    """The driver source (file name: text), the build command and the executable it makes."""
    from fredfab.sim.verify.soak_drivers import MAIN_CPP, TB_V
    from fredfab.sim.verify.toolchain import verilator_make_flags

    if sim == "verilator":
        cmd = [
            "verilator", "--cc", "--exe", "--build", "-j", "2", "--top-module", "fred_soak",
            *[f"-Wno-{w}" for w in cosim.VERILATOR_WAIVERS], "-Wno-fatal",
            "-CFLAGS", f"-DPORTS={ports} -DFLIT_WORDS={-(-flit_bits // 32)}",
            "-MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include", "-MAKEFLAGS", "OPT_FAST=-O2",
            *verilator_make_flags(),
            "-Mdir", "obj", "-o", "soak", "main.cpp", "soak.v", "dut.v",
        ]  # fmt: skip
        return {"main.cpp": MAIN_CPP}, cmd, "obj/soak"
    cmd = [
        "iverilog", "-g2012", "-P", f"soak_tb.P={ports}", "-P", f"soak_tb.FW={flit_bits}",
        "-o", "soak.vvp", "-s", "soak_tb", "tb.v", "soak.v", "dut.v",
    ]  # fmt: skip
    return {"tb.v": TB_V}, cmd, "soak.vvp"


def _compile(out: Path, files: dict[str, str], cmd: list[str], exe: Path) -> float:
    """Write ``files`` into ``out`` and run ``cmd`` there, unless the same files and command
    already built ``exe``; return the seconds spent."""
    from fredfab.sim.verify.toolchain import sim_env

    key = hashlib.sha256(
        "\0".join([*(f"{name}\0{text}" for name, text in files.items()), *cmd]).encode()
    ).hexdigest()

    def compile_() -> None:
        shutil.rmtree(out / "obj", ignore_errors=True)
        for name, text in files.items():
            (out / name).write_text(text)
        r = subprocess.run(cmd, cwd=out, env=sim_env(), capture_output=True, text=True)
        (out / "build.log").write_text(r.stdout + r.stderr)
        if r.returncode != 0:
            raise cosim.CosimError(
                f"soak build failed, see {out / 'build.log'}:\n{(r.stdout + r.stderr)[-1500:]}"
            )

    return cached_build(out, key, compile_, outputs=[exe])


def _build(params: SwitchParams, sim: str, root: Path) -> tuple[Path, float, list[str]]:
    """The soak executable for ``sim`` (cached), the seconds this call spent building it,
    and the flows it runs."""
    from fredfab.hw.manifest import load_manifest

    cosim.check_simulator(sim)
    v_path, j_path = cosim.rtl(params, root)
    routing = soak_routing(params)
    soak_v, harness_s = _harness(params, j_path, routing, root)
    dut_v = v_path.read_text()
    if sim == "icarus":  # both are Yosys output: wake their combinational blocks at time 0
        soak_v, dut_v = cosim.icarus_verilog(soak_v), cosim.icarus_verilog(dut_v)
    flit_bits = load_manifest(j_path)["flit"]["width"]
    driver, cmd, exe = _driver(sim, params.ports, flit_bits)
    out = Path(root).resolve() / "soak" / sim / params.name
    compile_s = _compile(out, {"soak.v": soak_v, "dut.v": dut_v, **driver}, cmd, out / exe)
    return out / exe, harness_s + compile_s, [str(f) for f in routing.flows]


def soak(
    params: SwitchParams,
    cycles: int = 1_000_000,
    sim: str = "verilator",
    fault: tuple[int, int] | None = None,
    root: Path = cosim.DEFAULT_ROOT,
) -> SoakResult:
    """Build (cached) and run the soak for ``cycles`` cycles; ``fault = (port, flit index)``
    flips one bit the checker sees there."""
    if cycles < 1:
        raise InputError(f"cycles must be >= 1, got {cycles}")
    exe, build_s, flows = _build(params, sim, root)
    if sim == "verilator":
        argv = [str(exe), str(cycles), *([str(fault[0]), str(fault[1])] if fault else [])]
    else:
        argv = ["vvp", "-n", str(exe), f"+cycles={cycles}"]
        if fault:
            argv += [f"+fault_port={fault[0]}", f"+fault_index={fault[1]}"]
    t0 = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, cwd=exe.parent)
    wall = time.perf_counter() - t0
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("{")), None)
    if r.returncode != 0 or line is None:
        raise cosim.CosimError(
            f"soak run failed ({r.returncode}): {r.stdout[-500:]}{r.stderr[-500:]}"
        )
    d = json.loads(line)
    first = None
    if d["errors"]:
        first = {
            "port": d["err_port"],
            "index": d["err_index"],
            "cycle": d["err_cycle"],
            "expected": int(d["err_exp"], 16),
            "got": int(d["err_got"], 16),
        }
    seconds = d["seconds"] if sim == "verilator" else wall
    return SoakResult(
        sim, params.name, flows, d["clocked"], d["cycles"], d["in_flits"], d["out_flits"],
        d["errors"], first, seconds, build_s,
    )  # fmt: skip
