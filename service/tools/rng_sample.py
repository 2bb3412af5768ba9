"""What ``rng test`` reads (``Sample``): decks and raw words collected now, or read back from a
text file ``rng collect`` wrote (raw words, or deals)."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from domain.errors import CardError
from domain.fairness.shuffle import HAND_SIZE
from domain.fairness.statistics import DECK_SIZE
from domain.rules.cards import parse_card
from service.small_files import TooLarge, read_small
from service.tools.rng_collect import SEATS, Dealt, Seeds, deals

MAX_SAMPLE_BYTES = 512 << 20  # far above 2×10^7 cards written out as deals or words


@dataclass(frozen=True)
class Sample:
    """What the tests read: decks (each deal's 52 cards in dealt order) and raw words."""

    decks: list[tuple[int, ...]]
    words: Sequence[int]
    source: str
    header: tuple[str, ...] = ()
    rejected: int | None = None


PROGRESS_EVERY = 256
"""Deals between two calls of ``collect_sample``'s ``progress``."""


def collect_sample(
    seeds: Seeds,
    cards: int,
    dealt: Iterator[Dealt] | None = None,
    progress: Callable[[int], None] | None = None,
) -> Sample:
    """At least ``cards`` cards dealt now, whole deals, with the words they drew: the next
    deals of ``dealt`` (by default the seeds' first ones); ``progress`` hears of every
    ``PROGRESS_EVERY`` deals dealt."""
    count = -(-cards // DECK_SIZE)
    decks: list[tuple[int, ...]] = []
    words = array("I")
    stream = deals(seeds) if dealt is None else dealt
    for number, one in enumerate(stream, start=1):
        decks.append(tuple(card for hand in one.hands for card in hand))
        words.extend(one.words)
        if progress is not None and (number % PROGRESS_EVERY == 0 or number == count):
            progress(number % PROGRESS_EVERY or PROGRESS_EVERY)
        if number == count:
            break
    rejected = len(words) - count * (DECK_SIZE - 1)  # one word per swap, plus the rejected
    return Sample(decks, words, f"collected now; seeds {seeds.describe()}", rejected=rejected)


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
