"""The integrator's contract: the switch's behaviour at its ports, as data for the manifest.

Everything a testbench or an integrator needs beyond names and widths, so that the manifest
alone is enough to configure the switch and drive it (docs/switch-rtl.md, "Integrating the
switch", says the same in prose; tests/hw/test_contract.py proves each rule on the RTL):

* ``source_codes``: what a node output's configuration code means (hw/uswitch.py);
* ``kinds``: which codes the outputs of each node kind may take together (model/switch/config.py
  ``check_node_codes`` accepts exactly these; the RTL does not police them);
* ``links``: the layout of ``config.topology.links`` and its boundary marker;
* ``cfg``: how the configuration words of a slot are addressed and written (hw/control.py);
* ``sum_last``: the ``last`` bit of a sum whose operands' packet boundaries differ;
* ``unused_inputs``: flits offered on an input that no node output takes;
* ``reset``: the slots and the active configuration after power-up and after ``rst``.

Every entry has machine-readable fields and a ``text`` that says the same in words.
"""

from __future__ import annotations

from fredfab.model.switch.graph import NONE, REDUCING, Kind
from fredfab.model.switch.node import INPUT_OFFSET, SUM_OFFSET, SUM_OPERANDS

CONTRACT_SCHEMA = "fred-switch-contract/1"

#: Kinds whose outputs may not take the same source (no multicast, the sum included). The
#: rest may copy one source to several outputs (DEMUX has one input, so "no multicast"
#: means it feeds at most one output; MUX has one output, so the rule is moot).
NO_MULTICAST = frozenset({Kind.R, Kind.ART, Kind.DEMUX})

_KIND_TEXT = {
    Kind.R: "Clos input stage, 2 in, m out: pass each input to one output, or their sum to one",
    Kind.D: "Clos output stage, m in, 2 out: any input to each output, one input to both",
    Kind.RD: "Fred_m(2), 2 in, 2 out: each output nothing, either input or the sum",
    Kind.DEMUX: "1 in, n out: the input to at most one output",
    Kind.MUX: "n in, 1 out: the output takes nothing or one input",
    Kind.ART: "reduction-tree node, 4 in, 4 out: like R (no multicast); the sum adds inputs 0, 1",
    Kind.FORK: "1 in, n out: the input to any set of outputs (multicast)",
}


def contract() -> dict:
    """The ``contract`` entry of the manifest (the same for every variant: per-variant
    numbers live in the manifest's other keys, which the texts name)."""
    return {
        "schema": CONTRACT_SCHEMA,
        "source_codes": {
            "none": NONE,
            "input_offset": INPUT_OFFSET,
            "sum_offset": SUM_OFFSET,
            "sum_operands": list(SUM_OPERANDS),
            "reducing_kinds": sorted(k.value for k in REDUCING),
            "text": (
                "Each output of a node (config.topology.nodes) takes one source code of "
                "code_bits bits: none (0) carries nothing and is never valid; "
                "input_offset + i (1 + i) carries input i; on a reducing kind, "
                "n_in + sum_offset (1 + n_in) carries the lane-wise sum of inputs 0 and 1 "
                "(integers wrap; floats are IEEE adds, round to nearest even), valid when both "
                "are valid, and consumes both together. Codes from 1 + n_in (2 + n_in when "
                "reducing) up are invalid."
            ),
        },
        "kinds": {
            k.value: {
                "reducing": k in REDUCING,
                "multicast": k not in NO_MULTICAST,
                "text": _KIND_TEXT[k],
            }
            for k in Kind
        },
        "rules": {
            "range": "every code is in 0 .. n_in (0 .. n_in + 1 on a reducing kind)",
            "sum_exclusive": (
                "a node that sends the sum to some output passes neither input 0 nor "
                "input 1 on its own to any output"
            ),
            "multicast": (
                "on a kind with multicast false no two outputs take the same nonzero code "
                "(the sum included); with multicast true one source may feed several "
                "outputs, and its flit is consumed once every one of them has accepted it"
            ),
        },
        "links": {
            "fields": ["src_node", "src_port", "dst_node", "dst_port"],
            "boundary": -1,
            "text": (
                "config.topology.links: each [src_node, src_port, dst_node, dst_port] connects "
                "output src_port of node src_node to input dst_port of node dst_node (node "
                "numbers are the nodes' index). src_node -1: src_port is switch input port "
                "src_port (stream i[src_port]); dst_node -1: dst_port is switch output port "
                "dst_port (stream o[dst_port])."
            ),
        },
        "cfg": {
            "vector": "nodes in index order, outputs in order, code_bits each, LSB first",
            "word_order": "lsb_first",
            "always_ready": True,
            "text": (
                "The configuration vector packs every node output's code, nodes in index "
                "order and outputs in order within a node, each code_bits wide, the first "
                "at bit 0. Word addr w of a slot holds vector bits [w * word_width, "
                "(w + 1) * word_width) (the last word zero-padded), so word 0 holds the "
                "least significant bits. cfg is always ready and writes one word per cycle: "
                "{slot, addr, data} in the cfg_payload layout. Words may come in any order "
                "and slots interleaved; a word with addr >= words_per_slot or "
                "slot >= slots is ignored. The slot memory is separate from the active "
                "configuration: writing a slot, even the active one, changes no traffic "
                "until the slot is selected."
            ),
        },
        "sum_last": {
            "from_operand": 0,
            "text": (
                "A sum flit's last bit is the last bit of its operand on input 0; the "
                "operand on input 1 gives its data only. Give every input of a reduction the "
                "same packet boundaries: if they differ, an output's packets end where those "
                "of the one input port end whose flits reach it through input 0 of every sum "
                "on the way (follow, from the output, code 1 + i to input i and the sum code "
                "to input 0, back to a switch input)."
            ),
        },
        "unused_inputs": {
            "ready": False,
            "holds_select": True,
            "text": (
                "An input whose flits no node output takes (no flow of the active "
                "configuration starts there) is never ready: a flit offered there waits, "
                "neither dropped nor delivered, and other ports run undisturbed. A phase "
                "change closes a port only while it offers no flit (and is between packets), "
                "so such a flit holds select off: withdraw it (valid low) or select "
                "never completes."
            ),
        },
        "reset": {
            "active_slot": 0,
            "slot_0": "config.reset_words",
            "other_slots": "zero",
            "rst_clears_slots": False,
            "text": (
                "At power-up (the memory's initial contents) slot 0 holds config.reset_words, "
                "the all-unicast default (switch input p to output p), and every other slot "
                "holds zero words: the idle configuration, in which no output is ever valid "
                "and no input ever ready. rst makes that default the active configuration "
                "again (slot reads 0) but does not clear the slot memory: words written "
                "before rst stay, in slot 0 too (selecting the slot activates them)."
            ),
        },
    }
