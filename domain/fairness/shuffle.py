"""The provably fair shuffle and deal (R12).

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
from collections.abc import Iterator, Mapping, Sequence

from domain.errors import RuleError, quoted
from domain.rules.cards import DECK, Card

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
        block = hmac.new(server_seed, message, hashlib.sha256).digest()
        for k in range(0, 32, 4):
            yield int.from_bytes(block[k : k + 4], "big")
        counter += 1


def _recorded(stream: Iterator[int], drawn: list[int]) -> Iterator[int]:
    for word in stream:
        drawn.append(word)
        yield word


def shuffled_deck(
    server_seed: bytes, client_seed: str, round_id: str, drawn: list[int] | None = None
) -> tuple[Card, ...]:
    """R12.4: Fisher–Yates from the canonical deck (R1.4) with rejection sampling. Every word
    it draws from the stream, a rejected one too, is appended to ``drawn`` when given (the RNG
    kit's raw collector, ``service.tools.rng_collect``)."""
    deck = list(DECK)
    stream = words(server_seed, client_seed, round_id)
    if drawn is not None:
        stream = _recorded(stream, drawn)
    for i in range(51, 0, -1):
        n = i + 1
        limit = 2**32 - (2**32 % n)
        word = next(stream)
        while word >= limit:
            word = next(stream)
        j = word % n
        deck[i], deck[j] = deck[j], deck[i]
    return tuple(deck)


def deal(
    server_seed: bytes,
    client_seed: str,
    round_id: str,
    players: int,
    drawn: list[int] | None = None,
) -> tuple[tuple[Card, ...], ...]:
    """R12.5: the k-th active player in seat order gets deck positions 13k … 13k+12. ``drawn``
    as for ``shuffled_deck``."""
    if not 2 <= players <= 4:
        raise ValueError("a table deals to 2 to 4 players (R10.1)")
    deck = shuffled_deck(server_seed, client_seed, round_id, drawn)
    return tuple(deck[HAND_SIZE * k : HAND_SIZE * (k + 1)] for k in range(players))
