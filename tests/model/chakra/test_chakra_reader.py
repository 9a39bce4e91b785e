"""Chakra traces: the writer and reader agree, files from a generic encoder read, and every
bad trace fails with one line naming the file, the node and the field."""

import gzip

import pytest

from fredfab.model.chakra import ChakraError, read_trace, write_trace
from fredfab.model.chakra import et_def_pb2 as pb
from fredfab.model.chakra.job import match
from fredfab.model.chakra.records import frame
from fredfab.model.chakra.trace import TraceNode
from tests.chakra_nodes import coll, comp


def test_round_trip_keeps_every_field_and_shares_identical_ranks(tmp_path):
    nodes = [
        comp(0, 1.2345678e-3),
        coll(1, 1 << 20, deps=[0], pg="7"),
        TraceNode(2, "ld", "MEM_LOAD", deps=(0,), data_count=0, size=4096),
        TraceNode(3, "s", "COMM_SEND", deps=(1, 2), data_count=1, size=64, src=0, dst=1, tag=3),
    ]
    other = [comp(0), TraceNode(1, "r", "COMM_RECV", size=64, src=0, dst=1, tag=3)]
    write_trace(tmp_path / "j", [nodes, other, other], {"7": [0]}, compress=True)
    t = read_trace(tmp_path / "j")
    assert t.num_ranks == 3 and t.rank_program == (0, 1, 1) and len(t.programs) == 2
    assert t.programs[0].nodes == tuple(nodes)  # exact durations, ctrl/data split, all attrs
    assert t.comm_groups == {"7": (0,)}
    assert gzip.decompress((tmp_path / "j.0.et.gz").read_bytes())[:1] == b"\x07"


def _varint(n):
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def test_a_file_from_a_generic_encoder(tmp_path):
    # Node {id: 5, name: "ar", type: COMM_COLL, duration_micros: 3,
    #       attr [{name: "comm_type", int64_val: 7}, {name: "comm_size", int64_val: 300}]}
    # encoded by hand from the wire format (field number << 3 | wire type).
    def attr(name, val):
        body = b"\x0a" + _varint(len(name)) + name.encode() + b"\x48" + _varint(val)
        return b"\x52" + _varint(len(body)) + body

    node = b"\x08\x05" + b"\x12\x02ar" + b"\x18\x07" + b"\x38\x03"
    node += attr("comm_type", 7) + attr("comm_size", 300)
    meta = b"\x0a\x051.0.0"
    for r in range(2):
        (tmp_path / f"g.{r}.et").write_bytes(_varint(len(meta)) + meta + _varint(len(node)) + node)
    n = read_trace(tmp_path / "g").programs[0].nodes[0]
    assert (n.id, n.kind, n.comm_type, n.size, n.duration) == (5, "COMM_COLL", 7, 300, 3e-6)


def _raw(tmp_path, name, messages, ranks=2):
    data = frame(pb.GlobalMetadata(version="1").SerializeToString())
    data += b"".join(frame(m.SerializeToString()) for m in messages)
    for r in range(ranks):
        (tmp_path / f"{name}.{r}.et").write_bytes(data)
    return tmp_path / name


def _error(fn) -> str:
    with pytest.raises(ChakraError) as exc:
        fn()
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_truncated_record(tmp_path):
    prefix = _raw(tmp_path, "t", [pb.Node(id=0, name="a", type=4)])
    path = tmp_path / "t.0.et"
    path.write_bytes(path.read_bytes()[:-2])
    msg = _error(lambda: read_trace(prefix))
    assert "t.0.et" in msg and "truncated record" in msg and "after the metadata" in msg


@pytest.mark.parametrize(
    "damage, says",
    [
        (lambda gz: gz[:-9], "a damaged gzip stream"),  # cut short inside the stream
        (lambda gz: gz[:2], "a damaged gzip stream"),  # the magic bytes alone
        (lambda gz: gz[:10] + bytes(len(gz) - 10), "a damaged gzip stream"),  # a zeroed body
        (lambda gz: b"", "empty; a Chakra file starts with a GlobalMetadata record"),
    ],
)
def test_a_damaged_or_empty_file_is_one_line_naming_it(tmp_path, damage, says):
    write_trace(tmp_path / "z", [[comp(0)]])
    plain = tmp_path / "z.0.et"
    path = tmp_path / "z.0.et.gz"
    path.write_bytes(damage(gzip.compress(plain.read_bytes())))
    plain.unlink()
    msg = _error(lambda: read_trace(tmp_path / "z"))
    assert msg.startswith(f"{path}: ") and says in msg


def test_unknown_node_type(tmp_path):
    prefix = _raw(tmp_path, "u", [pb.Node(id=4, name="odd", type=12)])
    msg = _error(lambda: read_trace(prefix))
    assert "u.0.et: node 4 'odd': type: 12 is not a Chakra node type" in msg


def test_missing_dependency_and_cycle(tmp_path):
    prefix = _raw(tmp_path, "m", [pb.Node(id=1, name="a", type=4, ctrl_deps=[9])])
    assert "m.0.et: node 1 'a': ctrl_deps: node 9 is not in the trace" in _error(
        lambda: read_trace(prefix)
    )
    nodes = [pb.Node(id=1, type=4, data_deps=[2]), pb.Node(id=2, type=4, data_deps=[1])]
    prefix = _raw(tmp_path, "cy", nodes)
    msg = _error(lambda: read_trace(prefix))
    assert "cy.0.et: node 1: deps: a cycle (1 waits for 2 waits for 1)" in msg


def test_ranks_missing(tmp_path):
    write_trace(tmp_path / "r", [[comp(0)]] * 3)
    (tmp_path / "r.1.et").unlink()
    assert "r.1.et: rank 1 is missing (found ranks 0, 2" in _error(
        lambda: read_trace(tmp_path / "r")
    )


def test_attribute_of_the_wrong_type(tmp_path):
    bad = pb.Node(id=3, name="ar", type=7)
    bad.attr.add(name="comm_type", int64_val=0)
    bad.attr.add(name="comm_size", string_val="1MiB")
    prefix = _raw(tmp_path, "w", [bad])
    assert "w.0.et: node 3 'ar': comm_size: must be an integer, got string_val" in _error(
        lambda: read_trace(prefix)
    )


def test_members_disagree_on_size(tmp_path):
    write_trace(tmp_path / "d", [[coll(0, 1024)], [coll(0, 2048)]])
    msg = _error(lambda: match(read_trace(tmp_path / "d")))
    assert "d.1.et: node 0 'x0': comm_size: 2048 here, 1024 on the other members" in msg


def test_a_member_never_issues_the_collective(tmp_path):
    write_trace(tmp_path / "n", [[coll(0, 64), coll(1, 64, deps=[0])], [coll(0, 64)]])
    msg = _error(lambda: match(read_trace(tmp_path / "n")))
    assert "collective #1 of group [0, 1] is never issued by rank 1" in msg


def test_unmatched_send_and_undefined_group(tmp_path):
    s = TraceNode(0, "s", "COMM_SEND", size=8, src=0, dst=1)
    write_trace(tmp_path / "s", [[s], [comp(0)]])
    assert "s.0.et: node 0 's': comm_dst: send #0 from rank 0 to 1 (tag 0) has no matching" in (
        _error(lambda: match(read_trace(tmp_path / "s")))
    )
    write_trace(tmp_path / "p", [[coll(0, 8, pg="3")]] * 2)
    assert "p.0.et: node 0 'x0': pg_name: group '3' is not defined" in _error(
        lambda: match(read_trace(tmp_path / "p"))
    )
