"""Deterministic link faults for the loop (loop.py ``run_loop(scripted=...)``): patterns a
random fault model reaches only by luck.

``WorstWindow``: the pattern no later flit of a VC repairs (docs/switch-rtl.md, "Syncs";
tests/model/packet/test_link.py ``test_the_worst_window_comes_back_with_one_sync`` builds
it on the link model): on one VC of one link, the first packet is lost whole and each of
the next ``depth - 1`` packets loses its head and its final flit, so the reader counts
none of them and the sender ends up with no credit; everything after passes. Only a sync
of the VC brings the window's credits back."""

from __future__ import annotations

from dataclasses import dataclass, field

from fredfab.model.errors import InputError
from fredfab.model.packet.format import DATA_VCS, LinkFlit


@dataclass
class WorstWindow:
    """The pattern above on data VC ``vc`` over a credit window of ``depth`` packets
    (PacketFormat.data_depth). ``syncs_after``: syncs of ``vc`` that passed once the
    pattern was complete; ``window_done``: the last flit of the pattern was taken."""

    vc: int
    depth: int
    flits: int = field(default=0, init=False)
    dropped: int = field(default=0, init=False)
    heads_seen: int = field(default=0, init=False)
    window_done: bool = field(default=False, init=False)
    syncs_after: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.vc not in DATA_VCS:
            raise InputError(f"vc must be a data VC {DATA_VCS}, got {self.vc}")
        if self.depth < 1:
            raise InputError(f"depth must be >= 1 packet, got {self.depth}")

    def step(self, flit: LinkFlit | None) -> LinkFlit | None:
        if flit is None:
            return None
        self.flits += 1
        if flit.vc != self.vc:
            return flit
        if flit.sync:
            self.syncs_after += self.window_done
            return flit
        if flit.head:
            self.heads_seen += 1
        packet = self.heads_seen - 1  # the packet this flit belongs to, from its head
        if self.window_done or packet < 0:
            return flit
        lost = packet == 0 or flit.head or flit.last
        if flit.last and packet == self.depth - 1:
            self.window_done = True
        if lost:
            self.dropped += 1
            return None
        return flit

    def counts(self) -> dict[str, int]:
        return {
            "flits": self.flits,
            "dropped": self.dropped,
            "corrupted": 0,
            "undetected": 0,
            "bursts": 0,
            "silences": 0,
            "silenced": 0,
        }
