"""The packet switch's manifest (hw/packet/manifest.py) against the definitions it comes
from: an NPU built from the manifest alone must frame, check and time its flits the way the
format, the link-retry model and the switch parameters say. Each test reads a fact the way
an integrator would (positions, polynomial, bit order, cycle counts) and checks it against
the code that defines it."""

from __future__ import annotations

import random

import pytest

from fredfab.hw.packet.manifest import manifest_of
from fredfab.hw.packet.params import PacketParams
from fredfab.hw.params import SwitchParams
from fredfab.model.packet.format import (
    HEADER_FIELDS,
    LSEQ_BITS,
    Header,
    LinkFlit,
    PacketFormat,
    crc_for,
)
from fredfab.model.packet.gbn import GoBackNReceiver
from fredfab.model.packet.link import tail_timeout
from fredfab.model.packet.link_retry import REPLAY_DEPTH, RETRY_TIMEOUT, replay_gap
from fredfab.model.packet.slot_check import check_words, slot_check

VARIANTS = [
    PacketParams(SwitchParams(ports=4, m=3, lanes=4, dtype="bf16")),
    PacketParams(SwitchParams(ports=3, lanes=3, dtype="int16"), PacketFormat(2, 1, 1)),
    PacketParams(SwitchParams(ports=4, lanes=4, dtype="int32"), PacketFormat(crc_bits=32)),
    PacketParams(
        SwitchParams(ports=4, lanes=8, dtype="bf16"), PacketFormat(4, 2, link_retry=False)
    ),
]


@pytest.fixture(scope="module", params=VARIANTS, ids=lambda p: p.name)
def case(request) -> tuple[PacketParams, dict]:
    params = request.param
    return params, manifest_of(params)


def _field(bits: int, where: dict) -> int:
    return (bits >> where["lsb"]) & ((1 << where["width"]) - 1)


def test_header_positions_read_back_what_the_format_packs(case) -> None:
    _, info = case
    fields = info["protocol"]["header"]["fields"]
    assert list(fields) == [name for name, _ in HEADER_FIELDS]
    rng = random.Random(1)
    for _ in range(50):
        h = Header(
            vc=rng.randrange(4),
            kind=rng.randrange(4),
            index=rng.randrange(1 << 10),
            seq=rng.randrange(1 << 16),
            src=rng.randrange(64),
            dst=rng.randrange(64),
        )
        bits = h.to_bits()
        for name, where in fields.items():
            assert _field(bits, where) == getattr(h, name, 0), name
    top = max(w["lsb"] + w["width"] for w in fields.values())
    assert top == info["protocol"]["header"]["bits"] == info["packet"]["header_bits"] == 48


def test_link_flit_positions_read_back_what_the_link_encodes(case) -> None:
    params, info = case
    link = params.link
    fields = info["protocol"]["link_flit"]["fields"]
    assert fields == info["links"]["fields"]  # the RTL layout and the protocol agree
    rng = random.Random(2)
    for _ in range(50):
        data = rng.getrandbits(link.data_bits)
        flit = LinkFlit(
            data,
            head=rng.random() < 0.5,
            last=rng.random() < 0.5,
            vc=rng.randrange(4),
            pkt=rng.randrange(16),
            crc=link.check(data),
            sync=rng.random() < 0.5,
            bad=rng.random() < 0.5,
            lseq=rng.randrange(1 << LSEQ_BITS),
        )
        bits = link.encode(flit)
        for name, where in fields.items():
            assert _field(bits, where) == int(getattr(flit, name)), name
    assert info["links"]["width"] == link.width == sum(w["width"] for w in fields.values())


def _crc_from_manifest(crc: dict, data: int, width: int) -> int:
    """The flit check exactly as the manifest describes it: register preset to ``init``,
    data bit W-1 first, no reflection, no final XOR."""
    bits, poly = crc["bits"], int(crc["poly"], 16)
    reg, top, mask = int(crc["init"], 16), 1 << (bits - 1), (1 << bits) - 1
    for k in range(width - 1, -1, -1):
        feedback = bool(reg & top) ^ bool((data >> k) & 1)
        reg = ((reg << 1) & mask) ^ (poly if feedback else 0)
    return reg ^ crc["final_xor"]


