"""Routing on the crossbar switch (model/switch/xbar_topology.py): never blocks.

1. Leaves: flow k's input ports, in ascending order, take the next |IPs_k| leaves, so every
   flow is one contiguous segment of leaves (the input crossbar can place any port on any
   leaf, so this always fits: the flows' IPs are disjoint, at most P in all).
2. Tree, bottom up: each node learns the segment at its left edge, at its right edge, and
   whether one segment spans it. It adds L.rp + R.lp exactly when they are one segment.
3. Tree, top down: each node is told which of its edge fragments its parent needs (a
   spanning node hands its value up through exactly one of lp/rp) and reports where every
   complete fragment leaves the tree.
4. Output crossbar: each flow's result source multicasts to its output ports.

Every flow set with disjoint IPs and disjoint OPs routes, so there is no conflict case; the
router's output is checked by the symbolic propagation of model/switch/network.py like the Clos
router's.
"""

from __future__ import annotations

from collections.abc import Sequence

from fredfab.model.switch.flow import Flow
from fredfab.model.switch.graph import NONE, Endpoint
from fredfab.model.switch.xbar_topology import (
    L_LP,
    L_RP,
    OUT_LP,
    OUT_RP,
    R_LP,
    R_RP,
    RES_A,
    RES_B,
    TreeNode,
    XbarTopology,
)


def route_xbar(topo: XbarTopology, flows: Sequence[Flow]) -> tuple[tuple[int, ...], ...]:
    codes = [[NONE] * n.n_out for n in topo.nodes]
    nodes = topo.nodes
    seg: list[int | None] = [None] * topo.ports  # flow index of each leaf
    leaf = 0
    for k, f in enumerate(flows):
        for p in sorted(f.ips):
            codes[topo.xin[p]][leaf] = nodes[topo.xin[p]].source_input(0)
            codes[topo.leaf_sel[leaf]][0] = nodes[topo.leaf_sel[leaf]].source_input(p)
            seg[leaf] = k
            leaf += 1
    finished: dict[int, Endpoint] = {}

    def edges(t: TreeNode) -> tuple[int | None, int | None, bool]:
        """(segment at the left edge, at the right edge, one segment spans all of t)."""
        segs = seg[t.lo : t.hi]
        return segs[0], segs[-1], segs[0] is not None and all(s == segs[0] for s in segs)

    def assign(t: TreeNode, need_lp: bool, need_rp: bool) -> None:
        node = nodes[t.node]
        if t.is_leaf:
            if need_lp:
                codes[t.node][OUT_LP] = node.source_input(0)
            if need_rp:
                codes[t.node][OUT_RP] = node.source_input(0)
            return
        l_lp, l_rp, l_spans = edges(t.left)
        r_lp, r_rp, r_spans = edges(t.right)
        merge = l_rp is not None and l_rp == r_lp
        c = codes[t.node]
        add, pass_l_lp, pass_r_rp = (
            node.source_sum(),
            node.source_input(L_LP),
            node.source_input(R_RP),
        )
        # Fragments leaving upwards.
        if need_lp:
            c[OUT_LP] = add if merge and l_spans else pass_l_lp
        if need_rp:
            c[OUT_RP] = add if merge and r_spans else pass_r_rp
        # Fragments complete here: they touch neither edge of t.
        if merge and not l_spans and not r_spans:
            c[RES_A] = add
            finished[l_rp] = Endpoint(t.node, RES_A)
        if not merge and l_rp is not None and not l_spans:
            c[RES_A] = node.source_input(L_RP)
            finished[l_rp] = Endpoint(t.node, RES_A)
        if not merge and r_lp is not None and not r_spans:
            c[RES_B] = node.source_input(R_LP)
            finished[r_lp] = Endpoint(t.node, RES_B)
        left_lp_used = c[OUT_LP] == pass_l_lp
        right_rp_used = c[OUT_RP] == pass_r_rp
        assign(t.left, left_lp_used, l_rp is not None and (merge or not l_spans))
        assign(t.right, r_lp is not None and (merge or not r_spans), right_rp_used)

    lp, rp, spans = edges(topo.tree)
    if topo.tree.is_leaf:  # pragma: no cover - P >= 2 always has a tree node
        raise AssertionError("a crossbar switch has at least one tree node")
    assign(topo.tree, lp is not None, rp is not None and not spans)
    if lp is not None:
        finished[lp] = Endpoint(topo.tree.node, OUT_LP)
    if rp is not None and not spans:
        finished[rp] = Endpoint(topo.tree.node, OUT_RP)
    source = {e: k for k, e in enumerate(topo.results)}
    for k, f in enumerate(flows):
        r = source[finished[k]]
        for p in f.ops:
            codes[topo.fork[r]][p] = nodes[topo.fork[r]].source_input(0)
            codes[topo.out_sel[p]][0] = nodes[topo.out_sel[p]].source_input(r)
    return tuple(tuple(c) for c in codes)
