"""NPUs as data: the shipped files, a user's file, and what is refused."""

import pytest

from fredfab.model.training.config import NPU, carried_kernel_efficiency
from fredfab.model.training.npu_files import NPUError, load_npu, npu_from_dict, shipped_npus
from fredfab.model.validation.calibration import frozen


def test_shipped_npus_are_datasheet_numbers_and_the_calibrated_efficiency():
    assert {"a100", "h100", "wafer"} <= set(shipped_npus())
    a100 = load_npu("a100")
    assert a100.peak_flops == 312e12 and a100.hbm_bytes == 80e9
    assert a100.efficiency == frozen().kernel_efficiency
    h100 = load_npu("h100")
    assert h100.peak_flops > 3 * a100.peak_flops and h100.name == "h100"


def test_the_wafer_file_is_the_default_npu():
    assert load_npu("wafer") == NPU()
    assert NPU().efficiency == carried_kernel_efficiency() == load_npu("a100").efficiency


def _npu(**kw):
    data = {
        "schema": "fred-npu/1",
        "name": "mine",
        "peak_TFLOPS": 100,
        "hbm_GBps": 1000,
        "hbm_GB": 16,
        "kernel_efficiency": 0.6,
        "sources": {k: "test" for k in ("peak_TFLOPS", "hbm_GBps", "hbm_GB", "kernel_efficiency")},
    }
    data.update(kw)
    return {k: v for k, v in data.items() if v is not None}


def test_a_users_npu_file_loads(tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text(
        'schema = "fred-npu/1"\nname = "mine"\npeak_TFLOPS = 100\nhbm_GBps = 1000\n'
        'hbm_GB = 16\nkernel_efficiency = "a100"\n[sources]\npeak_TFLOPS = "a"\n'
        'hbm_GBps = "b"\nhbm_GB = "c"\nkernel_efficiency = "d"\n'
    )
    npu = load_npu(f)
    assert npu.peak_flops == 100e12 and npu.hbm_bandwidth == 1000e9
    assert npu.efficiency == load_npu("a100").efficiency
    # Without [gemm] every GEMM runs at the efficiency; without hbm_efficiency the
    # datasheet rate is sustained.
    assert npu.gemm is None and npu.hbm_rate == npu.hbm_bandwidth


GEMM = {"sms": 80, "tiles": ["256x128", "64 x 64"], "tile_k": 32, "l2_GBps": 5000}


def test_a_gemm_table_and_a_measured_hbm_share_load():
    sources = {**_npu()["sources"], "gemm": "g", "hbm_efficiency": "h"}
    npu = npu_from_dict(_npu(gemm=GEMM, hbm_efficiency=0.9, sources=sources), "mine.toml")
    assert npu.gemm.sms == 80 and npu.gemm.tiles == ((256, 128), (64, 64))
    assert npu.gemm.tile_k == 32 and npu.gemm.l2_bandwidth == 5000e9
    assert npu.hbm_rate == pytest.approx(0.9 * 1000e9)
    carried = npu_from_dict(_npu(hbm_efficiency="a100", sources=sources), "mine.toml")
    assert carried.hbm_efficiency == load_npu("a100").hbm_efficiency < 1


@pytest.mark.parametrize(
    "change, message",
    [
        ({"kernel_efficiency": 1.5}, "kernel_efficiency"),
        ({"peak_TFLOPS": 0}, "peak_TFLOPS"),
        ({"peak_TFLOPS": 1e300}, "peak_TFLOPS"),  # it overflowed: "peak_flops ... got inf"
        ({"hbm_GBps": 1e300}, "hbm_GBps"),
        ({"sources": {"peak_TFLOPS": "x"}}, "sources"),
        ({"schema": "fred-npu/2"}, "schema"),
        ({"extra": 1}, "extra"),
        ({"hbm_efficiency": 0}, "hbm_efficiency"),
        ({"hbm_efficiency": 0.9}, "sources"),  # a measured share names its measurement
        ({"gemm": GEMM}, "sources"),
        ({"gemm": {**GEMM, "tiles": ["256x"]}}, "tiles"),
        ({"gemm": {**GEMM, "tiles": []}}, "tiles"),
        ({"gemm": {**GEMM, "sms": 0}}, "sms"),
        ({"gemm": {**GEMM, "warps": 4}}, "warps"),
        # Only a shipped NPU's share is carried: a file may not name a file (it could be
        # itself, or one naming it back: that used to recurse until Python gave up).
        ({"kernel_efficiency": "mine.toml"}, "kernel_efficiency' must be a share .* got 'mine"),
        ({"hbm_efficiency": "other.toml"}, "hbm_efficiency' must be a share"),
        ({"kernel_efficiency": "v100"}, r"shipped NPU \(a100, h100, wafer\)"),
    ],
)
def test_bad_npu_files_are_refused(change, message):
    with pytest.raises(NPUError, match=message):
        npu_from_dict(_npu(**change), "mine.toml")


def test_an_unknown_npu_name_lists_the_shipped_ones():
    with pytest.raises(NPUError, match="a100, h100, wafer"):
        load_npu("v100")
