"""The traffic of the hardware soak, defined once for both runs of it: the hardware endpoints
(hw_endpoint.py, in hw_soak.py's harness) and the Python reference (endpoint.py through the
bench's loop, on short runs, to check the hardware packet for packet).

Every port runs the three phases of 3D parallelism at once (scenarios.py): MP All-Reduce in
pairs (slot 1), DP All-Reduce over every port (slot 2), PP sends to the next port (unicast).
Each flow comes in messages (traffic.Messages: a few to 32 packets, then a pause once they
are acknowledged), so phases come and go and preempt each other both ways; packets are
payload hashes (model/packet/payload.py), reductions lane-wise wrapping sums (integer
element types). Links may drop, corrupt, burst and fall silent (model/packet/faults.py);
NPUs idle and hold credits back (endpoint.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from fredfab.hw.packet.params import PacketParams
from fredfab.model.packet.flow_tables import inputs_of_input, inputs_of_output
from fredfab.model.packet.format import UNICAST_INDEX, VC_DP, VC_MP, VC_PP
from fredfab.model.packet.payload import lane_sum, packet_payload
from fredfab.model.packet.slot_check import with_check
from fredfab.model.prng import seed
from fredfab.model.switch.router import route
from fredfab.sim.verify.packet.endpoint import npu_seed
from fredfab.sim.verify.packet.hw_endpoint import EndpointKnobs, HwRecv, HwSend
from fredfab.sim.verify.packet.scenario import LinkHostility, PacketPhase, PacketScenario
from fredfab.sim.verify.packet.scenarios import DP_SLOT, MP_SLOT, dp_flows, mp_flows, pp_flows
from fredfab.sim.verify.packet.traffic import (
    Messages,
    PacketTraffic,
    RecvStream,
    SendStream,
    SlotLoad,
)

#: Packets per stream of a soak that runs until its cycles are up (never completes).
FOREVER = (1 << 31) - 1
#: Message sizes (1 to 2**size_bits packets) and pauses (0 to 2**gap_bits - 1 cycles):
#: messages of up to 32 packets, pauses up to about a dozen packets' worth of link.
SIZE_BITS, GAP_BITS = 5, 7


@dataclass(frozen=True)
class SoakPlan:
    ports: int
    seed: int = 1
    links: LinkHostility = field(default_factory=LinkHostility)
    packets: int = FOREVER
    window: int = 32
    sender_timeout: int = 600
    receiver_timeout: int = 400
    size_bits: int = SIZE_BITS
    gap_bits: int = GAP_BITS

    def phases(self) -> tuple[PacketPhase, ...]:
        n, P = self.packets, self.ports
        return (
            PacketPhase.of(VC_MP, MP_SLOT, mp_flows(P), n),
            PacketPhase.of(VC_DP, DP_SLOT, dp_flows(P), n),
            PacketPhase.of(VC_PP, UNICAST_INDEX, pp_flows(P), n),
        )

    def scenario(self, max_cycles: int) -> PacketScenario:
        return PacketScenario(
            f"soak_plan_{self.seed}",
            self.phases(),
            self.seed,
            self.links,
            self.window,
            self.sender_timeout,
            self.receiver_timeout,
            max_cycles,
        )

    def payload_seed(self, vc: int, index: int, port: int, dst: int = 0) -> int:
        return seed(f"payload:{self.seed}:{vc}:{index}:{dst}", port)

    def messages(self, vc: int, index: int, first_input: int) -> tuple[int, int, int]:
        return (
            seed(f"messages:{self.seed}:{vc}:{index}", first_input),
            self.size_bits,
            self.gap_bits,
        )

    def streams(self, port: int) -> tuple[list[HwSend], list[HwRecv]]:
        """What the endpoint at ``port`` sends and receives."""
        sends, recvs = [], []
        for ph in self.phases():
            for f in ph.flow_list:
                ips, ops = sorted(f.ips), sorted(f.ops)
                dst = ops[0] if ph.slot == UNICAST_INDEX else 0
                if port in ips:
                    sends.append(
                        HwSend(
                            ph.vc,
                            ph.slot,
                            dst,
                            tuple(ops),
                            self.payload_seed(ph.vc, ph.slot, port, dst),
                            ph.start,
                            ph.packets,
                            self.messages(ph.vc, ph.slot, ips[0]),
                        )
                    )
                if port in ops:
                    src = ips[0] if ph.slot == UNICAST_INDEX else 0
                    seeds = tuple(self.payload_seed(ph.vc, ph.slot, p, dst) for p in ips)
                    recvs.append(HwRecv(ph.vc, ph.slot, src, seeds, ph.packets))
        return sends, recvs

    def knobs(self, port: int) -> EndpointKnobs:
        return EndpointKnobs(
            self.window,
            self.sender_timeout,
            self.receiver_timeout,
            self.links.idle,
            self.links.stall,
            npu_seed(self.seed, port),
        )

    def loads(self, params: PacketParams) -> list[SlotLoad]:
        s = params.switch
        out = []
        for ph in self.phases():
            if ph.slot == UNICAST_INDEX:
                continue
            routing = route(ph.flow_list, s.ports, s.m, arch=s.arch)
            out.append(
                SlotLoad(
                    ph.slot,
                    with_check(routing.config.to_words(s.word_width), s.word_width),
                    inputs_of_input(routing.flows, s.ports),
                    inputs_of_output(routing.flows, s.ports),
                )
            )
        return out

    def traffic(self, params: PacketParams) -> PacketTraffic:
        """The same streams for the Python endpoints (finite ``packets`` only)."""
        if self.packets == FOREVER:
            raise ValueError("the Python reference runs finite streams: set packets")
        s, pf = params.switch, params.fmt.packet_flits
        bits = s.data_width
        out = PacketTraffic(
            sends={p: [] for p in range(self.ports)},
            recvs={p: [] for p in range(self.ports)},
            loads=self.loads(params),
        )
        for p in range(self.ports):
            sends, recvs = self.streams(p)
            for st in sends:
                packets = [packet_payload(st.seed, k, pf, bits) for k in range(st.n_packets)]
                out.sends[p].append(
                    SendStream(
                        st.vc,
                        st.index,
                        st.dst,
                        packets,
                        frozenset(st.receivers),
                        st.start,
                        Messages(*st.messages),
                    )
                )
            for r in recvs:
                expect = [
                    [
                        lane_sum(
                            [packet_payload(sd, k, pf, bits)[f] for sd in r.seeds],
                            s.element.bits,
                            s.lanes,
                        )
                        for f in range(pf)
                    ]
                    for k in range(r.n_packets)
                ]
                out.recvs[p].append(RecvStream(r.vc, r.index, r.src, expect))
        return out
