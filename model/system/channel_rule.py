"""How many of a collective library's channels a collective runs on, by its message size.

NCCL runs a collective on channels (each a thread block driving its own ring) and uses fewer
of them for small messages. Its rule (NVIDIA/nccl src/enqueue.cc at v2.17.1-1, commit
5d3ab08b69754cb863ab1bf6e3fb6f7612bb725b, ring and tree algorithms)::

    while (nBytes < nc * nt * threadThreshold) nc--;     (while nc >= 2)

starts from the communicator's channel count and drops one channel while the message
(``nBytes``, the whole buffer: a rank's for All-Reduce, all ranks' for All-Gather and
Reduce-Scatter, as CollectiveRequest.size_bytes has it) holds less than ``nt x
threadThreshold`` bytes per channel. So a collective of ``size`` bytes runs on

    active = clamp(floor(size / threshold), 1, channels)

channels. For the ring LL protocol ``threshold`` = ``nt x NCCL_LL_THREAD_THRESHOLD x
nRanks`` (src/graph/tuning.cc multiplies ring LL's per-thread threshold by the ranks), so a
rule states its threshold per rank of the group (``threshold_bytes_per_rank``). Below one
channel's threshold NCCL also halves the threads of that one channel; the rule leaves that
out (docs/validation.md: the small sizes where the model is fastest against NCCL-tests).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fredfab.model.toml_fields import check_int, check_number

#: Channels a rule may name (NCCL's MAXCHANNELS is 32, src/include/devcomm.h).
MAX_CHANNELS = 1024


@dataclass(frozen=True)
class ChannelRule:
    channels: int  # the library's channel count: all of them run for large messages
    threshold_bytes_per_rank: float  # bytes a channel needs, per rank of the group

    def __post_init__(self) -> None:
        check_int(self.channels, "channel rule: channels", lo=1, hi=MAX_CHANNELS)
        check_number(
            self.threshold_bytes_per_rank,
            "channel rule: threshold bytes per rank",
            lo=0,
            lo_open=True,
        )

    def threshold(self, ranks: int) -> float:
        """Bytes of the message each channel needs before another one runs."""
        return self.threshold_bytes_per_rank * max(ranks, 1)

    def active(self, size_bytes: float, ranks: int) -> int:
        """Channels a collective of ``size_bytes`` over ``ranks`` ranks runs on."""
        return min(self.channels, max(1, math.floor(size_bytes / self.threshold(ranks))))

    def share(self, size_bytes: float, ranks: int) -> float:
        """The share of the protocol's full bandwidth those channels carry."""
        return self.active(size_bytes, ranks) / self.channels
