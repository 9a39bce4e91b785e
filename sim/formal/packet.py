"""Harnesses of packet mode (hw/packet/), written against the link interface: link flits
(``head``, ``last``, ``vc``, ``pkt``), credit pulses per VC, and the buffer depths the packet
manifest states (hw/packet/manifest.py, ``credits.npu_buffers_assumed``), not against
internal signal names, so that they hold for any implementation of the same protocol.

The link monitor (``LinkMonitor``) watches one ``tx`` link and the credits coming back on
it. The receiver (the NPU) is any receiver that keeps the credit rule: it returns a credit
on VC v only for a packet of VC v it holds (``assume``). Asserted, per VC:

* ``credits``: packets outstanding (heads sent less credits returned) never exceed the
  depth the manifest states, so a credit counter never goes below zero; a head leaves only
  while a credit is held ("no flit without a credit");
* ``framing``: a data packet is whole on the link: its body flits follow its head on the
  head's VC, no other data packet begins before its ``last``, and no body flit appears
  outside a packet (two phases never drive one output link); a control packet is one flit,
  head and last, on the control VC;
* ``pkt``: a head carries the count of packets sent before it on its VC (modulo 16) and the
  body flits carry their head's.
"""

from __future__ import annotations

from dataclasses import replace

from amaranth.asserts import AnySeq
from amaranth.hdl import Array, Assert, Assume, Cat, Cover, Module, Mux, Signal

from fredfab.hw.packet.input_port import InputPort
from fredfab.hw.packet.layouts import header_layout, payload_flit_layout
from fredfab.hw.packet.link_retry import RetryReceiver
from fredfab.hw.packet.manifest import manifest_of
from fredfab.hw.packet.output_port import OutputPort
from fredfab.hw.packet.params import PacketParams
from fredfab.hw.packet.switch import PacketSwitch
from fredfab.hw.params import SwitchParams
from fredfab.model.packet.format import (
    DATA_VCS,
    HEADER_BITS,
    KIND_NACK,
    N_VCS,
    PKT_BITS,
    VC_CTRL,
    VC_NAMES,
    PacketFormat,
)
from fredfab.sim.formal import streams
from fredfab.sim.formal.mutation import mutated
from fredfab.sim.formal.runner import harness_module

#: Small but complete: two payload flits per packet, two credits per VC, 48-bit flits
#: (three int16 lanes: a header fits).
FORMAL_FORMAT = PacketFormat(packet_flits=2, data_depth=2, ctrl_depth=2)


def packet_params(ports: int = 2, fmt: PacketFormat = FORMAL_FORMAT) -> PacketParams:
    return PacketParams(SwitchParams(ports=ports, m=2, lanes=3, dtype="int16", slots=4), fmt)


def stated_depths(params: PacketParams) -> list[int]:
    """Packets per VC the NPU buffers, as the manifest states them (VC order)."""
    depths = manifest_of(params)["credits"]["npu_buffers_assumed"]
    return [depths[VC_NAMES[v]] for v in range(N_VCS)]


class LinkMonitor:
    """Assumptions on the credits returned and assertions on one ``tx`` link (module
    docstring). ``credit`` is the link's credit input (one bit per VC), driven here."""

    def __init__(self, m: Module, tx, credit, depths: list[int], name: str) -> None:
        self.name = name
        f = tx.payload
        sent = tx.valid
        self.outstanding = []
        self.counts = []  # per VC: packets seen, modulo 16
        self.open = Signal(name=f"{name}_open")  # a data packet is on the link
        self.open_vc = Signal(2, name=f"{name}_open_vc")
        self.open_pkt = Signal(PKT_BITS, name=f"{name}_open_pkt")
        m.d.comb += credit.eq(AnySeq(N_VCS))
        for v in range(N_VCS):
            width = max(depths[v] + 2, 4).bit_length()
            held = Signal(width, name=f"{name}_outstanding_{v}")
            self.outstanding.append(held)
            head_v = sent & f.head & (f.vc == v)
            back = credit[v]
            m.d.comb += Assume(~back | (held != 0), f"{name}: credit {v} only for a packet held")
            m.d.sync += held.eq(held + head_v - back)
            m.d.comb += Assert(held <= depths[v], f"{name}: VC {v} within its credits")
            with m.If(head_v):
                m.d.comb += Assert(held < depths[v], f"{name}: VC {v} head only with a credit")
            count = Signal(PKT_BITS, name=f"{name}_pkts_{v}")
            self.counts.append(count)
            with m.If(head_v):
                m.d.sync += count.eq(count + 1)
                m.d.comb += Assert(f.pkt == count, f"{name}: VC {v} pkt counts its packets")
        data_head = sent & f.head & (f.vc != VC_CTRL)
        body = sent & ~f.head & ~f.sync
        # A credit sync (model/packet/link.py): one flit between packets, carrying the VC's
        # next pkt (that of the packet that would follow), so the receiver can tell which
        # packets it lost whole.
        with m.If(sent & f.sync):
            m.d.comb += [
                Assert(~f.head & ~self.open, f"{name}: a sync flit only between packets"),
                Assert(f.pkt == Array(self.counts)[f.vc], f"{name}: a sync carries the next pkt"),
            ]
        with m.If(sent & (f.vc == VC_CTRL)):
            m.d.comb += Assert(f.head & f.last, f"{name}: a control packet is one flit")
        with m.If(data_head):
            m.d.comb += Assert(~self.open, f"{name}: no data packet begins inside another")
            m.d.sync += [self.open.eq(~f.last), self.open_vc.eq(f.vc), self.open_pkt.eq(f.pkt)]
        with m.If(body):
            m.d.comb += [
                Assert(self.open, f"{name}: body flits only inside a packet"),
                Assert(f.vc == self.open_vc, f"{name}: body flits on their head's VC"),
                Assert(f.pkt == self.open_pkt, f"{name}: body flits carry their head's pkt"),
            ]
            with m.If(f.last):
                m.d.sync += self.open.eq(0)

    @property
    def idle(self):
        """No data packet is on the link now (between packets)."""
        return ~self.open


