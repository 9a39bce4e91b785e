"""The bench's scoreboard (sim/verify/cocotb_bench/scoreboard.py) without a simulator: what it
accepts, what it rejects and how it says so."""

from __future__ import annotations

import pytest

from fredfab.sim.verify.cocotb_bench.scoreboard import FlitMismatchError, Scoreboard


def _board() -> Scoreboard:
    sb = Scoreboard(2, ["first", "second"], lambda f: f"<{f[0]:x}/{f[1]}>")
    sb.expect(1, [(0xA, 0), (0xB, 1)], 0)
    sb.expect(1, [(0xC, 1)], 1)
    return sb


def test_flits_in_order_pass_and_name_their_phase():
    sb = _board()
    assert [sb.check(1, f, c) for c, f in enumerate([(0xA, 0), (0xB, 1), (0xC, 1)])] == [0, 0, 1]
    assert not sb.pending() and sb.total_received == 3 and sb.first_mismatch is None


def test_the_first_wrong_bit_fails_with_port_flit_phase_and_both_values():
    sb = _board()
    sb.check(1, (0xA, 0), 0)
    with pytest.raises(FlitMismatchError) as exc:
        sb.check(1, (0xB, 0), 1)  # last bit wrong
    want = "mismatch on output port 1, flit 1 (phase 'first', flit 1 of the phase): "
    assert str(exc.value) == want + "expected <b/1>, got <b/0>"
    m = sb.first_mismatch
    assert (m.port, m.index, m.cycle, m.expected, m.got, m.phase) == (
        1,
        1,
        1,
        (0xB, 1),
        (0xB, 0),
        "first",
    )


def test_a_flit_nobody_expects_fails():
    sb = _board()
    with pytest.raises(
        FlitMismatchError, match=r"unexpected flit \(none expected\) on output port 0"
    ):
        sb.check(0, (0xA, 0), 5)
    assert sb.first_mismatch.expected is None


def test_after_reset_the_interrupted_phase_is_forgotten_and_stale_flits_fail():
    sb = _board()
    sb.check(1, (0xA, 0), 0)
    sb.drop_through(0)
    assert sb.head_phase(1) == 1
    sb.quiet = True
    with pytest.raises(FlitMismatchError, match="stale flit after reset on output port 1, flit 1"):
        sb.check(1, (0xC, 1), 9)
