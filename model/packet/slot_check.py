"""The check word of a packet-mode configuration slot: what the loader writes after a slot's
configuration words, and what the switch verifies before it serves the slot (docs/switch-
rtl.md, "Configuration slots").

The check is CRC-16/CCITT (model/packet/format.py ``CRCS[16]``: preset all ones, no
reflection, no final XOR) over the slot's ``n_words`` configuration words in address order,
each most significant bit first, as one bit string. It takes ``check_words(word_width)``
words after the configuration words (addresses ``n_words`` ..), least significant part
first. A slot whose check fails is not selected: its heads are discarded and the other
phases go on.
"""

from __future__ import annotations

from collections.abc import Sequence

from fredfab.model.packet.format import CRCS

SLOT_CHECK = CRCS[16]


def check_words(word_width: int) -> int:
    """How many ``word_width``-bit words the check takes."""
    return -(-SLOT_CHECK.bits // word_width)


def slot_check(words: Sequence[int], word_width: int) -> int:
    """The check value of a slot's configuration words."""
    crc = SLOT_CHECK.init
    for w in words:
        crc = SLOT_CHECK.step(crc, w, word_width)
    return crc


def with_check(words: Sequence[int], word_width: int) -> list[int]:
    """The slot's words followed by its check words: what the loader writes."""
    value, mask = slot_check(words, word_width), (1 << word_width) - 1
    return [*words, *((value >> (word_width * j)) & mask for j in range(check_words(word_width)))]