#: The output port's packet layer is checked with link-level retry off (its sender then
#: passes every flit straight to ``tx``): retry only holds flits back and replays them, and
#: sim/formal/link_retry.py proves on its own that the far end takes exactly the flits
#: offered, in order, once. The liveness proof keeps retry on.
PORT_FORMAT = replace(FORMAL_FORMAT, link_retry=False)


def output_port_harness(mutant: bool = False, fmt: PacketFormat = PORT_FORMAT) -> Module:
    """The output port alone: any payload flits of any framing, any ``phase_vc`` and index
    changing at any time, any control packets, any receiver keeping the credit rule, any
    control unit that reserves a credit of a data VC (``reserve``) only while the port shows
    it free (``can_take``) and begins a packet only on a credit it reserved for it.
    ``mutant``: the port is built for one more packet of buffer than the manifest states
    (a credit counter one too large)."""
    params = packet_params(fmt=fmt)
    built = packet_params(fmt=replace(fmt, data_depth=fmt.data_depth + 1))
    m = harness_module()
    m.submodules.port = port = OutputPort(built if mutant else params, 0)
    streams.free_input(m, port.i, "i")
    streams.free_input(m, port.ctrl, "ctrl")
    m.d.comb += [port.phase_vc.eq(AnySeq(2)), port.phase_index.eq(AnySeq(len(port.phase_index)))]
    # The control unit: a credit reserved only while free; a packet begins (its first flit
    # offered between packets) only on the phase's VC with a credit reserved and unused.
    reserve = Signal(len(DATA_VCS), name="reserve")
    m.d.comb += [reserve.eq(AnySeq(len(DATA_VCS))), port.reserve.eq(reserve)]
    depths = stated_depths(params)
    # A header went out last cycle: busy rose (each packet raises it; a header never follows
    # a last flit in the same cycle), on the VC phase_vc named then.
    was_busy, vc_then = Signal(name="was_busy"), Signal(2, name="phase_vc_then")
    m.d.sync += [was_busy.eq(port.busy), vc_then.eq(port.phase_vc)]
    unused = []
    for j, v in enumerate(DATA_VCS):
        m.d.comb += Assume(~reserve[j] | port.can_take[j], f"reserve {v} only while free")
        left = Signal(range(depths[v] + 2), name=f"reserved_unused_{v}")
        unused.append(left)
        began = port.busy & ~was_busy & (vc_then == v)
        m.d.sync += left.eq(left + reserve[j] - began)
    starts = port.i.valid & ~port.busy  # a first flit offered: its header is next
    m.d.comb += Assume(
        ~starts | ((port.phase_vc != VC_CTRL) & (Array(unused)[port.phase_vc[:2]] != 0)),
        "a packet begins on a credit reserved for it",
    )
    mon = LinkMonitor(m, port.tx, port.tx_credit, depths, "tx")
    # busy (the port's own "inside a data packet") agrees with the link, one cycle ahead of
    # it (tx is a register).
    m.d.comb += Assert(was_busy == mon.open, "busy: exactly while a data packet is on the link")
    return m


