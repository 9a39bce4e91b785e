"""Manifest-driven cocotb bench of a generated FRED switch.

Environment (set by fredfab.sim.verify.cosim):

* ``FRED_COSIM_SCENARIOS``: a JSON file (schema ``fred-cosim-scenarios/1``) naming the switch
  manifest and listing scenarios; one cocotb test is registered per scenario, under its name.
* ``FRED_COSIM_REPORT``: a JSON file this bench (re)writes after every test with what it
  measured and the first mismatching flit, so that the Python side can report without
  parsing logs.

A scenario is a list of *phases* run one after the other on one switch::

    {"name": ..., "seed": 1, "timeout_cycles": 20000,
     "idle": PATTERN, "stall": PATTERN,                 # input idles, output readiness
     "phases": [{"label": ..., "slot": 1 | null, "words": [...] | null,
                 "send": {"<port>": [[data, last], ...]}, "expect": {"<port>": [...]},
                 "idle": PATTERN?, "stall": PATTERN?,   # optional per-phase override
                 "drain": true?, "wait_before": cycles?, "reset_after": flits?}]}

PATTERN is ``{"kind": "none"}``, ``{"kind": "random", "p": 0.3}`` (pause with probability
p), ``{"kind": "periodic", "pattern": [1, 1, 1, 0]}`` (1 = go) or ``{"kind": "stalls",
"go": [lo, hi], "pause": [lo, hi]}`` (long stalls: runs of go and pause cycles of random
lengths), as the verilog-axis benches use.

How a scenario runs (the control unit's contract, hw/control.py):

* Phase n's configuration ``words`` are written into its ``slot`` through ``cfg`` while
  phase n-1's traffic runs (phase 0's before anything else); the scenario builder never
  writes the active slot.
* Once every flit of phase n-1 has been accepted and the load is done, ``select`` rises with
  the slot; phase n's senders start offering flits in the next cycle (they wait at closed
  ports), and ``select`` drops after the cycle it was accepted in. ``slot: null`` keeps the
  active configuration (after reset: slot 0, the all-unicast identity) and raises nothing.
* ``drain: true`` waits until every expected output flit arrived, ``wait_before: c`` then
  waits c more cycles, before the phase starts (an idle switch for timing measurements).
* ``reset_after: k`` asserts ``rst`` for two cycles once k flits of the phase were accepted:
  senders drop their flits, output flits seen so far must be a prefix of the expected ones,
  the rest of the phase's expected flits are dropped, and for ``latency + 4`` cycles after
  reset no output may be valid (nothing stale may come out). Later phases must start from
  the reset state.
* Drivers follow the stream rules: valid never waits for ready and never drops before the
  transfer; idles are inserted only between flits.
* The scoreboard compares every output flit (data and last) bit-exact, in order, per output
  port, and stops the test at the first mismatch; at the end the outputs stay ready for
  ``latency + 8`` cycles and any further flit is an error.

Everything is sampled in the ReadOnly phase of a cycle (after this bench's writes settled),
and the transfers seen there happen at the next rising edge; this is the same on Icarus and
Verilator.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import deque
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

SCHEMA = "fred-cosim-scenarios/1"
#: Cycles without any transfer, while flits are still to send or expected, that count as a
#: hang (the longest pause of any pattern is 40 cycles; a phase change takes tens).
STALL_LIMIT = 1000


class Pattern:
    """A go/pause sequence, one value per cycle (True = go)."""

    def __init__(self, spec: dict | None, rng: random.Random) -> None:
        spec = spec or {"kind": "none"}
        self.kind = spec.get("kind", "none")
        self.rng = rng
        if self.kind == "none":
            self.step = self._always
        elif self.kind == "random":
            self.p = float(spec["p"])
            self.step = self._random
        elif self.kind == "periodic":
            self.seq = [bool(v) for v in spec["pattern"]]
            self.i = rng.randrange(len(self.seq))
            self.step = self._periodic
        elif self.kind == "stalls":
            self.go, self.pause = tuple(spec["go"]), tuple(spec["pause"])
            self.left, self.state = 0, False
            self.step = self._stalls
        else:
            raise ValueError(f"unknown pattern kind {self.kind!r}")

    def _always(self) -> bool:
        return True

    def _random(self) -> bool:
        return self.rng.random() >= self.p

    def _periodic(self) -> bool:
        v = self.seq[self.i]
        self.i = (self.i + 1) % len(self.seq)
        return v

    def _stalls(self) -> bool:
        if self.left == 0:
            self.state = not self.state
            lo, hi = self.go if self.state else self.pause
            self.left = self.rng.randint(lo, hi)
        self.left -= 1
        return self.state


class Mismatch(Exception):
    pass


class Bench:
    """The switch's streams, from the manifest, with cached writes and per-cycle sampling."""

    def __init__(self, dut, manifest: dict) -> None:
        self.dut = dut
        self.m = manifest
        streams = manifest["streams"]
        self.ports = len(streams["i"])

        def h(name):
            return getattr(dut, name)

        self.i = [tuple(h(s[k]) for k in ("payload", "valid", "ready")) for s in streams["i"]]
        self.o = [tuple(h(s[k]) for k in ("payload", "valid", "ready")) for s in streams["o"]]
        self.cfg = tuple(h(streams["cfg"][k]) for k in ("payload", "valid", "ready"))
        self.sel = tuple(h(streams["select"][k]) for k in ("payload", "valid", "ready"))
        self.clk = h(manifest["clock"])
        self.rst = h(manifest["reset"]["name"])
        flit = manifest["flit"]
        self.last_lsb = flit["fields"]["last"]["lsb"]
        self.data_mask = (1 << flit["fields"]["data"]["width"]) - 1
        self.lanes, self.dtype = flit["lanes"], flit["dtype"]
        self.elem_bits = flit["element_bits"]
        cp = manifest["config"]["cfg_payload"]
        self.cfg_lsb = {k: cp[k]["lsb"] for k in ("slot", "addr", "data")}
        self.latency = int(manifest["latency_cycles"])
        self._cache: dict[int, int] = {}
        self.cycle = 0

    def put(self, handle, value: int) -> None:
        key = id(handle)
        if self._cache.get(key) != value:
            handle.value = value
            self._cache[key] = value

    @staticmethod
    def bit(handle) -> int:
        try:
            return int(handle.value)
        except ValueError:
            raise AssertionError(f"{handle._name} is {handle.value} (X or Z)") from None

    @staticmethod
    def word(handle) -> int:
        try:
            return handle.value.to_unsigned()
        except ValueError:
            raise AssertionError(f"{handle._name} is {handle.value} (X or Z)") from None

    def cfg_word(self, slot: int, addr: int, data: int) -> int:
        c = self.cfg_lsb
        return (slot << c["slot"]) | (addr << c["addr"]) | (data << c["data"])

    def quiet_inputs(self) -> None:
        for _payload, valid, _ready in self.i:
            self.put(valid, 0)
        self.put(self.cfg[1], 0)
        self.put(self.sel[1], 0)

    async def start(self) -> None:
        Clock(self.clk, 10, unit="ns").start()
        self.quiet_inputs()
        for _payload, _valid, ready in self.o:
            self.put(ready, 0)
        self.put(self.rst, 1)
        for _ in range(3):
            await RisingEdge(self.clk)
        self.put(self.rst, 0)

    def describe(self, data: int, last: int) -> str:
        from fredfab.model.dtypes import element_type
        from fredfab.sim.verify.traffic import lanes_text

        et = element_type(self.dtype)
        digits = -(-(self.data_mask.bit_length()) // 4)
        lanes = lanes_text(data, et, self.lanes)
        return f"data=0x{data:0{digits}x} last={last} lanes {lanes}"


class PhaseStats:
    """What one phase did, cycle by cycle counters for the timing card."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.select_cycles: int | None = None
        self.load_cycles: int | None = None
        self.in_first: int | None = None
        self.in_last: int | None = None
        self.in_flits = 0
        # per output port: [fires, first, last, ready count at first, ready count at last,
        #                   first valid cycle]
        self.out: dict[int, list] = {}

    def to_dict(self) -> dict:
        return {
            "label": self.label,
            "select_cycles": self.select_cycles,
            "load_cycles": self.load_cycles,
            "in_first": self.in_first,
            "in_last": self.in_last,
            "in_flits": self.in_flits,
            "out": {
                str(p): dict(
                    zip(
                        ("flits", "first", "last", "ready_first", "ready_last", "valid_first"),
                        v,
                        strict=True,
                    )
                )
                for p, v in sorted(self.out.items())
            },
        }


class TrafficRun:
    """One scenario: drivers, monitors, scoreboard and the phase sequence, in one loop."""

    def __init__(self, bench: Bench, sc: dict) -> None:
        self.b = bench
        self.sc = sc
        self.rng = random.Random(sc.get("seed", 0))
        P = bench.ports
        self.idle = [Pattern(sc.get("idle"), random.Random(self.rng.random())) for _ in range(P)]
        self.stall = [Pattern(sc.get("stall"), random.Random(self.rng.random())) for _ in range(P)]
        self.pending: list[deque] = [deque() for _ in range(P)]  # (data, last, phase)
        self.cur: list[tuple | None] = [None] * P
        self.expect: list[deque] = [deque() for _ in range(P)]  # (data, last, phase, index)
        self.got = [0] * P  # output flits accepted per port
        self.ready_now = [0] * P
        self.ready_count = [0] * P
        self.cfgq: deque = deque()
        self.cfg_phase: int | None = None
        self.cfg_start = 0
        self.select_fired = False
        self.in_reset = False
        self.quiet = False
        self.force_ready = False
        self.phase_now = -1
        self.stats = [
            PhaseStats(ph.get("label", f"phase {n}")) for n, ph in enumerate(sc["phases"])
        ]
        self.in_total = 0
        self.out_total = 0
        self.errors: list[str] = []
        self.first_mismatch: dict | None = None

    # ---------------------------------------------------------------- phase control (generator)

    def enqueue_load(self, n: int) -> None:
        phases = self.sc["phases"]
        if n < len(phases) and phases[n].get("words") is not None:
            slot = phases[n]["slot"]
            self.cfgq.extend(self.b.cfg_word(slot, a, w) for a, w in enumerate(phases[n]["words"]))
            self.cfg_phase, self.cfg_start = n, None

    def feed(self, n: int) -> None:
        ph = self.sc["phases"][n]
        rng = self.rng
        if "idle" in ph:
            self.idle = [Pattern(ph["idle"], random.Random(rng.random())) for _ in self.idle]
        for p, flits in ph.get("send", {}).items():
            self.pending[int(p)].extend((d, last, n) for d, last in flits)
        for p, flits in ph.get("expect", {}).items():
            self.expect[int(p)].extend((d, last, n, k) for k, (d, last) in enumerate(flits))
        self.phase_now = n

    def apply_stall(self, n: int) -> None:
        """Switch to phase n's output pattern: once its select completed, i.e. once every
        flit of the previous phase has left the switch."""
        ph = self.sc["phases"][n]
        if "stall" in ph:
            rng = self.rng
            self.stall = [Pattern(ph["stall"], random.Random(rng.random())) for _ in self.stall]

    def inputs_busy(self) -> bool:
        return any(self.pending) or any(c is not None for c in self.cur)

    def control(self):
        """Generator: one step per cycle, run before the drivers drive."""
        b = self.b
        phases = self.sc["phases"]
        self.enqueue_load(0)
        for n, ph in enumerate(phases):
            while self.cfgq or self.inputs_busy():
                yield
            if ph.get("drain"):
                while any(self.expect):
                    yield
            for _ in range(int(ph.get("wait_before", 0))):
                yield
            if ph.get("slot") is not None:
                b.put(b.sel[0], int(ph["slot"]))
                b.put(b.sel[1], 1)
                raised = b.cycle
                self.select_fired = False
                yield
                self.feed(n)
                while not self.select_fired:
                    yield
                self.stats[n].select_cycles = self.select_fired_cycle - raised + 1
                b.put(b.sel[1], 0)
                self.apply_stall(n)
            else:
                self.feed(n)
                self.apply_stall(n)
            self.enqueue_load(n + 1)
            if ph.get("reset_after") is not None:
                while self.stats[n].in_flits < int(ph["reset_after"]):
                    yield
                yield from self.reset(n)
                self.enqueue_load(n + 1)

    def reset(self, n: int):
        b = self.b
        b.quiet_inputs()
        b.put(b.rst, 1)
        self.in_reset = True
        for q in self.pending:
            q.clear()
        self.cur = [None] * b.ports
        self.cfgq.clear()
        # Expected flits of the interrupted phases are dropped; what came out was checked.
        for q in self.expect:
            while q and q[0][2] <= n:
                q.popleft()
        yield
        yield
        b.put(b.rst, 0)
        self.in_reset = False
        self.quiet = True
        for _ in range(b.latency + 4):
            yield
        self.quiet = False

    # ---------------------------------------------------------------- per-cycle work

    def drive(self) -> None:
        b = self.b
        for p in range(b.ports):
            if (
                self.cur[p] is None
                and self.pending[p]
                and not self.in_reset
                and self.idle[p].step()
            ):
                self.cur[p] = self.pending[p].popleft()
                d, last, _n = self.cur[p]
                payload, valid, _ = b.i[p]
                b.put(payload, (d & b.data_mask) | (last << b.last_lsb))
                b.put(valid, 1)
            elif self.cur[p] is None:
                b.put(b.i[p][1], 0)
            r = 1 if self.force_ready else int(self.stall[p].step())
            self.ready_now[p] = r
            b.put(b.o[p][2], r)
        if self.cfgq and not self.in_reset:
            if self.cfg_start is None:
                self.cfg_start = b.cycle
            b.put(b.cfg[0], self.cfgq[0])
            b.put(b.cfg[1], 1)
        else:
            b.put(b.cfg[1], 0)

    def sample(self) -> None:
        b = self.b
        cyc = b.cycle
        if self.in_reset:
            return
        for p in range(b.ports):
            cur = self.cur[p]
            if cur is not None and b.bit(b.i[p][2]):
                n = cur[2]
                st = self.stats[n]
                st.in_flits += 1
                if st.in_first is None:
                    st.in_first = cyc
                st.in_last = cyc
                self.in_total += 1
                self.cur[p] = None
            ready = self.ready_now[p]
            if ready:
                self.ready_count[p] += 1
            valid = b.bit(b.o[p][1])
            if valid:
                n = self.phase_now
                if self.expect[p]:
                    n = self.expect[p][0][2]
                o = self.stats[n].out.setdefault(p, [0, None, None, None, None, cyc])
                if o[5] is None:
                    o[5] = cyc
            if not (valid and ready):
                continue
            word = b.word(b.o[p][0])
            data, last = word & b.data_mask, (word >> b.last_lsb) & 1
            self.check(p, data, last)
            n = self.expect_phase
            o = self.stats[n].out.setdefault(p, [0, None, None, None, None, cyc])
            o[0] += 1
            if o[1] is None:
                o[1], o[3] = cyc, self.ready_count[p]
            o[2], o[4] = cyc, self.ready_count[p]
        if self.cfgq and b.bit(b.cfg[2]) and not self.in_reset:
            self.cfgq.popleft()
            if not self.cfgq and self.cfg_phase is not None:
                self.stats[self.cfg_phase].load_cycles = cyc - self.cfg_start + 1
        if b.bit(b.sel[1]) and b.bit(b.sel[2]):
            self.select_fired = True
            self.select_fired_cycle = cyc

    def check(self, p: int, data: int, last: int) -> None:
        index = self.got[p]
        self.got[p] += 1
        self.out_total += 1
        if self.quiet:
            self.fail(p, index, None, (data, last), "stale flit after reset")
        if not self.expect[p]:
            self.expect_phase = self.phase_now if self.phase_now >= 0 else 0
            self.fail(p, index, None, (data, last), "unexpected flit (none expected)")
        d, lst, n, k = self.expect[p].popleft()
        self.expect_phase = n
        if (d, lst) != (data, last):
            label = self.stats[n].label
            self.fail(p, index, (d, lst, label, k), (data, last), "mismatch")

    def fail(self, p, index, want, got, what) -> None:
        b = self.b
        text = f"{what} on output port {p}, flit {index}"
        rec = {"what": what, "port": p, "index": index, "cycle": b.cycle}
        if want is not None:
            d, lst, label, k = want
            text += f" (phase {label!r}, flit {k} of the phase)"
            text += f": expected {b.describe(d, lst)}"
            rec.update(phase=label, phase_index=k, expected=[d, lst])
        text += f"{',' if want else ':'} got {b.describe(*got)}"
        rec["got"] = list(got)
        rec["text"] = text
        self.first_mismatch = rec
        raise Mismatch(text)

    def missing(self) -> str:
        rows = []
        for p, q in enumerate(self.expect):
            if q:
                d, lst, n, k = q[0]
                rows.append(
                    f"port {p}: {len(q)} flits missing, next (phase "
                    f"{self.stats[n].label!r}, flit {k}) {self.b.describe(d, lst)}"
                )
        stuck = [p for p in range(self.b.ports) if self.pending[p] or self.cur[p] is not None]
        if stuck:
            rows.append(f"inputs still sending: {stuck}")
        if self.cfgq:
            rows.append(f"{len(self.cfgq)} configuration words unwritten")
        if self.b._cache.get(id(self.b.sel[1])) == 1 and not self.select_fired:
            rows.append(f"select of slot {self.b._cache.get(id(self.b.sel[0]))} not accepted")
        return "; ".join(rows) or "nothing missing"

    async def run(self) -> None:
        b = self.b
        timeout = int(self.sc.get("timeout_cycles", 20000))
        ctl = self.control()
        ctl_done = False
        tail = None
        start = b.cycle
        self.expect_phase = 0
        progress, last_moved = None, b.cycle
        while True:
            if not ctl_done:
                try:
                    next(ctl)
                except StopIteration:
                    ctl_done = True
            if ctl_done and tail is None and not self.inputs_busy() and not any(self.expect):
                tail = b.latency + 8
                self.force_ready = True
            if tail is not None:
                if tail == 0:
                    break
                tail -= 1
            self.drive()
            await ReadOnly()
            self.sample()
            await RisingEdge(b.clk)
            b.cycle += 1
            moved = (self.in_total, self.out_total, len(self.cfgq), self.select_fired)
            waiting = self.inputs_busy() or any(self.expect) or b._cache.get(id(b.sel[1])) == 1
            if moved != progress or not waiting:
                progress, last_moved = moved, b.cycle
            elif b.cycle - last_moved > STALL_LIMIT:
                raise AssertionError(
                    f"no flit moved for {STALL_LIMIT} cycles (phase {self.phase_now}): "
                    f"{self.missing()}"
                )
            if b.cycle - start > timeout:
                raise AssertionError(
                    f"timeout after {timeout} cycles (phase {self.phase_now}): {self.missing()}"
                )
        b.quiet_inputs()


def _load() -> tuple[dict, dict]:
    path = os.environ.get("FRED_COSIM_SCENARIOS")
    if not path:
        return {}, {"scenarios": []}
    spec = json.loads(Path(path).read_text())
    if spec.get("schema") != SCHEMA:
        raise RuntimeError(f"{path} is not a {SCHEMA} file")
    manifest = json.loads(Path(spec["manifest"]).read_text())
    return manifest, spec


MANIFEST, SPEC = _load()
REPORT: dict = {"tests": {}}


def _write_report() -> None:
    path = os.environ.get("FRED_COSIM_REPORT")
    if path:
        tmp = Path(path + ".tmp")
        tmp.write_text(json.dumps(REPORT, indent=1) + "\n")
        tmp.replace(path)


async def _run_scenario(dut, sc: dict) -> None:
    bench = Bench(dut, MANIFEST)
    await bench.start()
    run = TrafficRun(bench, sc)
    t0 = time.perf_counter()
    error = None
    try:
        await run.run()
    except Mismatch as exc:
        error = str(exc)
    except AssertionError as exc:
        error = str(exc)
    wall = time.perf_counter() - t0
    REPORT["tests"][sc["name"]] = {
        "passed": error is None,
        "error": error,
        "first_mismatch": run.first_mismatch,
        "cycles": bench.cycle,
        "wall_seconds": wall,
        "in_flits": run.in_total,
        "out_flits": run.out_total,
        "phases": [s.to_dict() for s in run.stats],
    }
    _write_report()
    assert error is None, error


def _register(sc: dict):
    async def scenario(dut) -> None:
        await _run_scenario(dut, sc)

    scenario.__name__ = scenario.__qualname__ = sc["name"]
    scenario.__doc__ = sc.get("doc", sc["name"])
    return cocotb.test(name=sc["name"])(scenario)


for _sc in SPEC["scenarios"]:
    globals()[f"test_{_sc['name']}"] = _register(_sc)
