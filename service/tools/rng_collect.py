"""The RNG kit's collectors: deals drawn through the production code path,
``domain.fairness.shuffle.deal`` (R12.3 words, R12.4 shuffle, R12.5 seats), with its ``drawn``
list recording every 32-bit word that very call draws, before it is scaled to a card position,
and the files ``rng collect`` writes of them.

File formats (text is UTF-8, lines starting with ``#`` are comments carrying the provenance):

* raw words, text: dieharder's ASCII input (``dieharder -g 202 -f FILE``): a ``#`` header,
  ``type: d``, ``count: N``, ``numbit: 32``, then one decimal word per line, in drawn order;
* raw words, binary: the words as 4 bytes each, big-endian, nothing else: the very bytes of the
  HMAC-SHA256 blocks the shuffle read, in order (NIST SP 800-22's ``assess`` reads them as a bit
  stream, dieharder ``-g 201``, TestU01's file generators);
* deals: one deal per line, tab-separated: the server seed (hex), the client seed, the round
  id, then seat 0's to seat 3's hands (13 cards each, space-separated, in dealt order), so that
  any deal can be recomputed (``thirteen deal``).
"""

from __future__ import annotations

import secrets
import struct
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, TextIO
from uuid import NAMESPACE_URL, uuid4, uuid5

from domain.fairness.seeds import KEY_BYTES, NONCE_BYTES, derive_seed
from domain.fairness.shuffle import HAND_SIZE, deal
from domain.fairness.statistics import DECK_SIZE
from domain.rules.cards import Card, format_cards
from service.tools.rng_report import Provenance

SEATS = DECK_SIZE // HAND_SIZE  # four seats deal every card (R12.5)


@dataclass(frozen=True)
class Seeds:
    """Where the collected deals' seeds come from. Fresh (the default): one seed key from
    ``secrets`` as ``make run`` writes ``seed.key``, and for each deal a nonce from ``secrets``
    as each table commitment draws one; the server seed of deal n is then
    ``domain.fairness.seeds.derive_seed(key, table id, n, nonce)``, as ``Table.committed_seed``
    derives it. Fixed: the key given, a zero nonce and round ids from ``uuid5``."""

    key: bytes
    table_id: str
    fixed: bool

    @classmethod
    def fresh(cls) -> Seeds:
        return cls(secrets.token_bytes(KEY_BYTES), f"rng-lab-{secrets.token_hex(4)}", False)

    @classmethod
    def from_key(cls, key: bytes) -> Seeds:
        return cls(key, "rng-lab", True)

    def inputs(self, number: int) -> tuple[bytes, str, str]:
        """Deal ``number``'s (server seed, client seed, round id), each distinct per deal."""
        if self.fixed:
            nonce = bytes(NONCE_BYTES)
            round_id = str(uuid5(NAMESPACE_URL, f"thirteen-rng/{self.table_id}/{number}"))
        else:
            nonce = secrets.token_bytes(NONCE_BYTES)
            round_id = str(uuid4())
        return derive_seed(self.key, self.table_id, number, nonce), f"lab-{number}", round_id

    def brief(self) -> str:
        return "fixed by --fixed-seed" if self.fixed else "fresh, from secrets as production's"

    def describe(self) -> str:
        if self.fixed:
            return (
                "fixed by --fixed-seed (reproducible, not fresh): server seed of deal n = "
                "domain.fairness.seeds.derive_seed(the given key, 'rng-lab', n, 16 zero bytes), "
                "client seed 'lab-<n>', round id uuid5 of n"
            )
        return (
            "fresh, drawn as production draws them: a seed key from secrets.token_bytes(32) "
            "(as `make run` writes seed.key), a nonce from secrets.token_bytes(16) for each "
            "deal (as each table commitment draws one), server seed of deal n = "
            f"domain.fairness.seeds.derive_seed(key, {self.table_id!r}, n, nonce) (as "
            "Table.committed_seed); client seed 'lab-<n>' and a uuid4 round id, distinct per deal"
        )


@dataclass(frozen=True)
class Dealt:
    """One collected deal: its inputs, the hands ``deal`` returned, the words it drew."""

    server_seed: bytes
    client_seed: str
    round_id: str
    hands: tuple[tuple[Card, ...], ...]
    words: list[int]


def deals(seeds: Seeds) -> Iterator[Dealt]:
    """Deal after deal to four seats through ``domain.fairness.shuffle.deal``, recording its
    words."""
    number = 0
    while True:
        number += 1
        server_seed, client_seed, round_id = seeds.inputs(number)
        drawn: list[int] = []
        hands = deal(server_seed, client_seed, round_id, SEATS, drawn)
        yield Dealt(server_seed, client_seed, round_id, hands, drawn)


def _header(kind: str, seeds: Seeds, provenance: Provenance, what: str) -> str:
    """The ``#`` lines opening a text collection, each short: dieharder reads a header line
    in pieces of its buffer's size, and only the first piece starts with ``#``."""
    paragraphs = [
        f"thirteen rng collect {kind}",
        f"software: {provenance.software}",
        f"date: {provenance.date}",
        f"seeds: {seeds.describe()}",
        what,
    ]
    lines = [
        line for text in paragraphs for line in textwrap.wrap(text, 94, break_on_hyphens=False)
    ]
    return "".join(f"# {line}\n" for line in lines)


def raw_words(seeds: Seeds, count: int) -> Iterator[list[int]]:
    """The first ``count`` words the deals draw, deal by deal."""
    left = count
    for dealt in deals(seeds):
        if left <= 0:
            return
        yield dealt.words[:left]
        left -= len(dealt.words)


def write_raw_text(out: TextIO, seeds: Seeds, count: int, provenance: Provenance) -> None:
    """``--raw``: dieharder's ASCII input, its header stating where the words come from."""
    what = (
        f"{count} 32-bit words, one per line, in the order domain.fairness.shuffle drew them "
        "from R12.3's HMAC-SHA256 blocks (big-endian), rejected ones included, deal after deal "
        "(51 words a deal, more when R12.4 rejects one)"
    )
    out.write("#" + "=" * 66 + "\n")
    out.write(_header("--raw", seeds, provenance, what))
    out.write("#" + "=" * 66 + "\n")
    out.write(f"type: d\ncount: {count}\nnumbit: 32\n")
    for words in raw_words(seeds, count):
        out.write("".join(f"{word}\n" for word in words))


def write_raw_binary(out: BinaryIO, seeds: Seeds, count: int) -> None:
    """``--raw --binary``: the words as 4 big-endian bytes each, nothing else."""
    for words in raw_words(seeds, count):
        out.write(struct.pack(f">{len(words)}I", *words))


def write_deals(out: TextIO, seeds: Seeds, count: int, provenance: Provenance) -> None:
    """``--deals``: one deal a line, after a header stating where they come from."""
    what = (
        "one deal per line, tab-separated: server seed (hex), client seed, round id, then seats "
        "0-3's hands (R12.5: seat k holds dealt positions 13k to 13k+12), 13 cards each in dealt "
        "order"
    )
    out.write(_header("--deals", seeds, provenance, what))
    for dealt, _ in zip(deals(seeds), range(count), strict=False):
        hands = "\t".join(" ".join(format_cards(hand)) for hand in dealt.hands)
        out.write(f"{dealt.server_seed.hex()}\t{dealt.client_seed}\t{dealt.round_id}\t{hands}\n")
