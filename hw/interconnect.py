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
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from fredfab.hw.config_layout import config_data_layout, node_codes_layout
from fredfab.hw.control import default_config
from fredfab.hw.flit import flit_stream
from fredfab.hw.params import SwitchParams
from fredfab.hw.skid import SkidBuffer
from fredfab.hw.uswitch import USwitch
from fredfab.model.switch.graph import BOUNDARY, Endpoint
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
        for node in topo.nodes:
            fields = topo.config_layout.node_fields(node.index)
            stages = p.adder_stages if carries_adder_pipeline(topo, node.index) else 0
            usw = USwitch(node, fields, flit, p.dtype, p.lanes, stages)
            m.submodules[_ident(node.name)] = usw
            layout = node_codes_layout(fields)
            init = (reset_bits >> fields[0].lsb) & ((1 << layout.size) - 1)
            codes = Signal(layout, init=layout.from_bits(init), name=f"{_ident(node.name)}_codes")
            m.d.sync += codes.eq(self.config[node.name])
            m.d.comb += usw.codes.eq(codes)
            nodes.append(usw)

        # The stream each node output drives, after its register slices.
        driven = {}
        for node, usw in zip(topo.nodes, nodes, strict=True):
            held = [usw.busy] if usw.stages else []  # what the node's registers hold
            for q in range(node.n_out):
                stream_out = usw.o[q]
                # Pure fan-out nodes (crossbar distribution) are wiring, not a stage.
                for k in range(p.regs_per_stage if node.registered else 0):
                    skid = SkidBuffer(flit)
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
        m.d.comb += self.busy.eq(Cat(busy).any() if busy else Const(0))
        return m


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
