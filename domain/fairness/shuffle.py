"""The provably fair shuffle and deal (R12), over a deck of N cards (R14.2.4).

>>> hands = deal(bytes(32), "client", "r1", 4)      # the R12.7 test vector
>>> " ".join(map(str, hands[0]))
'Td 3d 2s 2h 4c 6s 5d 4d Kd Jd 3c 8s Qd'
>>> commitment(bytes(32))[:16]
'66687aadf862bd77'
"""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
from collections.abc import Iterator, Mapping, Sequence

from domain.errors import RuleError, quoted
from domain.rules.cards import DECK, Card

_WORDS = struct.Struct(">8I")  # R12.3: a block's eight 32-bit big-endian words

SEED_BYTES = 32
HAND_SIZE = 13
MAX_PLAYER_SEED_LENGTH = 64


def commitment(server_seed: bytes) -> str:
    """R12.1: ``hex(SHA-256(server_seed))``, published before the deal."""
    return hashlib.sha256(server_seed).hexdigest()


def verify_commitment(server_seed: bytes, published: str) -> bool:
    """R12.6: does the revealed seed match the commitment published before the deal?"""
    return hmac.compare_digest(commitment(server_seed), published.lower())


def check_player_seed(seed: str) -> str:
    """R12.8: a player seed is a printable string of at most 64 characters."""
    if not isinstance(seed, str) or len(seed) > MAX_PLAYER_SEED_LENGTH or not seed.isprintable():
        raise RuleError(
            f"player_seed must be printable and at most {MAX_PLAYER_SEED_LENGTH} characters",
            field="player_seed",
        )
    return seed


def check_player_seeds(seeds: Mapping[str, str], players: Sequence[str]) -> dict[str, str]:
    """R12.8: the player seeds given with a deal to ``players`` (seat order), each from a
    player dealt in and each a valid seed (``check_player_seed``); returns the seeds given
    (an empty one is none given), in seat order.

    >>> check_player_seeds({"p2": "c", "p0": "a", "p1": ""}, ["p0", "p1", "p2"])
    {'p0': 'a', 'p2': 'c'}
    >>> check_player_seeds({"p9": "x"}, ["p0", "p1"])
    Traceback (most recent call last):
    ...
    domain.errors.RuleError: player_seeds: 'p9' is not dealt into the round (its players: p0, p1)
    """
    for player, seed in seeds.items():
        if player not in players:
            raise RuleError(
                f"player_seeds: {quoted(player)} is not dealt into the round "
                f"(its players: {', '.join(players)})",
                field="player_seeds",
            )
        try:
            check_player_seed(seed)
        except RuleError as error:
            raise RuleError(
                f"player_seeds[{quoted(player)}]: {error.message}", field="player_seeds"
            ) from None
    return {player: seeds[player] for player in players if seeds.get(player)}


def in_seat_order(players: Sequence[str], seeds: Mapping[str, str]) -> list[tuple[str, str]]:
    """R12.8: (player_id, player_seed) of every player in seat order, "" for none given: what
    ``player_seeds_document`` and ``effective_client_seed`` take."""
    return [(player, seeds.get(player, "")) for player in players]


def player_seeds_document(seeds: Sequence[tuple[str, str]]) -> str:
    r"""R12.8: the JSON array ``[[player_id, player_seed], …]`` of the players who gave a seed,
    in the seat order of ``seeds``, with no whitespace and non-ASCII escaped as ``\uXXXX``.

    >>> player_seeds_document([("p0", "a"), ("p1", ""), ("p2", "é")])
    '[["p0","a"],["p2","\\u00e9"]]'
    """
    given = [[player, seed] for player, seed in seeds if seed]
    return json.dumps(given, separators=(",", ":"), ensure_ascii=True)


def effective_client_seed(client_seed: str, seeds: Sequence[tuple[str, str]]) -> str:
    """R12.8: the ``client_seed`` of R12.3 once players' seeds are mixed in:
    ``"{client_seed}|{hex(SHA-256(document))}"``, or ``client_seed`` itself when no player gave
    one. ``seeds`` are (player_id, player_seed) in seat order; an empty seed is none given.

    >>> effective_client_seed("client", [("p0", "")])
    'client'
    """
    if not any(seed for _, seed in seeds):
        return client_seed
    document = player_seeds_document(seeds)
    return f"{client_seed}|{hashlib.sha256(document.encode()).hexdigest()}"


