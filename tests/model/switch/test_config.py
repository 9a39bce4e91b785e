"""Configuration encoding: kind rules, bit/word/JSON round trips, tamper detection."""

import contextlib
import json

import numpy as np
import pytest

from fredfab.model.switch.config import ConfigError, Configuration, check_node_codes
from fredfab.model.switch.flowgen import random_flow_set
from fredfab.model.switch.router import RouteConflict, route
from fredfab.model.switch.topology import Kind, Node, Topology


def _random_routings(n, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        P, m = int(rng.integers(2, 20)), int(rng.integers(2, 5))
        with contextlib.suppress(RouteConflict):
            out.append(route(random_flow_set(rng, P), P, m))
    return out


@pytest.mark.parametrize("width", [1, 7, 32, 64])
def test_bits_and_words_round_trip(width):
    for r in _random_routings(40):
        cfg = r.config
        assert Configuration.from_bits(cfg.topology, cfg.to_bits()).codes == cfg.codes
        words = cfg.to_words(width)
        assert len(words) == -(-cfg.topology.config_bits // width)
        assert Configuration.from_words(cfg.topology, words, width).codes == cfg.codes


def test_json_round_trip_and_tamper_detection():
    for r in _random_routings(20, seed=1):
        text = r.config.to_json()
        back = Configuration.from_json(text)
        assert back.codes == r.config.codes and back.flows == r.flows
        data = json.loads(text)
        name = next(n for n, c in data["codes"].items() if any(c))
        data["codes"][name] = [0] * len(data["codes"][name])
        with pytest.raises(ConfigError, match=f"codes of {name} disagree"):
            Configuration.from_json(json.dumps(data))


def test_encoding_is_lsb_first_in_node_order():
    topo = Topology.build(2, 2)  # a single RD node, two 2-bit fields
    cfg = Configuration(topo, ((2, 1),))  # output 0 = input 1, output 1 = input 0 (cross)
    assert topo.config_bits == 4 and cfg.to_bits() == 0b01_10
    assert Configuration.idle(topo).to_bits() == 0


def test_from_bits_rejects_extra_bits_and_bad_codes():
    topo = Topology.build(3, 3)
    with pytest.raises(ConfigError, match="beyond"):
        Configuration.from_bits(topo, 1 << topo.config_bits)
    mux = topo.node("mux")  # two inputs: codes 0..2, so 3 is invalid in its 2-bit field
    shift = sum(n.n_out * n.code_bits for n in topo.nodes[: mux.index])
    with pytest.raises(ConfigError, match="mux"):
        Configuration.from_bits(topo, 3 << shift)


@pytest.mark.parametrize(
    "kind,n_in,n_out,codes,ok",
    [
        (Kind.R, 2, 3, (1, 2, 0), True),  # pass both inputs
        (Kind.R, 2, 3, (0, 0, 3), True),  # reduce to output 2
        (Kind.R, 2, 3, (1, 1, 0), False),  # multicast: not an R-uSwitch's job
        (Kind.R, 2, 3, (3, 3, 0), False),  # sum to two outputs
        (Kind.R, 2, 3, (3, 1, 0), False),  # sum and pass an input
        (Kind.D, 3, 2, (2, 2), True),  # multicast
        (Kind.D, 3, 2, (4, 0), False),  # no sum code in a D-uSwitch
        (Kind.RD, 2, 2, (3, 3), True),  # reduce and multicast
        (Kind.RD, 2, 2, (3, 1), False),  # the sum and one of its operands
        (Kind.ART, 4, 4, (3, 4, 5, 0), True),  # pass L.lp and R.rp, add L.rp + R.lp
        (Kind.ART, 4, 4, (5, 0, 1, 0), False),  # sum and operand 0
        (Kind.ART, 4, 4, (3, 3, 0, 0), False),  # multicast
        (Kind.FORK, 1, 4, (1, 1, 0, 1), True),
        (Kind.DEMUX, 1, 3, (0, 1, 0), True),
        (Kind.DEMUX, 1, 3, (1, 1, 0), False),
        (Kind.MUX, 3, 1, (3,), True),
    ],
)
def test_kind_rules(kind, n_in, n_out, codes, ok):
    node = Node(0, "x", kind, n_in, n_out, 0)
    if ok:
        check_node_codes(node, codes)
    else:
        with pytest.raises(ConfigError):
            check_node_codes(node, codes)


def test_malformed_json():
    with pytest.raises(ConfigError, match="not valid JSON"):
        Configuration.from_json("{")
    with pytest.raises(ConfigError, match="schema"):
        Configuration.from_json('{"schema": "other"}')


def test_paper_budget_of_configuration_sram():
    """The paper stores a switch's configurations in 1.5 KB; ours for Fred_3(P) per slot:
    four slots (MP, DP, PP, default) of a 32-port switch must fit that budget."""
    bits = Topology.build(32, 3).config_bits
    assert 4 * bits <= 1.5 * 1024 * 8
