"""Each fix of the compute model undone alone: the variants refit the compute parameters on
the calibration rows, and undoing all of them gives back the model before them."""

from dataclasses import replace

import pytest

from fredfab.model.validation.calibration import frozen
from fredfab.model.validation.suite import load_suite
from fredfab.sim.engines.ablation import VARIANTS, ablate
from fredfab.sim.engines.calibration import CalibrationError

#: The single efficiency every GEMM ran at before GEMMs were timed by shape (fitted the same
#: way on SC'21's 1.7B row; docs/validation.md).
ONE_EFFICIENCY_FIT = 0.5796


def _small_suite():
    """The two training datasets cut to their calibration row and one checked row each (the
    NCCL curve stays: the protocol names a calibration point for every parameter)."""
    keep = {"megatron-sc21-table1": {"1.7B", "3.6B"}, "megatron-korthikanti-2022": {"22B", "175B"}}
    return [
        replace(d, points=tuple(p for p in d.points if p.name in keep[d.name]))
        if d.name in keep
        else d
        for d in load_suite()
    ]


def test_as_shipped_refits_the_frozen_values_and_none_gives_back_the_old_model():
    shipped, none = ablate(_small_suite(), [VARIANTS[0], VARIANTS[-1]])
    assert shipped.calibration.rounded() == frozen()
    assert none.calibration.rounded().kernel_efficiency == ONE_EFFICIENCY_FIT
    assert none.calibration.software_2022_factor == 1.0
    assert set(shipped.checked) == {"megatron-sc21-table1", "megatron-korthikanti-2022", "all"}
    assert shipped.checked["all"].n == 2
    # The old model was worse on the 2022 row it did not fit.
    k = "megatron-korthikanti-2022"
    assert none.checked[k].max_abs > shipped.checked[k].max_abs + 0.05


def test_the_variants_need_one_npu():
    suite = _small_suite()
    other = [replace(d, npu="h100") if d.name == "megatron-sc21-table1" else d for d in suite]
    with pytest.raises(CalibrationError, match="one NPU"):
        ablate(other, VARIANTS[:1])
