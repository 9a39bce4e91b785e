"""A fabric's collective library ([collectives]), achievable link share per dimension, and
whether its links carry FRED's packet headers."""

import pytest

from fredfab.model.errors import InputError
from fredfab.model.system import bus_factor, load_fabric
from fredfab.model.system.channel_rule import ChannelRule
from fredfab.model.system.collective_library import IDEAL, Protocol, dependent_steps, library
from fredfab.model.system.loader import fabric_from_dict
from fredfab.model.validation.calibration import CLUSTER_FILE

_DIMS = {"topology": ["Switch"], "npus_count": [8], "bandwidth_GBps": [300], "latency_ns": [0]}
KIB, MIB = 2**10, 2**20
#: The links' bus rate in the tests below: a ring All-Reduce's network time is
#: bus_factor x size / RATE.
RATE = 234e9


def _fab(**top):
    return fabric_from_dict({"schema": "fred-fabric/1", "name": "t", "dims": dict(_DIMS), **top})


def _net(size):
    return bus_factor("all-reduce", 8) * size / RATE


def test_the_ideal_library_leaves_the_network_time_alone():
    assert IDEAL.ideal and IDEAL.time("all-reduce", 8, 1e-3, MIB) == 1e-3
    assert IDEAL.time("all-reduce", 8, 0.0, 0.0) == 0.0


def test_a_library_adds_its_fixed_cost_and_picks_the_fastest_protocol():
    lib = library(
        "l", 10e-6, [Protocol("LL", 1e-6, 0.5e-6, 0.25), Protocol("Simple", 8e-6, 3e-6, 1.0)]
    )
    steps = dependent_steps("all-reduce", 8)
    assert steps == 14
    small, large = 1e-7, 1e-3
    assert lib.best("all-reduce", 8, small, 8).name == "LL"
    assert lib.time("all-reduce", 8, small, 8) == pytest.approx(10e-6 + 1e-6 + 14 * 0.5e-6 + 4e-7)
    assert lib.best("all-reduce", 8, large, 8 * MIB).name == "Simple"
    assert lib.time("all-reduce", 8, large, 8 * MIB) == pytest.approx(
        10e-6 + 8e-6 + 14 * 3e-6 + large
    )


def test_a_protocol_without_a_channel_rule_ignores_the_message_size():
    lib = library(
        "l", 10e-6, [Protocol("LL", 1e-6, 0.5e-6, 0.25), Protocol("Simple", 8e-6, 3e-6, 1.0)]
    )
    for net in (1e-7, 1e-5, 1e-3):
        times = {s: lib.protocol_times("all-reduce", 8, net, s) for s in (8, 64 * KIB, 8 * MIB)}
        assert times[8] == times[64 * KIB] == times[8 * MIB]
        assert times[8] == [1e-6 + 14 * 0.5e-6 + net / 0.25, 8e-6 + 14 * 3e-6 + net]


def test_a_channel_rule_gives_small_messages_fewer_channels_and_the_cap_binds_large_ones():
    ll = Protocol("LL", 0.0, 0.0, 0.5, ChannelRule(24, 4096), max_bus_bandwidth=80e9)
    assert not ll.ideal
    # Below one channel's 32 KiB (8 ranks): one channel of 24, 1/24 of the share.
    small = 16 * KIB
    assert ll.data_time("all-reduce", 8, _net(small), small) == pytest.approx(
        _net(small) * 24 / 0.5
    )
    # 256 KiB: 8 channels; 24 x 0.5 x 234 GB/s would be 117 GB/s, so 8 of them stay below
    # the cap.
    mid = 256 * KIB
    assert ll.data_time("all-reduce", 8, _net(mid), mid) == pytest.approx(_net(mid) * 3 / 0.5)
    # 1 MiB: all 24 channels, 117 GB/s of bus bandwidth, capped at 80.
    big = MIB
    assert ll.data_time("all-reduce", 8, _net(big), big) == pytest.approx(1.75 * big / 80e9)
    uncapped = Protocol("LL", 0.0, 0.0, 0.5, ChannelRule(24, 4096))
    assert uncapped.data_time("all-reduce", 8, _net(big), big) == pytest.approx(_net(big) / 0.5)


