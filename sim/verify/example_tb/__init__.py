"""A plain-Verilog example bench for the generated switch, rendered from its manifest alone
(render.py), and its Icarus Verilog run (run.py). docs/switch-rtl.md, "Integrating the
switch", explains it."""