def test_the_crc_the_manifest_describes_is_the_one_the_links_carry(case) -> None:
    params, info = case
    crc, link = info["protocol"]["crc"], params.link
    assert crc["bits"] == info["packet"]["crc_bits"] == info["links"]["fields"]["crc"]["width"]
    assert (
        crc["bit_order"].startswith("data bit W-1 first") and crc["covers"] == "the data field only"
    )
    rng = random.Random(3)
    for _ in range(40):
        data = rng.getrandbits(link.data_bits)
        assert _crc_from_manifest(crc, data, link.data_bits) == link.check(data)
    # The width rule the manifest states picks the CRC the format picks, at any width.
    for width in (48, 64, 65, 512, 513, 4096):
        rule = next(
            r for r in crc["auto"] if r["data_bits_up_to"] is None or width <= r["data_bits_up_to"]
        )
        assert rule["crc_bits"] == crc_for(width).bits
        assert (
            crc["choices"][str(rule["crc_bits"])]["poly"]
            == f"0x{crc_for(width).poly:0{crc_for(width).bits // 4}x}"
        )
    if params.fmt.crc_bits == 0:
        assert crc["bits"] == crc_for(link.data_bits).bits


def test_timing_and_link_retry_are_the_models_numbers(case) -> None:
    params, info = case
    fmt, timing, retry = params.fmt, info["protocol"]["timing_cycles"], info["link_retry"]
    assert retry["enabled"] == fmt.link_retry
    assert (retry["replay_depth"], retry["retry_timeout_cycles"]) == (REPLAY_DEPTH, RETRY_TIMEOUT)
    assert retry["lseq_bits"] == LSEQ_BITS == retry["ack_fields"]["expect"]["width"]
    assert (
        retry["replay_gap_cycles"]
        == replay_gap(fmt)
        == (RETRY_TIMEOUT + 4 if fmt.link_retry else 0)
    )
    # The tail timeout: four packets' worth of link cycles, plus what one replay can add.
    assert (
        timing["rx_tail_timeout"]
        == tail_timeout(fmt)
        == 4 * (fmt.packet_flits + 1) + replay_gap(fmt)
    )
    # An NPU's own tail timeout must outlast every gap the switch's tx can show.
    assert (
        timing["npu_tail_timeout_min"] > timing["tx_max_gap_in_packet"] + retry["replay_gap_cycles"]
    )
    assert info["protocol"]["data_packet"]["flits"] == fmt.packet_flits + 1


def test_go_back_n_and_slot_check_facts(case) -> None:
    params, info = case
    gbn, slots = info["protocol"]["go_back_n"], info["protocol"]["slots"]
    assert gbn["ack_interval_packets"] == GoBackNReceiver(1).ack_every
    assert f">= {gbn['ack_interval_packets'] + 1}" in gbn["window"]
    words = info["config"]["words_per_slot"]
    width = info["config"]["word_width"]
    assert slots["check"]["words"] == check_words(width) == info["config"]["check_words_per_slot"]
    assert info["slot_copy_cycles"] == words + check_words(width) + 1
    # The check as the manifest states it: CRC-16/CCITT over the slot's words, MSB first.
    rng = random.Random(4)
    config = [rng.getrandbits(width) for _ in range(words)]
    stated = {
        "bits": 16,
        "poly": slots["check"]["poly"],
        "init": slots["check"]["init"],
        "final_xor": 0,
    }
    joined = int("".join(f"{w:0{width}b}" for w in config), 2)
    assert _crc_from_manifest(stated, joined, width * words) == slot_check(config, width)
    assert "slot_error" in info["status"] and "not selected" in slots["on_failure"]
