"""``thirteen rng collect`` and ``thirteen rng test``: the RNG kit for testing labs.

Both draw deals through the production code path, ``domain.fairness.shuffle.deal`` (R12.3 words,
R12.4 shuffle, R12.5 seats), with its ``drawn`` list recording every 32-bit word that very call
draws, before it is scaled to a card position. The seeds are fresh and drawn as production draws
them (``Seeds.fresh``), unless ``--fixed-seed`` asks for a reproducible run.

File formats (text is UTF-8, lines starting with ``#`` are comments carrying the provenance):

* raw words, text: dieharder's ASCII input (``dieharder -g 202 -f FILE``): a ``#`` header,
  ``type: d``, ``count: N``, ``numbit: 32``, then one decimal word per line, in drawn order;
* raw words, ``--binary``: the words as 4 bytes each, big-endian, nothing else: the very bytes
  of the HMAC-SHA256 blocks the shuffle read, in order (NIST SP 800-22's ``assess`` reads them
  as a bit stream, dieharder ``-g 201``, TestU01's file generators);
* deals: one deal per line, tab-separated: the server seed (hex), the client seed, the round
  id, then seat 0's to seat 3's hands (13 cards each, space-separated, in dealt order), so that
  any deal can be recomputed (``thirteen deal``).

``rng test --file`` reads either text format back.
"""

from __future__ import annotations

import argparse
import secrets
import struct
import sys
import textwrap
import time
from array import array
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TextIO
from uuid import NAMESPACE_URL, uuid4, uuid5

from domain.errors import CardError
from domain.fairness.seeds import KEY_BYTES, NONCE_BYTES, derive_seed
from domain.fairness.shuffle import HAND_SIZE, deal
from domain.fairness.statistics import DECK_SIZE, MIN_EXPECTED, WORD_BINS, Outcome
from domain.fairness.statistics import deck_tests as run_deck_tests
from domain.fairness.statistics import word_tests as run_word_tests
from domain.rules.cards import Card, format_cards, parse_card
from service.small_files import TooLarge, read_small
from service.tools.rng_report import Provenance, render
from service.tools.terminal import EXIT_BAD_INPUT

SEATS = DECK_SIZE // HAND_SIZE  # four seats deal every card (R12.5)
DEFAULT_CARDS = 1_000_000
MIN_DEALS = MIN_EXPECTED * DECK_SIZE  # 5 expected per card × position cell
MIN_WORDS = MIN_EXPECTED * WORD_BINS
MAX_TEST_CARDS = 20_000_000  # held in memory: a few hundred MB and about 90 s here
EXIT_FAILED = 1


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


@dataclass(frozen=True)
class Sample:
    """What the tests read: decks (each deal's 52 cards in dealt order) and raw words."""

    decks: list[tuple[int, ...]]
    words: Sequence[int]
    source: str
    header: tuple[str, ...] = ()
    rejected: int | None = None


