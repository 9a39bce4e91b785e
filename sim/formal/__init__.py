"""Formal proofs of the switch RTL with SymbiYosys (docs/formal.md).

Every harness here elaborates the same generator classes that ``fred generate`` turns into
Verilog (hw/), wraps them with assumptions on their inputs and assertions on their outputs,
and hands the RTLIL to ``yowasp-sby``. ``python -m fredfab.sim.formal`` (``make formal``)
runs every proof and writes build/formal/summary.json.
"""