def output_liveness_harness(mutant: bool = False, fmt: PacketFormat = FORMAL_FORMAT) -> Module:
    """Bounded liveness of the output port: credits come back within ``RETURN_CYCLES`` of a
    packet's end, the link's far end takes every flit and acknowledges it (a link-level
    retry receiver, hw/packet/link_retry.py, on a link that loses nothing), the interconnect
    always has payload flits and no control packets compete. The control unit's part is
    modelled as the protocol states it: a packet starts only after a commit that reserved
    a credit of its VC on this output (``reserve``), and a commit needs ``can_take``.
    Asserted: the interconnect waits at most ``liveness_bound(fmt)`` cycles for each flit
    to be taken. ``mutant``: the receiver returns no credit of the phase's VC (the bound
    must fail)."""
    params = packet_params(fmt=fmt)
    m = harness_module()
    m.submodules.port = port = OutputPort(params, 0)
    m.submodules.far = far = RetryReceiver(params)
    m.d.comb += [
        far.i.valid.eq(port.tx.valid),
        far.i.payload.eq(port.tx.payload),
        port.tx_ack.eq(far.ack),
    ]
    payload = payload_flit_layout(params)
    # The interconnect's framing: a packet is packet_flits flits, the last marked.
    sent = Signal(range(fmt.packet_flits), name="payload_sent")
    reserved = Signal(name="reserved")  # a credit is reserved for the packet not yet begun
    commit = ~reserved & (sent == 0) & port.can_take[0]
    took = port.i.valid & port.i.ready
    m.d.comb += [
        port.reserve.eq(Cat(commit, 0, 0)),
        port.i.valid.eq(reserved | (sent != 0)),
        port.i.payload.eq(AnySeq(payload.size)),
        port.i.payload.last.eq(sent == fmt.packet_flits - 1),
        port.ctrl.valid.eq(0),
        port.phase_vc.eq(0),
        port.phase_index.eq(1),
    ]
    with m.If(took):
        m.d.sync += sent.eq(Mux(sent == fmt.packet_flits - 1, 0, sent + 1))
    with m.If(commit):
        m.d.sync += reserved.eq(1)
    with m.Elif(took & (sent == 0)):
        m.d.sync += reserved.eq(0)
    # The receiver: each packet's credit comes back RETURN_CYCLES after its last flit.
    delay = [Signal(name=f"credit_delay{k}") for k in range(RETURN_CYCLES)]
    ended = far.o.valid & far.o.payload.last & (far.o.payload.vc == 0) & ~far.o.payload.sync
    m.d.sync += [delay[0].eq(ended)] + [delay[k].eq(delay[k - 1]) for k in range(1, RETURN_CYCLES)]
    back = Signal(N_VCS)
    m.d.comb += back.eq(Cat(delay[-1] & ~mutant, 0, 0, 0))
    m.d.comb += port.tx_credit.eq(back)
    # Cycles since the interconnect last handed over a flit: it always has one to give.
    waited = Signal(range(2 * liveness_bound(fmt) + 2), name="waited")
    with m.If(took):
        m.d.sync += waited.eq(0)
    with m.Else():
        m.d.sync += waited.eq(waited + 1)
    m.d.comb += Assert(waited <= liveness_bound(fmt), "liveness: a flit waits at most the bound")
    return m


#: Cycles from a packet's last flit on the link to its credit's return, in the liveness proof.
RETURN_CYCLES = 3


def liveness_bound(fmt: PacketFormat) -> int:
    """Cycles the interconnect waits at most to hand the output port its next payload flit,
    when every credit comes back ``RETURN_CYCLES`` after its packet's last flit and nothing
    else competes for the link. With no credit held, the oldest outstanding packet's last
    flit is on the link (``tx`` is a register: one cycle), its credit is back within
    ``RETURN_CYCLES`` cycles and the counter takes it in one more; the commit that reserves
    it is one cycle, the header goes out the next, and the first payload flit one after.
    With a credit held: the commit and the header's cycle. ``fmt`` does not enter: the
    bound is the worst case over any depth and packet length."""
    return RETURN_CYCLES + 3


#: The switch-level format: one payload flit per packet keeps the tail timeout
#: (model/packet/link.py: four packets' worth of link cycles) at 8 cycles, so a bounded
#: check reaches it.
SWITCH_FORMAT = PacketFormat(packet_flits=1, data_depth=2, ctrl_depth=2, link_retry=False)


