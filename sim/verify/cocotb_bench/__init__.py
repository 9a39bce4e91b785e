"""cocotb testbenches for the generated switch Verilog (run by fredfab.sim.verify.cosim).

``switch_tb`` is a generic, manifest-driven bench: it reads the switch's JSON manifest
(hw/manifest.py) and a scenario file written by the Python side, both named by environment
variables, and registers one cocotb test per scenario. Nothing in it knows a port count, a
payload width or a configuration encoding. Its pieces, one per module: ``harness`` (the
switch's ports from the manifest), ``patterns`` (idle and backpressure patterns, shared with
the scenario builder), ``drivers`` (flit sources, configuration writer, select),
``monitors`` (flit sinks, per-phase timing), ``scoreboard``, ``sequencer`` (the phases)
and ``env`` (all of them around one switch, clocked from one loop).
"""