def collect_sample(seeds: Seeds, cards: int) -> Sample:
    count = -(-cards // DECK_SIZE)
    decks: list[tuple[int, ...]] = []
    words = array("I")
    for dealt, _ in zip(deals(seeds), range(count), strict=False):
        decks.append(tuple(card for hand in dealt.hands for card in hand))
        words.extend(dealt.words)
    rejected = len(words) - count * (DECK_SIZE - 1)  # one word per swap, plus the rejected
    return Sample(decks, words, f"collected now; seeds {seeds.describe()}", rejected=rejected)


# Writing -----------------------------------------------------------------------------------------


def _header(kind: str, seeds: Seeds, provenance: Provenance, what: str) -> list[str]:
    """The ``#`` lines opening a text collection, each short: dieharder reads a header line
    in pieces of its buffer's size, and only the first piece starts with ``#``."""
    paragraphs = [
        f"thirteen rng collect {kind}",
        f"software: {provenance.software}",
        f"date: {provenance.date}",
        f"seeds: {seeds.describe()}",
        what,
    ]
    return [line for text in paragraphs for line in textwrap.wrap(text, 94, break_on_hyphens=False)]


def raw_words(seeds: Seeds, count: int) -> Iterator[list[int]]:
    """The first ``count`` words the deals draw, deal by deal."""
    left = count
    for dealt in deals(seeds):
        if left <= 0:
            return
        yield dealt.words[:left]
        left -= len(dealt.words)


def write_raw_text(out: TextIO, seeds: Seeds, count: int, lines: list[str]) -> None:
    out.write("#" + "=" * 66 + "\n")
    out.write("".join(f"# {line}\n" for line in lines))
    out.write("#" + "=" * 66 + "\n")
    out.write(f"type: d\ncount: {count}\nnumbit: 32\n")
    for words in raw_words(seeds, count):
        out.write("".join(f"{word}\n" for word in words))


def write_raw_binary(out: BinaryIO, seeds: Seeds, count: int) -> None:
    for words in raw_words(seeds, count):
        out.write(struct.pack(f">{len(words)}I", *words))


def write_deals(out: TextIO, seeds: Seeds, count: int, lines: list[str]) -> None:
    out.write("".join(f"# {line}\n" for line in lines))
    for dealt, _ in zip(deals(seeds), range(count), strict=False):
        hands = "\t".join(" ".join(format_cards(hand)) for hand in dealt.hands)
        out.write(f"{dealt.server_seed.hex()}\t{dealt.client_seed}\t{dealt.round_id}\t{hands}\n")


def collect(args: argparse.Namespace) -> int:
    """``thirteen rng collect --raw N | --deals N [--binary] [--out FILE]``."""
    if args.binary and args.raw is None:
        print("thirteen rng collect: --binary is for --raw words", file=sys.stderr)
        return EXIT_BAD_INPUT
    seeds = Seeds.from_key(args.fixed_seed) if args.fixed_seed else Seeds.fresh()
    provenance = Provenance.now()
    try:
        if args.binary:
            with _output(args.out, binary=True) as out:
                write_raw_binary(out, seeds, args.raw)
        elif args.raw is not None:
            lines = _header(
                "--raw",
                seeds,
                provenance,
                f"{args.raw} 32-bit words, one per line, in the order domain.fairness.shuffle "
                "drew them from R12.3's HMAC-SHA256 blocks (big-endian), rejected ones included, "
                "deal after deal (51 words a deal, more when R12.4 rejects one)",
            )
            with _output(args.out, binary=False) as out:
                write_raw_text(out, seeds, args.raw, lines)
        else:
            lines = _header(
                "--deals",
                seeds,
                provenance,
                "one deal per line, tab-separated: server seed (hex), client seed, round id, "
                "then seats 0-3's hands (R12.5: seat k holds dealt positions 13k to 13k+12), "
                "13 cards each in dealt order",
            )
            with _output(args.out, binary=False) as out:
                write_deals(out, seeds, args.deals, lines)
    except OSError as error:
        print(f"thirteen rng collect: cannot write {args.out}: {error.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    what = (
        f"{args.raw:,} raw words"
        if args.raw is not None
        else f"{args.deals:,} deal{'s' * (args.deals != 1)}"
    )
    where = f" into {args.out}" if args.out else ""
    print(f"thirteen rng collect: {what}{where}; seeds {seeds.brief()}", file=sys.stderr)
    return 0


@contextmanager
def _output(path: Path | None, *, binary: bool) -> Iterator[Any]:
    """The file at ``path``, else standard output (left open)."""
    if path is None:
        yield sys.stdout.buffer if binary else sys.stdout
        return
    with open(path, "wb") if binary else open(path, "w", encoding="utf-8") as out:
        yield out


# Reading ----------------------------------------------------------------------------------------


MAX_SAMPLE_BYTES = 512 << 20  # far above 2×10^7 cards written out as deals or words


class SampleError(ValueError):
    """A file ``rng test --file`` cannot read: names the file and line."""


def read_sample(path: Path) -> Sample:
    """A file ``rng collect`` wrote (raw words as text, or deals); raises ``SampleError``."""
    try:
        text = read_small(path, MAX_SAMPLE_BYTES).decode("utf-8")
    except TooLarge as error:
        raise SampleError(
            f"{path} {error}".replace("key, certificate or policy", "sample")
        ) from None
    except UnicodeDecodeError:
        raise SampleError(
            f"{path} is not text: --file reads the text formats (raw words without --binary, "
            "or deals)"
        ) from None
    except OSError as error:
        raise SampleError(f"cannot read {path}: {error.strerror}") from None
    header: list[str] = []
    body: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("#"):
            header.append(line.lstrip("#").strip())
        elif line.strip():
            body.append((number, line))
    if not body:
        raise SampleError(f"{path} holds no words or deals")
    kept = tuple(line for line in header if line and not set(line) <= {"="})
    if "\t" in body[0][1]:
        decks = [_deck(path, number, line) for number, line in body]
        return Sample(decks, [], f"{path}: {len(decks):,} deals", kept)
    words = _words(path, body)
    return Sample([], words, f"{path}: {len(words):,} raw words", kept)


def _deck(path: Path, number: int, line: str) -> tuple[int, ...]:
    hands = [hand.split() for hand in line.split("\t")[-SEATS:]]
    try:
        deck = tuple(int(parse_card(card)) for hand in hands for card in hand)
    except CardError as error:
        raise SampleError(f"{path} line {number}: {error.message}") from None
    if [len(hand) for hand in hands] != [HAND_SIZE] * SEATS or len(set(deck)) != DECK_SIZE:
        raise SampleError(
            f"{path} line {number}: a deal is {SEATS} tab-separated hands of {HAND_SIZE} "
            f"cards, {DECK_SIZE} distinct (the last {SEATS} fields), got hands of "
            f"{', '.join(str(len(hand)) for hand in hands)} cards, {len(set(deck))} distinct"
        )
    return deck


def _words(path: Path, body: list[tuple[int, str]]) -> array[int]:
    words = array("I")
    declared = None
    for number, line in body:
        key, colon, value = line.partition(":")
        if colon:  # dieharder's header: type, count, numbit
            if key.strip() == "count":
                declared = value.strip()
            elif (key.strip(), value.strip()) not in {("type", "d"), ("numbit", "32")}:
                raise SampleError(f"{path} line {number}: expected decimal 32-bit words")
            continue
        word = line.strip()
        if not (word.isascii() and word.isdigit()) or int(word) >= 2**32:
            raise SampleError(
                f"{path} line {number}: {word[:20]!r} is not a 32-bit word in decimal"
            )
        words.append(int(word))
    if declared is not None and declared != str(len(words)):
        raise SampleError(f"{path}: its header says count {declared}, it holds {len(words)}")
    return words


# Testing ----------------------------------------------------------------------------------------


def run_tests(args: argparse.Namespace) -> int:
    """``thirteen rng test [--cards N | --file FILE] [--out FILE]``: the report on stdout."""
    provenance = Provenance.now()
    started = time.perf_counter()
    if args.file is not None:
        if args.fixed_seed is not None:
            return _refuse("--fixed-seed is for collecting deals, not with --file")
        try:
            sample = read_sample(args.file)
        except SampleError as error:
            return _refuse(str(error))
    else:
        if not MIN_DEALS * DECK_SIZE <= args.cards <= MAX_TEST_CARDS:
            return _refuse(
                f"--cards must be from {MIN_DEALS * DECK_SIZE:,} ({MIN_DEALS} deals: "
                f"{MIN_EXPECTED} expected per card × position cell) to {MAX_TEST_CARDS:,}"
            )
        seeds = Seeds.from_key(args.fixed_seed) if args.fixed_seed else Seeds.fresh()
        sample = collect_sample(seeds, args.cards)
    if sample.decks and len(sample.decks) < MIN_DEALS:
        return _refuse(f"{sample.source}: the tests need at least {MIN_DEALS} deals")
    if not sample.decks and len(sample.words) < MIN_WORDS:
        return _refuse(f"{sample.source}: the tests need at least {MIN_WORDS} words")
    collected = time.perf_counter()
    outcomes: list[Outcome] = []
    if sample.decks:
        outcomes += run_deck_tests(sample.decks)
    if sample.words:
        outcomes += run_word_tests(sample.words)
    timing = (collected - started, time.perf_counter() - collected)
    report = render(
        provenance, sample.source, sample.header, _sample_line(sample), outcomes, timing
    )
    if args.out is not None:
        try:
            args.out.write_text(report, encoding="utf-8")
        except OSError as error:
            return _refuse(f"cannot write {args.out}: {error.strerror}")
    sys.stdout.write(report)
    return 0 if all(outcome.passed for outcome in outcomes) else EXIT_FAILED


def _sample_line(sample: Sample) -> str:
    parts = []
    if sample.decks:
        parts.append(f"{len(sample.decks):,} deals ({len(sample.decks) * DECK_SIZE:,} cards)")
    if sample.words:
        drawn = "the words they drew" if sample.decks else "raw words"
        rejected = f", {sample.rejected} rejected by R12.4" if sample.rejected is not None else ""
        parts.append(f"{drawn}: {len(sample.words):,}{rejected}")
    return "; ".join(parts)


def _refuse(message: str) -> int:
    print(f"thirteen rng test: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def seed_key(text: str) -> bytes:
    """``--fixed-seed``: a seed key, 64 hex digits."""
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != KEY_BYTES:
        raise argparse.ArgumentTypeError(
            f"a fixed seed is a seed key of {2 * KEY_BYTES} hex digits, got {text[:80]!r}"
        )
    return key


def count(text: str) -> int:
    """A positive whole number; ``1_000_000`` and ``1,000,000`` read as a million."""
    digits = text.replace("_", "").replace(",", "")
    if not (digits.isascii() and digits.isdigit()) or int(digits) == 0:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return int(digits)