class NpuSender:
    """Any NPU sending on one ``rx`` link within its credits, through a link that may lose
    flits and corrupt data: each cycle it may advance one VC's stream by one flit (head, then
    ``packet_flits`` body flits, ``last`` on the final one; a control packet is one flit),
    sent or lost. A head needs a credit of its VC; ``rx_credit`` gives one back. ``pkt``
    counts the VC's packets, as the protocol says. Data and CRC are free (any header, any
    corruption). Asserted: the switch never returns more credits than the sender spent."""

    def __init__(self, m: Module, rx, credit, fmt: PacketFormat, depths, name: str) -> None:
        f = rx.payload
        vc = Signal(2, name=f"{name}_vc")
        advance = Signal(name=f"{name}_advance")
        lose = Signal(name=f"{name}_lose")
        m.d.comb += [vc.eq(AnySeq(2)), advance.eq(AnySeq(1)), lose.eq(AnySeq(1))]
        m.d.comb += [f.data.eq(AnySeq(len(f.data))), f.crc.eq(AnySeq(len(f.crc))), f.vc.eq(vc)]
        self.vc, self.advance, self.lose, self.pkts = vc, advance, lose, []
        for v in range(N_VCS):
            credits = Signal(range(depths[v] + 2), init=depths[v], name=f"{name}_credits_{v}")
            pkts = Signal(PKT_BITS, name=f"{name}_pkt_{v}")
            self.pkts.append(pkts)
            body = Signal(range(fmt.packet_flits + 1), name=f"{name}_body_{v}")
            mine = advance & (vc == v)
            is_head = body == 0
            is_last = (body == fmt.packet_flits) | (v == VC_CTRL)
            with m.If(mine & is_head):
                m.d.comb += Assume(credits != 0, f"{name}: VC {v} head only with a credit")
            spend = mine & is_head
            m.d.sync += credits.eq(credits - spend + credit[v])
            m.d.comb += Assert(credits <= depths[v], f"{name}: VC {v} credits back <= spent")
            with m.If(vc == v):
                m.d.comb += [f.head.eq(is_head), f.last.eq(is_last), f.pkt.eq(pkts)]
            with m.If(mine):
                with m.If(is_last):
                    m.d.sync += [body.eq(0), pkts.eq(pkts + 1)]
                with m.Else():
                    m.d.sync += body.eq(body + 1)
        m.d.comb += rx.valid.eq(advance & ~lose)


def switch_harness(cover: bool = False, mutant: bool = False) -> Module:
    """The packet switch (P = 2): NPUs (``NpuSender``) on every ``rx``, receivers keeping
    the credit rule on every ``tx`` (``LinkMonitor``), any configuration words and flow-table
    rows at any time. Asserted besides the link monitors': no input FIFO overflows; every
    flit of a data packet on a ``tx`` link leaves while the phase its header names (VC and
    index) is the running one, so a phase change happens only between packets.
    ``cover``: the covers of interesting events instead of the assertions.
    ``mutant``: with ``cover``, no control packet reaches an output port (no NACK can fan
    out); without, output port 0 writes the next slot's index into its headers (a packet
    that names a phase other than the running one)."""
    params = packet_params(ports=2, fmt=SWITCH_FORMAT)
    fmt = params.fmt
    m = harness_module()
    sw = PacketSwitch(params)
    if mutant and cover:
        mutated(sw, _no_control_packets)
    elif mutant:
        mutated(sw, _wrong_index)
    m.submodules.sw = sw
    depths = stated_depths(params)
    m.d.comb += [
        sw.cfg.valid.eq(AnySeq(1)),
        sw.cfg.payload.eq(AnySeq(len(sw.cfg.payload.as_value()))),
        sw.flows.valid.eq(AnySeq(1)),
        sw.flows.payload.eq(AnySeq(len(sw.flows.payload.as_value()))),
    ]
    monitors = []
    for p in range(params.ports):
        NpuSender(m, sw.rx[p], sw.rx_credit[p], fmt, depths, f"rx{p}")
        monitors.append(LinkMonitor(m, sw.tx[p], sw.tx_credit[p], depths, f"tx{p}"))
        m.d.comb += Assert(~sw.inputs[p].overflow, f"in{p}: no FIFO overflows")
    if cover:
        _switch_covers(m, sw)
        return m
    for q, mon in enumerate(monitors):
        tx = sw.tx[q].payload
        data_flit = sw.tx[q].valid & (tx.vc != VC_CTRL) & ~tx.sync  # a sync is no packet's
        header = header_layout(tx.data[:HEADER_BITS])
        hvc, hindex = header.vc, header.index
        open_index = Signal.like(hindex, name=f"tx{q}_open_index")
        with m.If(data_flit & tx.head):
            m.d.sync += open_index.eq(hindex)
            m.d.comb += Assert(
                sw.phase_valid & (sw.phase_vc == hvc) & (sw.phase_index == hindex),
                f"tx{q}: a data packet's head names the running phase",
            )
        with m.If(data_flit & ~tx.head):
            m.d.comb += Assert(
                sw.phase_valid & (sw.phase_vc == mon.open_vc) & (sw.phase_index == open_index),
                f"tx{q}: the phase runs until its packet's last flit",
            )
    return m


