"""A protocol's channel rule: how many of the library's channels a collective of a given
message size runs on (NCCL's loop in src/enqueue.cc)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fredfab.model.errors import InputError
from fredfab.model.system.channel_rule import ChannelRule

KIB = 2**10
LL = ChannelRule(24, 4096)  # NCCL 2.17's ring LL on an A100 node: 512 threads x 8 bytes


def _nccl(n_bytes: float, channels: int, threshold: float) -> int:
    """NCCL's loop, literally: drop a channel while the message is below nc x threshold."""
    nc = channels
    while n_bytes < nc * threshold and nc >= 2:
        nc -= 1
    return nc


def test_sizes_below_one_channels_threshold_run_on_one_channel():
    assert [LL.active(s, 8) for s in (8, 1 * KIB, 16 * KIB, 32 * KIB - 1)] == [1, 1, 1, 1]


def test_each_channel_takes_32_kib_on_eight_ranks_up_to_all_24():
    sizes = [32 * KIB, 64 * KIB, 128 * KIB, 256 * KIB, 512 * KIB, 768 * KIB, 1024 * KIB]
    assert [LL.active(s, 8) for s in sizes] == [1, 2, 4, 8, 16, 24, 24]
    assert LL.share(512 * KIB, 8) == pytest.approx(16 / 24)


def test_the_threshold_grows_with_the_ranks():
    assert LL.threshold(8) == 32 * KIB and LL.threshold(16) == 64 * KIB
    assert LL.active(64 * KIB, 16) == 1 and LL.active(64 * KIB, 8) == 2


@given(
    st.floats(0, 2**34, allow_nan=False),
    st.integers(1, 32),
    st.integers(1, 64),
    st.sampled_from([1024, 4096, 8192]),
)
def test_the_rule_is_nccls_loop(size, channels, ranks, per_rank):
    rule = ChannelRule(channels, per_rank)
    assert rule.active(size, ranks) == _nccl(size, channels, per_rank * ranks)


@pytest.mark.parametrize(
    "channels, threshold, message",
    [
        (0, 4096, "channels"),
        (2.5, 4096, "channels"),
        (24, 0, "threshold"),
        (24, float("inf"), "threshold"),
    ],
)
def test_bad_rules_are_refused(channels, threshold, message):
    with pytest.raises(InputError, match=message):
        ChannelRule(channels, threshold)
