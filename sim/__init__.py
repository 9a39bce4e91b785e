"""Running things: cocotb benches and runner, timing extraction, system simulator, CLI."""
