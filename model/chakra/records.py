"""The record framing of Chakra files: each message preceded by its length as a varint.

The framing is Chakra's own (src/third_party/utils/protolib.py, ``encodeMessage`` /
``decodeMessage``: the protobuf varint of the message length, then the message). Files may
be gzipped (recognised by the gzip magic bytes, as protolib's ``openFileRd`` does by name).
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator

from fredfab.model.errors import InputError

GZIP_MAGIC = b"\x1f\x8b"
#: A varint of a 64-bit length has at most 10 bytes.
_MAX_VARINT = 10


class RecordError(InputError):
    """A record that cannot be framed: ``offset`` is where it starts."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


def decompress(data: bytes) -> bytes:
    """``data``, gunzipped if it starts with the gzip magic bytes; RecordError if the gzip
    stream is cut short or damaged."""
    if data[:2] != GZIP_MAGIC:
        return data
    try:
        return gzip.decompress(data)
    except (EOFError, OSError, zlib.error) as exc:  # cut short; a bad header; a bad body
        raise RecordError(f"a damaged gzip stream: {exc}", 0) from None


def varint(n: int) -> bytes:
    """The protobuf varint of ``n`` >= 0."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def frame(message: bytes) -> bytes:
    """One record: the length varint, then the message."""
    return varint(len(message)) + message


def records(data: bytes) -> Iterator[tuple[int, memoryview]]:
    """(offset, message bytes) of every record in ``data``; RecordError on a truncated one."""
    view = memoryview(data)
    pos, end = 0, len(data)
    while pos < end:
        start = pos
        n = shift = 0
        while True:
            if pos >= end or pos - start >= _MAX_VARINT:
                raise RecordError("truncated record: its length prefix is cut off", start)
            b = data[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if pos + n > end:
            raise RecordError(
                f"truncated record: {n} bytes announced, {end - pos} left in the file", start
            )
        yield start, view[pos : pos + n]
        pos += n