def test_the_library_picks_by_message_size_when_a_protocol_has_a_channel_rule():
    # The same network time, 1 us: LL with all 24 channels takes 1 + 2 us, Simple 10 + 1 us;
    # LL on one channel (8 KiB) 1 + 48 us.
    lib = library(
        "l",
        0.0,
        [
            Protocol("LL", 1e-6, 0.0, 0.5, ChannelRule(24, 4096)),
            Protocol("Simple", 10e-6, 0.0, 1.0),
        ],
    )
    net = 1e-6
    assert lib.best("all-reduce", 8, net, 8 * MIB).name == "LL"
    assert lib.best("all-reduce", 8, net, 8 * KIB).name == "Simple"


def test_the_protocols_dict_names_a_channel_rule_only_where_there_is_one():
    lib = library(
        "l",
        0.0,
        [
            Protocol("LL", 0.0, 0.0, 0.5, ChannelRule(24, 4096), max_bus_bandwidth=87.7e9),
            Protocol("Simple", 0.0, 0.0, 1.0),
        ],
    )
    ll, simple = lib.to_dict()["protocols"]
    assert ll["channels"] == 24 and ll["channel_threshold_bytes_per_rank"] == 4096
    assert ll["max_bus_GBps"] == pytest.approx(87.7)
    assert set(simple) == {"name", "base_latency_us", "step_latency_us", "bandwidth_fraction"}


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


_LL = {"name": "LL", "base_latency_us": 3.6, "step_latency_us": 0.47, "bandwidth_fraction": 0.5}


def _with_ll(**fields):
    return _fab(collectives={"library": "x", "fixed_cost_us": 0, "protocols": [{**_LL, **fields}]})


def test_a_channel_rule_and_a_cap_load_from_a_file():
    rule = {"channels": 24, "channel_threshold_bytes_per_rank": 4096, "max_bus_GBps": 87.7}
    (ll,) = _with_ll(**rule).library.protocols
    assert ll.channels == ChannelRule(24, 4096)
    assert ll.max_bus_bandwidth == pytest.approx(87.7e9)
    (plain,) = _with_ll().library.protocols
    assert plain.channels is None and plain.max_bus_bandwidth == float("inf")


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"channels": 24}, "needs its pair"),
        ({"channel_threshold_bytes_per_rank": 4096}, "needs its pair"),
        ({"channels": 0, "channel_threshold_bytes_per_rank": 4096}, "'channels'"),
        ({"channels": 2.5, "channel_threshold_bytes_per_rank": 4096}, "'channels'"),
        ({"channels": 24, "channel_threshold_bytes_per_rank": -1}, "channel_threshold"),
        ({"channels": 24, "channel_threshold_bytes_per_rank": "4 KiB"}, "channel_threshold"),
        ({"max_bus_GBps": 0}, "max_bus_GBps"),
        ({"max_bus_GBps": float("inf")}, "max_bus_GBps"),
        ({"max_channels": 24}, "unknown key"),
    ],
)
def test_bad_channel_rules_are_refused_in_one_line(fields, message):
    with pytest.raises(InputError, match=message) as exc:
        _with_ll(**fields)
    assert "\n" not in str(exc.value) and "protocols[0]" in str(exc.value)


def test_the_cluster_files_ll_runs_nccls_channels_per_size():
    lib = load_fabric(CLUSTER_FILE).library
    ll, *others = lib.protocols
    sizes = [32 * KIB, 64 * KIB, 128 * KIB, 256 * KIB, 512 * KIB, MIB]
    assert ll.name == "LL" and [ll.channels.active(s, 8) for s in sizes] == [1, 2, 4, 8, 16, 24]
    assert ll.max_bus_bandwidth == pytest.approx(87.7e9)
    assert all(p.channels is None and p.max_bus_bandwidth == float("inf") for p in others)


def test_packet_headers_belong_to_the_wafer_fabrics_only():
    assert all(load_fabric(n).packet_headers for n in ("mesh-5x4", "fred-a", "fred-d"))
    assert not _fab().packet_headers
    assert _fab(packet_headers=True).packet_headers
    assert load_fabric("fred-a").library.ideal
