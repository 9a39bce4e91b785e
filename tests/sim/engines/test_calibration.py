"""The calibration protocol: the frozen parameters are the fit of the calibration subset,
and nothing else moves them (the checked points' measurements are never read)."""

import math
from dataclasses import replace

import pytest

from fredfab.model.validation.calibration import frozen
from fredfab.model.validation.suite import load_suite
from fredfab.sim.engines.calibration import CalibrationError, calibration_points, fit
from fredfab.sim.engines.validation import cluster, evaluate, network_time


def _blinded(suite):
    """The suite with every checked point's measurement replaced by NaN: a fit that read
    any of them would come out NaN, or different."""
    return [
        replace(
            d,
            points=tuple(p if p.calibration else replace(p, measured=math.nan) for p in d.points),
        )
        for d in suite
    ]


def test_frozen_values_are_the_fit_of_the_calibration_subset_alone():
    fitted = fit(_blinded(load_suite())).rounded()
    assert fitted == frozen()


def test_every_parameter_has_calibration_points_and_only_those():
    suite = load_suite()
    per = calibration_points(suite)
    assert all(per.values())
    assert all(p.calibration for pts in per.values() for _, p in pts)
    without = [
        replace(d, points=tuple(p for p in d.points if "kernel_efficiency" not in p.fits))
        for d in suite
    ]
    with pytest.raises(CalibrationError, match="kernel_efficiency"):
        calibration_points(without)


def test_network_time_scales_as_one_over_the_link_share():
    # The fit simulates each size once at full rate, relying on this.
    d = next(d for d in load_suite() if d.kind == "collective")
    full, part = frozen(), replace(frozen(), nvlink_fraction=frozen().nvlink_fraction / 2)
    t_full = network_time(cluster(d, 1, full), d.op, 8, 64 * 2**20)
    t_part = network_time(cluster(d, 1, part), d.op, 8, 64 * 2**20)
    assert t_part == pytest.approx(2 * t_full, rel=1e-9)


def _point(suite, dataset, name):
    d = next(d for d in suite if d.name == dataset)
    return d, next(p for p in d.points if p.name == name)


def test_the_software_factor_moves_the_2022_rows_only():
    suite = load_suite()
    faster = replace(frozen(), software_2022_factor=frozen().software_2022_factor * 1.05)
    d, p = _point(suite, "megatron-korthikanti-2022", "22B")
    assert evaluate(d, p, faster).estimate < evaluate(d, p, frozen()).estimate
    d, p = _point(suite, "megatron-sc21-table1", "1.7B")
    assert evaluate(d, p, faster).estimate == evaluate(d, p, frozen()).estimate


def test_the_software_factor_needs_a_dataset_that_carries_one():
    suite = load_suite()
    stripped = [
        replace(d, kernel_efficiency_factor=None) if d.name == "megatron-korthikanti-2022" else d
        for d in suite
    ]
    with pytest.raises(CalibrationError, match="kernel_efficiency_factor"):
        fit(stripped)
