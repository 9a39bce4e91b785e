"""cocotb testbenches for the generated switch Verilog (run by fredfab.sim.verify.cosim).

``switch_tb`` is a generic, manifest-driven bench: it reads the switch's JSON manifest
(hw/manifest.py) and a scenario file written by the Python side, both named by environment
variables, and registers one cocotb test per scenario. Nothing in it knows a port count, a
payload width or a configuration encoding.
"""
