"""The switch interconnect in hardware, built node for node and link for link from its
graph (model/switch/topology.py for the Clos, model/switch/xbar_topology.py for the crossbar).

The wiring is not described here: every ``Node`` becomes a ``USwitch`` and every ``Link``
a stream connection, with ``regs_per_stage`` skid buffers on each registered node output and
``adder_stages`` pipe registers on each input of a node in a column that adds (hw/uswitch.py;
model/switch/latency.py says which nodes, and what that does to the latency). The
configuration input is the bit vector of model/switch/config.py, typed with the layout of its fields
(hw/config_layout.py, from the graph's ``config_layout``): each uSwitch gets its node's
field by name, so a configuration the router produced drives this network unchanged.

Each node's field goes through a register of its own first. The configuration only changes
while the switch is drained (hw/control.py, hw/packet/control.py: the last word is copied at
least a cycle before the first flit of the new phase can reach a node), so the register
delays nothing a flit sees; what it removes is the path from the control unit's active
register, across the whole switch, into every node's select logic, which was the slowest
path of the faster variants. The registers start as the all-unicast default, as the active
configuration does.

Crossbars. A switch whose graph has crossbars (``crossbar_nodes``: the crossbar switch's
result fan-outs and output selects; the Clos has none) has wires that cross the whole switch,
and its clock was set by them, not by logic depth (docs/architecture-cost.md). Its nodes take
the crossbar options of hw/uswitch.py (codes registered decoded, no ``sent`` bits where a kind
never multicasts, pipe ends whose load enables ignore ``i.valid``), its register slices are
skid buffers with the same enables (hw/skid.py ``state_enables``), and with register slices
each crossbar's taker starts with a room buffer (hw/room_buffer.py) whose flags (``room``,
``i.ready``) its senders register by the buffer's rule: a multicast sends to all its takers
at once, in a cycle after it found the flit would fit each, so no ready is gathered across
the switch in the cycle a flit moves. A room buffer is one cycle from input to output, as a
skid buffer, so latencies do not change (model/switch/latency.py); it holds three flits
instead of two.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from fredfab.hw.config_layout import config_data_layout, node_codes_layout
from fredfab.hw.contract import NO_MULTICAST
from fredfab.hw.control import default_config
from fredfab.hw.flit import flit_stream
from fredfab.hw.params import SwitchParams
from fredfab.hw.room_buffer import ROOM_DEPTH, RoomBuffer
from fredfab.hw.skid import SkidBuffer
from fredfab.hw.uswitch import USwitch, decode_codes, decoded_width
from fredfab.model.switch.graph import BOUNDARY, Endpoint, SwitchGraph
from fredfab.model.switch.latency import carries_adder_pipeline


class Interconnect(wiring.Component):
    """Ports ``i[P]`` and ``o[P]`` (flit streams), ``config`` (the active configuration bits,
    which apply from the next cycle on: module docstring) and ``busy`` (some flit may be held
    inside, in a register slice or an adder pipe: never low while one is, low from the cycle
    after the last one left; what the control units wait for before they change the
    configuration). ``flit`` is the stream every link carries: by
    default the circuit flit (hw/flit.py); packet mode adds sideband (hw/packet/layouts.py)."""

    def __init__(self, params: SwitchParams, flit: stream.Signature | None = None) -> None:
        self.params = params
        self.topology = params.topology
        self.flit = flit = flit or flit_stream(params.element.bits, params.lanes)
        super().__init__(
            {
                "i": In(flit).array(params.ports),
                "o": Out(flit).array(params.ports),
                "config": In(config_data_layout(self.topology.config_layout)),
                "busy": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        p, topo, flit = self.params, self.topology, self.flit
        nodes = []
        busy = []
        reset_bits = default_config(p).to_bits()
        senders, takers = crossbar_nodes(topo)
        # A switch with crossbars has wires across the whole switch: its nodes take the
        # crossbar options (module docstring). With register slices its crossbars send on
        # look-ahead room.
        crossbar = bool(senders)
        if not p.regs_per_stage:
            senders, takers = set(), set()
        for node in topo.nodes:
            fields = topo.config_layout.node_fields(node.index)
            stages = p.adder_stages if carries_adder_pipeline(topo, node.index) else 0
            lookahead = node.index in senders
            usw = USwitch(node, fields, flit, p.dtype, p.lanes, stages, crossbar, lookahead)
            m.submodules[_ident(node.name)] = usw
            layout = node_codes_layout(fields)
            init = (reset_bits >> fields[0].lsb) & ((1 << layout.size) - 1)
            name = f"{_ident(node.name)}_codes"
            if crossbar:
                # The codes registered decoded, one bit per output and source.
                field = self.config[node.name]
                reset_codes = [
                    (init >> (f.lsb - fields[0].lsb)) & ((1 << f.width) - 1) for f in fields
                ]
                takes = Signal(decoded_width(node), init=decode_codes(node, reset_codes), name=name)
                m.d.sync += takes.eq(decode_codes(node, [field[q] for q in range(node.n_out)]))
                m.d.comb += usw.takes.eq(takes)
            else:
                codes = Signal(layout, init=layout.from_bits(init), name=name)
                m.d.sync += codes.eq(self.config[node.name])
                m.d.comb += usw.codes.eq(codes)
            nodes.append(usw)

        # The stream each node output drives, after its register slices; the flags (two
        # entries free, one free) of each crossbar taker's first slice.
        driven = {}
        room = {}
        for node, usw in zip(topo.nodes, nodes, strict=True):
            held = [usw.busy] if usw.stages else []  # what the node's registers hold
            for q in range(node.n_out):
                stream_out = usw.o[q]
                # Pure fan-out nodes (crossbar distribution) are wiring, not a stage.
                for k in range(p.regs_per_stage if node.registered else 0):
                    if k == 0 and node.index in takers:
                        skid = RoomBuffer(flit)
                        room[node.index] = (skid.room, skid.i.ready)  # the buffer's rule
                    else:
                        skid = SkidBuffer(flit, state_enables=crossbar)
                    m.submodules[f"{_ident(node.name)}_o{q}_r{k}"] = skid
                    wiring.connect(m, stream_out, skid.i)
                    held.append(skid.busy)
                    stream_out = skid.o
                driven[Endpoint(node.index, q)] = stream_out
            if held:
                busy.append(_node_busy(m, node, usw, held))

        for link in topo.links:
            src = (
                wiring.flipped(self.i[link.src.port])
                if link.src.node == BOUNDARY
                else driven[link.src]
            )
            dst = (
                wiring.flipped(self.o[link.dst.port])
                if link.dst.node == BOUNDARY
                else nodes[link.dst.node].i[link.dst.port]
            )
            wiring.connect(m, src, dst)
            if link.src.node in senders:
                sender, q = nodes[link.src.node], link.src.port
                two_free, one_free = room[link.dst.node]
                m.d.comb += [sender.room[q].eq(two_free), sender.free[q].eq(one_free)]
        m.d.comb += self.busy.eq(Cat(busy).any() if busy else Const(0))
        return m


def path_capacity(params: SwitchParams) -> int:
    """The most flits of one input that its path to an output can hold at once: per node on
    the path, two per register slice (a skid buffer), ``ROOM_DEPTH`` instead of two in a
    crossbar taker's room buffer, and ``adder_stages + 1`` in an adder pipe (its last register
    is a skid buffer); the longest such path. What the flit-count proofs bound an input's
    lead over an output by (sim/formal/network.py)."""
    topo, regs = params.topology, params.regs_per_stage
    _, takers = crossbar_nodes(topo) if regs else (set(), set())
    held = [0] * len(topo.nodes)
    for n in topo.nodes:
        own = 2 * regs if n.registered else 0
        if n.index in takers:
            own += ROOM_DEPTH - 2
        if params.adder_stages and carries_adder_pipeline(topo, n.index):
            own += params.adder_stages + 1
        before = [held[e.node] for e in topo.node_inputs[n.index] if e.node != BOUNDARY]
        held[n.index] = own + max(before, default=0)
    return max(held[e.node] for e in topo.outputs)


def crossbar_nodes(topo: SwitchGraph) -> tuple[set[int], set[int]]:
    """The crossbars of ``topo``: (senders, takers), node indices. A sender is a one-input
    multicast fan-out without registers (a FORK: wiring, not a stage) every output of which
    feeds a taker; a taker is a registered one-output node without an adder (a MUX) every
    input of which comes from a sender. On the crossbar switch these are the tree results'
    fan-outs and the output selects; the Clos has none. With register slices, a taker's first
    slice is a room buffer and its senders send on look-ahead room (hw/room_buffer.py,
    hw/uswitch.py).

    A fan-out that never multicasts (the input ports' DEMUXes) is no sender: its one taker's
    ready needs no gathering, and a taker that holds back a join's early operand (a leaf
    of a tree whose leaves sit at different heights, P not a power of two) must not answer a
    cycle late: the sender would stop a cycle too long, and the join's two sides would not
    settle to one flit per cycle."""
    nodes = topo.nodes
    senders = {
        n.index
        for n in nodes
        if not n.registered and n.n_in == 1 and not n.reducing and n.kind not in NO_MULTICAST
    }
    takers = {n.index for n in nodes if n.registered and n.n_out == 1 and not n.reducing}
    while True:
        takers_now = {t for t in takers if all(e.node in senders for e in topo.node_inputs[t])}
        senders_now = {
            s
            for s in senders
            if all(
                topo.sink.get(Endpoint(s, q), Endpoint(BOUNDARY, 0)).node in takers_now
                for q in range(nodes[s].n_out)
            )
        }
        if (senders_now, takers_now) == (senders, takers):
            return senders, takers
        senders, takers = senders_now, takers_now


def _node_busy(m: Module, node, usw: USwitch, held: list) -> Signal:
    """A register that is high whenever the node holds a flit: set in the cycle after one
    entered or while one is held, so it is never low with a flit inside (it falls a cycle
    after the last one left). The switch's ``busy`` is the OR of these registers: its
    path into the control unit starts at a register beside each node instead of at every
    valid bit of the switch, which was the slowest path of a deeply pipelined switch."""
    entering = Cat(i.valid & i.ready for i in usw.i).any()
    flag = Signal(name=f"{_ident(node.name)}_busy")
    m.d.sync += flag.eq(Cat(held).any() | entering)
    return flag


def _ident(name: str) -> str:
    """A Verilog-friendly instance name for a hierarchical node name ("m1.in0" -> m1_in0)."""
    return "u_" + name.replace(".", "_")
