"""One enumeration of collective kind names, the same strings as in files and commands."""

import json

import pytest

from fredfab.model.collective_kind import FLOW_KINDS, MP_OPS, SYSTEM_OPS, CollectiveKind
from fredfab.model.switch.flow import Flow
from fredfab.model.system import CollectiveRequest, normalize_op
from fredfab.model.timing_card import KINDS


def test_members_are_the_strings_files_use():
    assert [str(k) for k in SYSTEM_OPS] == [
        "all-reduce",
        "reduce-scatter",
        "all-gather",
        "reduce",
        "broadcast",
        "all-to-all",
        "p2p",
        "io-broadcast",
        "io-reduce",
    ]
    assert json.dumps({"op": CollectiveKind.ALL_REDUCE}) == '{"op": "all-reduce"}'
    assert f"in-switch-{CollectiveKind.ALL_GATHER}" == "in-switch-all-gather"
    assert set(MP_OPS) <= set(SYSTEM_OPS)


def test_flow_kinds_are_the_timing_card_kinds():
    assert tuple(FLOW_KINDS) == KINDS
    assert Flow.parse("0,1:2").kind is CollectiveKind.REDUCE
    assert Flow.parse("0:1,2").kind is CollectiveKind.MULTICAST


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("all-reduce", CollectiveKind.ALL_REDUCE),
        ("AllReduce", CollectiveKind.ALL_REDUCE),
        ("multicast", CollectiveKind.BROADCAST),
        ("unicast", CollectiveKind.P2P),
        ("io-reduce", CollectiveKind.IO_REDUCE),
    ],
)
def test_requests_take_strings_and_aliases(text, kind):
    assert normalize_op(text) is kind
    assert CollectiveRequest(text, (0, 1), 8).op is kind
    with pytest.raises(ValueError, match="unknown; use one of all-reduce, reduce-scatter"):
        normalize_op("scatter")


def test_only_the_io_patterns_use_io():
    assert {k for k in CollectiveKind if k.uses_io} == {
        CollectiveKind.IO_BROADCAST,
        CollectiveKind.IO_REDUCE,
    }
