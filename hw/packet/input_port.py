"""The input port of the packet-mode switch (docs/switch-rtl.md, "Packet mode", "Input port").

Link-level retry (hw/packet/link_retry.py ``RetryReceiver``, when the format has it): only
the next flit in link order with a good CRC gets past it, and ``ack`` tells the sender what
to replay; the writer sees the flits it takes.

Writer. Every link flit that gets to it goes into the FIFO of its VC (a data VC holds
``data_depth * (packet_flits + 1)`` flits, the control VC ``ctrl_depth``, each one more for a
sync), with a ``bad`` bit set when its CRC fails or its sender marked it bad. The writer never
waits: credits guarantee space. A flit that meets a full FIFO is lost and raises the sticky
``overflow``: its sender broke the credit rule. A sync flit (model/packet/link.py) takes the
spare entry; one that arrives while the previous sync of its VC is still unread is dropped
(the sender repeats syncs while it needs them).

Tail timeout (data VCs). The writer counts the cycles since the last flit of each data VC;
after ``tail_timeout`` (model/packet/link.py: ``TAIL_TIMEOUT_PACKETS`` packets' worth of
cycles, above any gap a sender leaves inside a packet) it raises ``expired`` until it next
stores a flit of the VC, and the reader ends the packet it waits on. A body flit arriving
after such a silence with the same ``pkt`` as the flit before it is a late flit of that
packet: it, and the flits after it with that ``pkt``, are dropped here, never stored. So
they cannot be taken for anything else, and the FIFO needs no room for them: the packet's
credit, returned at the timeout, lets the sender refill exactly the slots its stored flits
left.

Data VC reader, one per VC, three states:

* IDLE: reads the flit at the front of the FIFO. A sync returns ``(pkt - last_pkt - 1) mod
  16`` credits (packets lost whole) and sets ``last_pkt`` to ``pkt - 1``. A head flit
  starts a packet: its ``pkt``
  (a link control symbol, trusted even when the CRC fails) returns
  ``(pkt - last_pkt - 1) mod 16`` credits for packets lost whole. With a good CRC its
  header goes to ``head[v]`` (WAIT); with a bad one the packet is dropped (BODY, dropping).
  A body flit met here has lost its head. If its ``pkt`` is the next one expected
  (``last_pkt + 1``), it is that packet arriving without its head: ``last_pkt`` takes its
  ``pkt`` (so the next head's gap does not count it again) and the packet is dropped (BODY,
  dropping, the flit left for BODY to take), returning its credit when its run of flits
  ends. A body flit with any other ``pkt`` is dropped and returns nothing (a later flit's
  ``pkt`` counts its packet).
* WAIT: ``head[v].valid``; ``commit[v]`` streams the packet into ``o``, ``discard[v]``
  drops it (commit wins if both pulse). The first body flit moves in that same cycle, so a
  VC committed at once carries one packet every ``packet_flits + 1`` cycles, the link rate.
* BODY: fills exactly ``packet_flits`` flit slots, ``last`` on the final one, each with
  the header's ``seq`` and ``src``. A body flit of the packet (every flit carries its
  packet's ``pkt``) fills the next slot, bad if its CRC failed, or if it fills the final
  slot without ``last`` (the sender's framing disagrees with the format; the body flits
  after it are orphans). A head flit met early, a sync, a body flit of another packet
  (whose head was lost), an earlier ``last``, or the tail timeout (the FIFO is empty and
  ``expired``) ends the packet: the remaining slots are padded with zero data, bad, and
  the flit that ended it stays for IDLE. When dropping, slots are filled without waiting
  for ``o``. The final slot returns the packet's credit: all of its stored flits have left
  the FIFO by then.

Limits of repair, from the format: a packet whose tail was lost ends ``tail_timeout``
cycles after the last flit of its VC (or earlier, with the next flit of that VC); a packet
waits in WAIT for the control unit however long. The credits of packets lost whole come
back with a later flit that counts them (a head, the first body flit of the packet after
the last one counted, or a sync, which the sender repeats while it has no credit left: so
no pattern of lost flits stalls a VC for good; model/packet/link.py).

Control VC reader: every control flit is one packet and returns one credit, and its
``pkt`` returns gap credits as above; a good one is offered on ``ctrl`` (its header), a bad
one dropped; a sync returns its gap credits only.

These are the reader rules of model/packet/link.py (``LinkReceiver``): the same packets,
flits, bad flags and credit counts; here a data packet leaves when it is committed.

Credits: credits due in one cycle (a gap and a packet end) are counted per VC and pulsed
on ``credit[v]`` one per cycle.

At most one data VC streams into ``o`` at a time: the control unit commits one phase's VC
and waits for ``busy`` to fall before committing another; nothing here arbitrates. ``o``
leaves through a skid buffer (registered valid, payload and ready). ``busy`` is high from
the cycle after a commit until the packet's last flit has left ``o``.

After reset the port expects ``pkt = 0`` first on every VC (``last_pkt`` starts at 15).
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from fredfab.hw.named import named
from fredfab.hw.packet.layouts import (
    head_layout,
    header_layout,
    link_signature,
    payload_flit_stream,
)
from fredfab.hw.packet.link_retry import RetryReceiver, ack_layout
from fredfab.hw.packet.params import PacketParams
from fredfab.hw.skid import SkidBuffer
from fredfab.model.packet.format import DATA_VCS, HEADER_BITS, N_VCS, PKT_BITS, VC_CTRL
from fredfab.model.packet.link import tail_timeout

#: A gap returns at most 15 credits; a conforming sender never has more than ``data_depth``
#: (<= 15) outstanding, so this bound is never reached by one.
_PENDING_MAX = 2 * (1 << PKT_BITS)


def entry_layout(params: PacketParams) -> data.StructLayout:
    """A flit as stored in a VC's FIFO: the link flit without ``vc`` (the FIFO is the VC)
    and with the CRC reduced to its verdict."""
    return data.StructLayout(
        {
            "data": params.switch.data_width,
            "head": 1,
            "last": 1,
            "pkt": PKT_BITS,
            "sync": 1,
            "bad": 1,
        }
    )


def _entry_stream(params: PacketParams) -> stream.Signature:
    return stream.Signature(entry_layout(params))


def vc_fifo(width: int, depth: int) -> SyncFIFO | SyncFIFOBuffered:
    """A FIFO that takes a write whenever it holds fewer than ``depth`` entries.

    ``SyncFIFOBuffered`` (a registered memory read, block-RAM friendly), except at depth 2:
    there it refuses a write in the cycle after the first write into it, while it holds
    one entry, which a sender at full rate within its credits would overflow. A
    ``SyncFIFO`` of two registers, read combinationally, takes it."""
    if depth == 2:
        return SyncFIFO(width=width, depth=depth)
    return SyncFIFOBuffered(width=width, depth=depth)


class CreditQueue(wiring.Component):
    """Credits of one VC: ``due`` (any number per cycle) in, one ``pulse`` per cycle out."""

    def __init__(self) -> None:
        super().__init__({"due": In(range(_PENDING_MAX)), "pulse": Out(1)})

    def elaborate(self, platform) -> Module:
        m = Module()
        pending = Signal(range(_PENDING_MAX + 1))
        m.d.comb += self.pulse.eq(pending != 0)
        m.d.sync += pending.eq(pending - self.pulse + self.due)
        return m


def _gap(pkt: Value, last_pkt: Value) -> Value:
    """Packets lost whole between two heads of a VC, from their ``pkt`` counters."""
    return (pkt - last_pkt - 1)[:PKT_BITS]


class DataReader(wiring.Component):
    """The reader of one data VC (module docstring: IDLE, WAIT, BODY)."""

    def __init__(self, params: PacketParams) -> None:
        self.params = params
        super().__init__(
            {
                "i": In(_entry_stream(params)),
                "expired": In(1),
                "head": Out(head_layout(params)),
                "commit": In(1),
                "discard": In(1),
                "o": Out(payload_flit_stream(params)),
                "streaming": Out(1),
                "due": Out(range(_PENDING_MAX)),
                "sync_read": Out(1),  # a sync left the FIFO this cycle
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        pf = self.params.fmt.packet_flits
        f = self.i.payload

        state = Signal(range(3))  # IDLE, WAIT, BODY
        idle, wait, body = (named(m, state == k, n) for k, n in enumerate(("idle", "wait", "body")))
        dropping = Signal()  # in BODY: the packet is discarded or dropped, not streamed
        n = Signal(range(max(pf, 2)))  # slots filled so far (a bit even when pf = 1)
        ended = Signal()  # the packet's own flits are over: pad the remaining slots
        last_pkt = Signal(PKT_BITS, init=(1 << PKT_BITS) - 1)
        gap_due = Signal(PKT_BITS)
        end_due = Signal()
        m.d.comb += [
            self.due.eq(gap_due + end_due),
            self.streaming.eq(body & ~dropping),
        ]

        # --- BODY, also entered combinationally in the cycle of a commit or discard ---
        # (Each a signal: an expression used in several places is built again at each.)
        decided = named(m, wait & (self.commit | self.discard), "decided")
        streams = named(m, (body & ~dropping) | (wait & self.commit), "streams")
        drops = named(m, (body & dropping) | (wait & ~self.commit & self.discard), "drops")
        final = named(m, n == pf - 1, "final")
        # A flit that is not this packet's next one: a head, a sync, or a body flit of
        # another packet.
        ends = named(m, f.head | f.sync | (f.pkt != last_pkt), "ends")
        # The tail timeout: every stored flit has been read and the VC has been silent.
        timeout = named(m, ~ended & ~self.i.valid & self.expired, "timeout")
        pad = named(m, ended | (self.i.valid & ends) | timeout, "pad")
        take = named(m, ~ended & self.i.valid & ~ends, "take")
        fills = named(m, (streams | drops) & (pad | take), "fills")
        advance = named(m, fills & (drops | self.o.ready), "advance")
        m.d.comb += [
            self.o.valid.eq(streams & (pad | take)),
            self.o.payload.data.eq(Mux(take, f.data, 0)),
            self.o.payload.last.eq(final),
            self.o.payload.bad.eq(pad | f.bad | (final & ~f.last)),
            self.o.payload.seq.eq(self.head.header.seq),
            self.o.payload.src.eq(self.head.header.src),
        ]
        with m.If(decided):
            m.d.sync += [self.head.valid.eq(0), state.eq(2), dropping.eq(~self.commit)]
        with m.If((streams | drops) & timeout):
            # Keep padding (and ``o.valid``) once timed out, even if ``expired`` falls before
            # the slot moves: whatever arrives after the silence is not this packet's.
            m.d.sync += ended.eq(1)
        with m.If(advance):
            m.d.comb += self.i.ready.eq(take)
            with m.If(final):
                m.d.comb += end_due.eq(1)
                m.d.sync += [state.eq(0), n.eq(0), ended.eq(0)]
            with m.Else():
                m.d.sync += [n.eq(n + 1), ended.eq(pad | f.last)]

        # --- IDLE: read a head, start a headless packet, or drop an orphan body flit ---
        with m.If(idle & self.i.valid):
            with m.If(f.sync):
                m.d.comb += [
                    self.i.ready.eq(1),
                    self.sync_read.eq(1),
                    gap_due.eq(_gap(f.pkt, last_pkt)),
                ]
                m.d.sync += last_pkt.eq(f.pkt - 1)
            with m.Elif(f.head):
                m.d.comb += [self.i.ready.eq(1), gap_due.eq(_gap(f.pkt, last_pkt))]
                # A head flit carrying ``last`` has no payload at all: every slot is padding.
                m.d.sync += [last_pkt.eq(f.pkt), n.eq(0), ended.eq(f.last)]
                with m.If(f.bad):
                    m.d.sync += [state.eq(2), dropping.eq(1)]
                with m.Else():
                    m.d.sync += [
                        state.eq(1),
                        self.head.valid.eq(1),
                        self.head.header.eq(f.data[:HEADER_BITS]),
                    ]
            with m.Elif(_gap(f.pkt, last_pkt) == 0):
                # The next packet, its head lost: counted now, dropped in BODY, which takes
                # this flit as its first (it is not read here) and returns the credit.
                m.d.sync += [last_pkt.eq(f.pkt), n.eq(0), ended.eq(0)]
                m.d.sync += [state.eq(2), dropping.eq(1)]
            with m.Else():
                m.d.comb += self.i.ready.eq(1)
        return m


class ControlReader(wiring.Component):
    """The reader of the control VC: good control packets out on ``o`` (their header)."""

    def __init__(self, params: PacketParams) -> None:
        self.params = params
        super().__init__(
            {
                "i": In(_entry_stream(params)),
                "o": Out(stream.Signature(header_layout)),
                "due": Out(range(_PENDING_MAX)),
                "sync_read": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        f = self.i.payload
        last_pkt = Signal(PKT_BITS, init=(1 << PKT_BITS) - 1)
        m.d.comb += [
            self.o.valid.eq(self.i.valid & ~f.bad & ~f.sync),
            self.o.payload.eq(f.data[:HEADER_BITS]),
            self.i.ready.eq(f.bad | f.sync | self.o.ready),
        ]
        with m.If(self.i.valid & self.i.ready):
            m.d.comb += self.due.eq(_gap(f.pkt, last_pkt) + ~f.sync)
            with m.If(f.sync):
                m.d.comb += self.sync_read.eq(1)
                m.d.sync += last_pkt.eq(f.pkt - 1)
            with m.Else():
                m.d.sync += last_pkt.eq(f.pkt)
        return m


class InputPort(wiring.Component):
    """One input port of the packet-mode switch (module docstring)."""

    def __init__(self, params: PacketParams) -> None:
        self.params = params
        super().__init__(
            {
                "rx": In(link_signature(params)),
                "ack": Out(ack_layout),  # link-level retry: what the sender should know
                "credit": Out(N_VCS),
                "head": Out(head_layout(params)).array(len(DATA_VCS)),
                "commit": In(len(DATA_VCS)),
                "discard": In(len(DATA_VCS)),
                "o": Out(payload_flit_stream(params)),
                "busy": Out(1),
                "ctrl": Out(stream.Signature(header_layout)),
                "overflow": Out(1),
            }
        )

    def fifo_depth(self, vc: int) -> int:
        """Flits the FIFO of ``vc`` holds: every credit's packet, header included, and a
        sync."""
        fmt = self.params.fmt
        packets = fmt.ctrl_depth if vc == VC_CTRL else fmt.data_depth * fmt.data_packet_flits
        return packets + 1

    def elaborate(self, platform) -> Module:
        m = Module()
        params = self.params
        layout = entry_layout(params)
        # --- link-level retry: the flits the writer sees ---
        m.submodules.retry = retry = RetryReceiver(params)
        wiring.connect(m, wiring.flipped(self.rx), retry.i)
        m.d.comb += self.ack.eq(retry.ack)
        rx = retry.o.payload

        # --- writer ---
        entry = Signal(layout)
        m.d.comb += [
            entry.data.eq(rx.data),
            entry.head.eq(rx.head),
            entry.last.eq(rx.last),
            entry.pkt.eq(rx.pkt),
            entry.sync.eq(rx.sync),
            entry.bad.eq(~retry.ok | rx.bad),
        ]
        fifos = []
        expired: dict[int, Signal] = {}
        # A sync of each VC is in its FIFO, unread (it clears when the reader takes it).
        sync_held = [Signal(name=f"sync_held{vc}") for vc in range(N_VCS)]
        sync_read = [Signal(name=f"sync_read{vc}") for vc in range(N_VCS)]
        for vc in range(N_VCS):
            fifo = vc_fifo(layout.size, self.fifo_depth(vc))
            m.submodules[f"fifo{vc}"] = fifo
            fifos.append(fifo)
            arrives = retry.o.valid & (rx.vc == vc)
            store = arrives
            if vc != VC_CTRL:
                expired[vc] = Signal(name=f"expired{vc}")
                store = self._tail_timer(m, rx, arrives, expired[vc])
            # The spare entry holds one sync: a second one while it waits is dropped.
            store = store & ~(rx.sync & sync_held[vc])
            m.d.sync += sync_held[vc].eq((sync_held[vc] & ~sync_read[vc]) | (store & rx.sync))
            m.d.comb += [fifo.w_data.eq(entry), fifo.w_en.eq(store)]
            with m.If(store & ~fifo.w_rdy):
                m.d.sync += self.overflow.eq(1)

        # --- readers and credits ---
        def connect(fifo: SyncFIFO | SyncFIFOBuffered, reader: DataReader | ControlReader) -> None:
            m.d.comb += [
                reader.i.valid.eq(fifo.r_rdy),
                reader.i.payload.eq(fifo.r_data),
                fifo.r_en.eq(reader.i.ready),
            ]

        skid = m.submodules.o_skid = SkidBuffer(payload_flit_stream(params))
        readers: dict[int, DataReader] = {}
        for vc in DATA_VCS:
            reader = readers[vc] = m.submodules[f"reader{vc}"] = DataReader(params)
            connect(fifos[vc], reader)
            m.d.comb += [
                self.head[vc].eq(reader.head),
                reader.expired.eq(expired[vc]),
                reader.commit.eq(self.commit[vc]),
                reader.discard.eq(self.discard[vc]),
                reader.o.ready.eq(skid.i.ready),
                sync_read[vc].eq(reader.sync_read),
            ]
            # Only one reader offers a flit at a time (the control unit's rule): the valid
            # one drives the skid buffer's input.
            with m.If(reader.o.valid):
                m.d.comb += [skid.i.valid.eq(1), skid.i.payload.eq(reader.o.payload)]
        ctrl_reader = m.submodules.ctrl_reader = ControlReader(params)
        connect(fifos[VC_CTRL], ctrl_reader)
        m.d.comb += sync_read[VC_CTRL].eq(ctrl_reader.sync_read)
        wiring.connect(m, ctrl_reader.o, wiring.flipped(self.ctrl))
        wiring.connect(m, skid.o, wiring.flipped(self.o))

        dues = {vc: r.due for vc, r in readers.items()} | {VC_CTRL: ctrl_reader.due}
        for vc, due in dues.items():
            queue = m.submodules[f"credits{vc}"] = CreditQueue()
            m.d.comb += [queue.due.eq(due), self.credit[vc].eq(queue.pulse)]

        streaming = 0
        for reader in readers.values():
            streaming = streaming | reader.streaming
        m.d.comb += self.busy.eq(streaming | skid.busy)
        return m

    def _tail_timer(self, m: Module, rx, arrives: Value, expired: Signal) -> Value:
        """The tail timeout of one data VC (module docstring): drives ``expired`` and
        returns whether the arriving flit ``rx`` is stored (a late flit is not)."""
        limit = tail_timeout(self.params.fmt)
        # Cycles since the VC's last flit, saturating; it starts "silent for long".
        quiet = Signal(range(limit + 1), init=limit)
        silent = quiet == limit
        arrived_pkt = Signal(PKT_BITS, init=(1 << PKT_BITS) - 1)
        dropping_late = Signal()
        late = ~rx.head & ~rx.sync & (rx.pkt == arrived_pkt) & (silent | dropping_late)
        # A sync ends what came before it: the flit before it is taken to be pkt - 1's.
        with m.If(arrives):
            m.d.sync += [
                quiet.eq(0),
                arrived_pkt.eq(Mux(rx.sync, rx.pkt - 1, rx.pkt)),
                dropping_late.eq(late),
            ]
        with m.Elif(~silent):
            m.d.sync += quiet.eq(quiet + 1)
        store = arrives & ~late
        with m.If(store):
            m.d.sync += expired.eq(0)
        with m.Elif(silent):
            m.d.sync += expired.eq(1)
        return store
