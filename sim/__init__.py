"""Running things, in four homes: cli/ (the `fred` command, tables and plots), verify/
(cocotb benches, soak, timing measurement, toolchain, synthesis), engines/ (the network and
training simulators) and bench/ (`make bench`)."""
