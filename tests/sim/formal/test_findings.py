"""What the proofs found outside what they prove, pinned so that a change shows.

The interconnect computes the model's function for every word the control unit can hold,
rejected words included (interconnect.function_any_word). Its flit accounting does not hold
for rejected words: a node that adds inputs 0 and 1 and also passes input 1 (which
``check_node_codes`` refuses) forks the flit at its input, so the pass-through copy can
leave the switch before the sum lets the input port accept the flit. The control unit stores
whatever ``cfg`` writes, so this is the integrator's contract (configurations come from the
router or pass ``Configuration.from_bits``), as hw/uswitch.py states; docs/formal.md.
"""

from __future__ import annotations

import pytest

from fredfab.sim.formal import network
from fredfab.sim.formal.runner import run


@pytest.mark.slow
@pytest.mark.needs("sby")
def test_rejected_words_can_emit_a_flit_before_its_input_accepts_it(tmp_path):
    verdict = run(lambda: network.flits_harness(4, 2, "clos", any_word=True), "bmc", 7, tmp_path)
    assert verdict.result == "fail"
    assert any("never ahead of input" in f for f in verdict.failed), verdict.explain()
