"""Measured systems the estimates are checked against: the validation data (data/*.toml), the
calibration parameters and the error metrics. fredfab.sim.engines.validation runs them."""