def words(server_seed: bytes, client_seed: str, round_id: str) -> Iterator[int]:
    """R12.3: HMAC-SHA256 blocks over ``"{client_seed}:{round_id}:{counter}"``, each giving
    eight 32-bit big-endian words in order."""
    counter = 0
    while True:
        message = f"{client_seed}:{round_id}:{counter}".encode()
        yield from _WORDS.unpack(hmac.digest(server_seed, message, "sha256"))
        counter += 1


def _recorded(stream: Iterator[int], drawn: list[int]) -> Iterator[int]:
    for word in stream:
        drawn.append(word)
        yield word


def shuffled_deck(
    server_seed: bytes,
    client_seed: str,
    round_id: str,
    drawn: list[int] | None = None,
    deck: Sequence[Card] = DECK,
) -> tuple[Card, ...]:
    """R12.4: Fisher–Yates from the canonical deck (R1.4) with rejection sampling; R14.2.4: from
    a deck of N cards (``domain.rules.cards.deck_of``), for i = N − 1 down to 1. Every word it
    draws from the stream, a rejected one too, is appended to ``drawn`` when given (the RNG
    kit's raw collector, ``service.tools.rng_collect``)."""
    cards = list(deck)
    stream = words(server_seed, client_seed, round_id)
    if drawn is not None:
        stream = _recorded(stream, drawn)
    for i in range(len(cards) - 1, 0, -1):
        n = i + 1
        limit = 2**32 - (2**32 % n)
        word = next(stream)
        while word >= limit:
            word = next(stream)
        j = word % n
        cards[i], cards[j] = cards[j], cards[i]
    return tuple(cards)


def deal(
    server_seed: bytes,
    client_seed: str,
    round_id: str,
    players: int,
    drawn: list[int] | None = None,
    deck: Sequence[Card] = DECK,
    max_players: int = 4,
) -> tuple[tuple[Card, ...], ...]:
    """R12.5: the k-th active player in seat order gets deck positions 13k … 13k+12 of the
    shuffled ``deck`` (R14.2.4); 2 to ``max_players`` players (R10.1, R14.2.1). ``drawn`` as
    for ``shuffled_deck``.

    >>> from domain.rules.cards import deck_of
    >>> hands = deal(bytes(32), "client", "r1", 5, deck=deck_of("d"), max_players=5)
    >>> " ".join(map(str, hands[4]))  # R14.2.5
    'As Tc 9s 3h 7c Ad Td Qs 5h 4h Ad 5d Qd'
    """
    shuffled = _shuffled_for(server_seed, client_seed, round_id, players, drawn, deck, max_players)
    return tuple(shuffled[HAND_SIZE * k : HAND_SIZE * (k + 1)] for k in range(players))


def undealt(
    server_seed: bytes,
    client_seed: str,
    round_id: str,
    players: int,
    deck: Sequence[Card] = DECK,
    max_players: int = 4,
) -> tuple[Card, ...]:
    """R14.2.4: the shuffled deck's positions from 13 × players on, which no one is dealt and
    which are published with the hands at the reveal.

    >>> from domain.rules.cards import deck_of
    >>> rest = undealt(bytes(32), "client", "r1", 4, deck=deck_of("dc"), max_players=6)
    >>> len(rest), " ".join(map(str, rest[:6]))  # R14.2.5
    (26, 'Kh 4c Th 5c 3h 6d')
    """
    shuffled = _shuffled_for(server_seed, client_seed, round_id, players, None, deck, max_players)
    return shuffled[HAND_SIZE * players :]


def _shuffled_for(
    server_seed: bytes,
    client_seed: str,
    round_id: str,
    players: int,
    drawn: list[int] | None,
    deck: Sequence[Card],
    max_players: int,
) -> tuple[Card, ...]:
    if not 2 <= players <= max_players or HAND_SIZE * players > len(deck):
        raise ValueError(
            f"a table deals to 2 to {max_players} players from {len(deck)} cards "
            "(R10.1, R14.2.1, R14.2.2)"
        )
    return shuffled_deck(server_seed, client_seed, round_id, drawn, deck)
