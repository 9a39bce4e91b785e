"""Pure-Python models of FRED: flows, golden collectives, topology, router, functional
switch model and the wafer system model. Never imports Amaranth or cocotb."""
