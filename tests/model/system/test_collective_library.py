"""A fabric's collective library ([collectives]), achievable link share per dimension, and
whether its links carry FRED's packet headers."""

import pytest

from fredfab.model.errors import InputError
from fredfab.model.system import load_fabric
from fredfab.model.system.collective_library import IDEAL, Protocol, dependent_steps, library
from fredfab.model.system.loader import fabric_from_dict

_DIMS = {"topology": ["Switch"], "npus_count": [8], "bandwidth_GBps": [300], "latency_ns": [0]}


def _fab(**top):
    return fabric_from_dict({"schema": "fred-fabric/1", "name": "t", "dims": dict(_DIMS), **top})


def test_the_ideal_library_leaves_the_network_time_alone():
    assert IDEAL.ideal and IDEAL.time("all-reduce", 8, 1e-3) == 1e-3
    assert IDEAL.time("all-reduce", 8, 0.0) == 0.0


def test_a_library_adds_its_fixed_cost_and_picks_the_fastest_protocol():
    lib = library(
        "l", 10e-6, [Protocol("LL", 1e-6, 0.5e-6, 0.25), Protocol("Simple", 8e-6, 3e-6, 1.0)]
    )
    steps = dependent_steps("all-reduce", 8)
    assert steps == 14
    small, large = 1e-7, 1e-3
    assert lib.best("all-reduce", 8, small).name == "LL"
    assert lib.time("all-reduce", 8, small) == pytest.approx(10e-6 + 1e-6 + 14 * 0.5e-6 + 4e-7)
    assert lib.best("all-reduce", 8, large).name == "Simple"
    assert lib.time("all-reduce", 8, large) == pytest.approx(10e-6 + 8e-6 + 14 * 3e-6 + large)


def test_collectives_table_and_achievable_fraction_load_from_a_file():
    fab = _fab(
        collectives={
            "library": "x",
            "fixed_cost_us": 5,
            "protocols": [
                {
                    "name": "Simple",
                    "base_latency_us": 1,
                    "step_latency_us": 2,
                    "bandwidth_fraction": 1,
                }
            ],
        }
    )
    assert fab.library.fixed_cost == pytest.approx(5e-6) and not fab.library.ideal
    half = fabric_from_dict(
        {
            "schema": "fred-fabric/1",
            "name": "h",
            "dims": {**_DIMS, "achievable_fraction": [0.5]},
        }
    )
    assert half.dims.dims[0].bandwidth == pytest.approx(_fab().dims.dims[0].bandwidth / 2)


@pytest.mark.parametrize(
    "dims, message",
    [
        ({"achievable_fraction": [0.5, 0.5]}, "achievable_fraction"),
        ({"achievable_fraction": [1.5]}, "achievable_fraction"),
    ],
)
def test_bad_achievable_fractions_are_refused(dims, message):
    with pytest.raises(InputError, match=message):
        fabric_from_dict({"schema": "fred-fabric/1", "name": "b", "dims": {**_DIMS, **dims}})


def test_bad_protocols_are_refused():
    proto = {"name": "LL", "base_latency_us": 1, "step_latency_us": 0, "bandwidth_fraction": 0}
    bad = {"library": "x", "protocols": [proto]}
    with pytest.raises(InputError, match="bandwidth"):
        _fab(collectives=bad)


def test_packet_headers_belong_to_the_wafer_fabrics_only():
    assert all(load_fabric(n).packet_headers for n in ("mesh-5x4", "fred-a", "fred-d"))
    assert not _fab().packet_headers
    assert _fab(packet_headers=True).packet_headers
    assert load_fabric("fred-a").library.ideal
