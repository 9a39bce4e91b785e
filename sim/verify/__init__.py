"""Verification of the generated RTL: the cocotb benches and their runner, scenarios and
traffic, the self-checking soak, timing-card measurement, simulator toolchain and synthesis."""