def _no_control_packets(m: Module, switch) -> None:
    """A fault: no control packet reaches an output port (the control network is cut)."""
    for out in switch.outputs:
        m.d.comb += out.ctrl.valid.eq(0)


def _wrong_index(m: Module, switch) -> None:
    out = switch.outputs[0]
    m.d.comb += out.phase_index.eq(switch.control.phase_index + 1)


def _switch_covers(m: Module, sw: PacketSwitch) -> None:
    """Reachable events of packet mode, each a ``Cover`` (at P = 2)."""
    tx = [sw.tx[q].payload for q in range(2)]
    data_head = [sw.tx[q].valid & tx[q].head & (tx[q].vc != VC_CTRL) for q in range(2)]
    m.d.comb += Cover(data_head[0], "a data packet leaves")
    was_vc = Signal.like(sw.phase_vc)
    was_running = Signal()
    m.d.sync += [was_vc.eq(sw.phase_vc), was_running.eq(sw.phase_valid)]
    # Preemption: MP (VC 0) takes over from a running DP or PP phase.
    m.d.comb += Cover(was_running & (was_vc != 0) & (sw.phase_vc == 0), "MP preempts a phase")
    nack = [
        sw.tx[q].valid
        & (tx[q].vc == VC_CTRL)
        & (header_layout(tx[q].data[:HEADER_BITS]).kind == KIND_NACK)
        for q in range(2)
    ]
    m.d.comb += Cover(nack[0] & nack[1], "a NACK fanned out to both ports")


def _extra_credit(m: Module, port) -> None:
    """A fault: the input port pulses one credit of VC 0 too many, in its first cycle."""
    first = Signal(init=1, name="mutant_first")
    m.d.sync += first.eq(0)
    with m.If(first):
        m.d.comb += port.credit[0].eq(1)


def any_control_unit(m: Module, port: InputPort) -> None:
    """Drives ``port.commit`` and ``port.discard`` as any control unit may: it commits or
    discards only a head it is shown, commits one VC at a time, and only while the port is
    not busy."""
    commits = []
    for v in range(len(port.commit)):
        commit, discard = AnySeq(1), AnySeq(1)
        m.d.comb += [port.commit[v].eq(commit), port.discard[v].eq(discard)]
        m.d.comb += Assume(~(commit | discard) | port.head[v].valid, f"VC {v}: decide a head shown")
        commits.append(commit)
    m.d.comb += Assume(~Cat(*commits).any() | ~port.busy, "commit only while not busy")
    for a in range(len(commits)):
        for b in range(a + 1, len(commits)):
            m.d.comb += Assume(~(commits[a] & commits[b]), "commit one VC at a time")


def input_port_harness(mutant: bool = False) -> Module:
    """The input port alone: an ``NpuSender`` on ``rx``; any control unit that commits or
    discards only a head it is shown, and commits one VC at a time, only while the port is
    not busy; any receivers on ``o`` and ``ctrl``. Asserted: the credits the port returns
    never exceed those the sender spent (the sender's counter stays within the manifest's
    depth, never below zero either: it assumes a head only with a credit); no FIFO overflows;
    ``o`` and ``ctrl`` keep the stream rules; every packet on ``o`` is ``packet_flits``
    flits, ``last`` on the final one. ``mutant``: one credit too many."""
    params = packet_params(ports=2, fmt=SWITCH_FORMAT)
    fmt = params.fmt
    m = harness_module()
    port = InputPort(params)
    m.submodules.port = mutated(port, _extra_credit) if mutant else port
    NpuSender(m, port.rx, port.credit, fmt, stated_depths(params), "rx")
    any_control_unit(m, port)
    streams.free_ready(m, port.o)
    streams.free_ready(m, port.ctrl)
    streams.assert_rules(m, port.o, "o")
    streams.assert_rules(m, port.ctrl, "ctrl")
    m.d.comb += Assert(~port.overflow, "no FIFO overflows")
    sent = Signal(range(fmt.packet_flits), name="o_flits")
    with m.If(streams.transfer(port.o)):
        m.d.sync += sent.eq(Mux(port.o.payload.last, 0, sent + 1))
    with m.If(port.o.valid):
        m.d.comb += Assert(
            port.o.payload.last == (sent == fmt.packet_flits - 1),
            "o: packet_flits flits a packet, last on the final one",
        )
    return m
