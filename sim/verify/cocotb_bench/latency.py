"""The latency of every output flit, against the switch's own numbers.

The manifest (hw/manifest.py) says how long each node holds a flit (``node_cycles``: register
slices and adder stages, model/switch/latency.py); with the phase's configuration that gives
every output port's path latency from each input port that reaches it (``path_cycles``).
An output flit is the k-th of its phase at its port; its operands are the k-th flits of the
phase at the input ports that reach it. If they were accepted in cycles ``t[p]``, the flit
is due, valid at its port, in cycle ``max(t[p] + path[p])``, and it is measured at the first
cycle its port's ``valid`` shows it (after the port's previous flit went). An operand may
reach an output before its input accepts it (a fork's copy, below; on a path of no cycles,
``regs_per_stage`` 0, the flit itself while its input still waits): until then ``t[p]`` is
unknown and only the bound under backpressure applies. On such a path a stall holds the
phase's flits at the inputs, so there the phase starts when its first flit is offered.

* While no output of the switch has stalled since the phase's first flit went in (the
  phase's outputs are always ready), nothing inside ever waits except a sum for its later
  operand, so every flit must be valid in exactly that cycle: one cycle early or late is a
  latency mismatch.
* Under backpressure a flit may wait, but never arrive before its operands were offered
  plus the path: a fork hands its copy to every taker with room as soon as the flit reaches
  it, and the input's handshake completes only when the last taker has one, so behind a
  stalled output another output may show a flit whose operand its input has not yet
  accepted (at any depth of register slices, not only on paths of no cycles).

Circuit-switch manifests only: a fabric's manifest has no ``node_cycles`` and its cycles are
checked against the system model instead (fredfab.sim.verify.fabric_check).
"""

from __future__ import annotations

from fredfab.model.switch.arches import build_topology
from fredfab.model.switch.config import Configuration
from fredfab.model.switch.latency import path_cycles
from fredfab.sim.verify.scenario_file import Scenario


class LatencyCheck:
    """Due cycles of a scenario's output flits (see the module docstring)."""

    def __init__(self, manifest: dict, scenario: Scenario) -> None:
        self.enabled = "node_cycles" in manifest
        self.skew = scenario.latency_skew
        phases = scenario.phases
        #: accepted[n][p]: the cycles input port p accepted phase n's flits in, in order.
        self.accepted: list[dict[int, list[int]]] = [{} for _ in phases]
        #: offered[n][p]: the cycles phase n's flits were first offered at input port p.
        self.offered: list[dict[int, list[int]]] = [{} for _ in phases]
        #: The cycle phase n's first flit was accepted (None: not yet).
        self.first_accept: list[int | None] = [None] * len(phases)
        #: The cycle phase n's first flit was offered (None: not yet).
        self.first_offer: list[int | None] = [None] * len(phases)
        self.paths: list[list[dict[int, int]]] = []
        if not self.enabled:
            return
        params = manifest["params"]
        graph = build_topology(params["ports"], params["m"], params["arch"])
        width = manifest["config"]["word_width"]
        cycles = manifest["node_cycles"]
        reset = Configuration.from_words(graph, manifest["config"]["reset_words"], width)
        active = reset
        for ph in phases:
            if ph.words is not None:
                active = Configuration.from_words(graph, ph.words, width)
            self.paths.append(path_cycles(graph, active.codes, cycles))
            if ph.reset_after is not None:
                active = reset  # later phases start from the reset state

    def input_offered(self, phase: int, port: int, cycle: int) -> None:
        self.offered[phase].setdefault(port, []).append(cycle)
        if self.first_offer[phase] is None:
            self.first_offer[phase] = cycle

    def input_accepted(self, phase: int, port: int, cycle: int) -> None:
        self.accepted[phase].setdefault(port, []).append(cycle)
        if self.first_accept[phase] is None:
            self.first_accept[phase] = cycle

    def due(self, phase: int, port: int, index: int) -> tuple[int | None, int, int] | None:
        """(cycle the flit is due, None while an operand is offered but not yet accepted (a
        fork gave this output its copy first); the earliest cycle it may be valid, from the
        operands' first offers; the cycle its last operand went in), or None when an operand
        has not even been offered (the flit came out before it went in). The two cycles
        differ where an operand waited at its input (the module docstring)."""
        path = self.paths[phase][port]
        if not path:
            return None
        due, earliest, last_in = [], [], []
        for p, cycles in path.items():
            accepted = self.accepted[phase].get(p, [])
            offered = self.offered[phase].get(p, [])
            if index < len(accepted):
                due.append(accepted[index] + cycles)
                last_in.append(accepted[index])
            elif index < len(offered):  # taken by a fork before the input's handshake
                due.append(None)
                last_in.append(offered[index])
            else:
                return None
            earliest.append(offered[index] + cycles)
        full = None if None in due else max(due) + self.skew
        return full, max(earliest) + self.skew, max(last_in)

    def check(
        self, phase: int, port: int, index: int, valid_cycle: int, last_stall: int | None
    ) -> str | None:
        """What is wrong with the flit (the ``index``-th of ``phase`` at ``port``), first
        valid in ``valid_cycle``, when an output last stalled in ``last_stall``; None if
        nothing is."""
        if not self.enabled:
            return None
        due = self.due(phase, port, index)
        if due is None:
            return "the flit came out before all its operands went in"
        cycle, earliest, last_in = due
        # A stall before the phase's first flit went in delays nothing inside; without
        # register slices it holds the flits back at the inputs, so there the phase starts
        # when its first flit is offered.
        zero = 0 in self.paths[phase][port].values()
        start = (self.first_offer if zero else self.first_accept)[phase]
        exact = last_stall is None or (start is not None and last_stall < start)
        if exact and cycle is not None:
            if valid_cycle == cycle:
                return None
        elif valid_cycle >= earliest:
            return None
        else:
            cycle = earliest
        took = valid_cycle - last_in
        want = cycle - last_in
        when = "before it is due" if valid_cycle < cycle else "with every output ready, late"
        # Where each operand went in, so a report shows the cycles the verdict rests on.
        went = ", ".join(
            f"{p}: offered {self.offered[phase][p][index]}"
            + (
                f", accepted {acc[index]}"
                if index < len(acc := self.accepted[phase].get(p, []))
                else ""
            )
            for p in self.paths[phase][port]
        )
        return (
            f"valid {took} cycles after its last operand went in, {when} (due after {want}); "
            f"valid from cycle {valid_cycle}; input port {went}"
        )
