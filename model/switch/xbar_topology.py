"""The crossbar-plus-reduction-tree switch as a graph (arch "xbar").

The alternative to the paper's Clos: an input crossbar lays each flow's input ports side by
side on contiguous leaves of one reduction tree; the tree reduces every contiguous run of
leaves (a *segment*, one per flow) at once; an output crossbar multicasts each flow's result
to its output ports. Every set of disjoint flows routes (model/switch/xbar_router.py).

Segmented reduction tree (a MAERI-style augmented reduction tree in binary form): a tree
node covering leaves [a, b) passes up two partial sums, ``lp`` (the fragment of the
segment that touches leaf a) and ``rp`` (the fragment touching leaf b-1). When the left
child's ``rp`` and the right child's ``lp`` belong to one segment the node adds them (its one
adder); a fragment that touches neither edge of the node is complete and leaves the tree
through one of the node's two result outputs. The root's ``lp`` and ``rp`` are results too.

Nodes (all in the vocabulary of model/switch/graph.py, so encoding, functional model, RTL and
manifest are shared with the Clos):

=========  ===================  =========================================================
name       kind, in -> out      role
=========  ===================  =========================================================
xinP       DEMUX 1 -> P         input port P to the leaf that holds it (not registered)
leafJ.sel  MUX P -> 1           which input port sits on leaf J
leafJ      DEMUX 1 -> 2         leaf J's value as its lp (out 0) or rp (out 1) (not reg.)
tN         ART 4 -> 4           in: L.rp, R.lp (added), L.lp, R.rp; out: lp, rp, res_a, res_b
forkK      FORK 1 -> P          result source K to every output port that wants it (n. r.)
outP.sel   MUX 2P -> 1          which result output port P delivers
=========  ===================  =========================================================

Registers (``regs_per_stage`` slices) follow the leaf selects, the tree nodes and the output
selects; the pure fan-out nodes are wiring. Latency therefore depends on where a flow's
segment completes: ``register_depth`` (leaf select + tree height + output select) is the
longest, for segments that complete at the root.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from fredfab.model.errors import InputError
from fredfab.model.switch.graph import Endpoint, Kind, SwitchGraph

# Input and output indices of a tree node (ART).
L_RP, R_LP, L_LP, R_RP = range(4)
OUT_LP, OUT_RP, RES_A, RES_B = range(4)


@dataclass
class TreeNode:
    """A node of the reduction tree over leaves [lo, hi); ``node`` is its graph index, or
    the leaf's DEMUX index when lo + 1 == hi."""

    lo: int
    hi: int
    node: int
    height: int
    left: TreeNode | None = None
    right: TreeNode | None = None

    @property
    def is_leaf(self) -> bool:
        return self.left is None


class XbarTopology(SwitchGraph):
    """Crossbar + segmented reduction tree on ``ports`` ports. Use ``XbarTopology.build``."""

    arch = "xbar"

    def __init__(self, ports: int) -> None:
        if not isinstance(ports, int) or ports < 2:
            raise InputError(f"the crossbar switch needs >= 2 ports, got {ports!r}")
        super().__init__(ports)
        self.m = None
        P = ports
        self.xin = [self._add(f"xin{p}", Kind.DEMUX, 1, P, 0, registered=False) for p in range(P)]
        self.leaf_sel = [self._add(f"leaf{j}.sel", Kind.MUX, P, 1, 1) for j in range(P)]
        self.leaf = [self._add(f"leaf{j}", Kind.DEMUX, 1, 2, 2, registered=False) for j in range(P)]
        for p in range(P):
            for j in range(P):
                self._connect(Endpoint(self.xin[p], j), Endpoint(self.leaf_sel[j], p))
        for j in range(P):
            self._connect(Endpoint(self.leaf_sel[j], 0), Endpoint(self.leaf[j], 0))
        self._count = 0
        self.results: list[Endpoint] = []  # result sources, in fork order
        self.tree = self._tree(0, P)
        top = 3 + self.tree.height
        self.results += [Endpoint(self.tree.node, OUT_LP), Endpoint(self.tree.node, OUT_RP)]
        self.fork = []
        for k, src in enumerate(self.results):
            self.fork.append(self._add(f"fork{k}", Kind.FORK, 1, P, top, registered=False))
            self._connect(src, Endpoint(self.fork[k], 0))
        self.out_sel = [
            self._add(f"out{p}.sel", Kind.MUX, len(self.results), 1, top + 1) for p in range(P)
        ]
        for k in range(len(self.results)):
            for p in range(P):
                self._connect(Endpoint(self.fork[k], p), Endpoint(self.out_sel[p], k))
        self.inputs = [Endpoint(self.xin[p], 0) for p in range(P)]
        self.outputs = [Endpoint(self.out_sel[p], 0) for p in range(P)]
        renum = self._finalize()
        for attr in ("xin", "leaf_sel", "leaf", "fork", "out_sel"):
            setattr(self, attr, [renum[i] for i in getattr(self, attr)])
        self.results = [Endpoint(renum[e.node], e.port) for e in self.results]
        _renumber_tree(self.tree, renum)

    @staticmethod
    @functools.cache
    def build(ports: int) -> XbarTopology:
        return XbarTopology(ports)

    def _tree(self, lo: int, hi: int) -> TreeNode:
        if hi - lo == 1:
            return TreeNode(lo, hi, self.leaf[lo], 0)
        mid = lo + (hi - lo + 1) // 2
        left, right = self._tree(lo, mid), self._tree(mid, hi)
        height = 1 + max(left.height, right.height)
        n = self._add(f"t{self._count}", Kind.ART, 4, 4, 2 + height)
        self._count += 1
        self._connect(Endpoint(left.node, 1), Endpoint(n, L_RP))
        self._connect(Endpoint(right.node, 0), Endpoint(n, R_LP))
        self._connect(Endpoint(left.node, 0), Endpoint(n, L_LP))
        self._connect(Endpoint(right.node, 1), Endpoint(n, R_RP))
        self.results += [Endpoint(n, RES_A), Endpoint(n, RES_B)]
        return TreeNode(lo, hi, n, height, left, right)


def _renumber_tree(t: TreeNode, renum: dict[int, int]) -> None:
    t.node = renum[t.node]
    if not t.is_leaf:
        _renumber_tree(t.left, renum)
        _renumber_tree(t.right, renum)
