"""Was this deal fair? The fairness proof of R12, in one place: the audit, ``explain`` and the
demo all ask ``prove``.

A deal is fair when the revealed server seed hashes to the commitment published before the
deal (R12.1, R12.6) and the published algorithm (R12.3–R12.5) turns that seed, the client seed
(with the players' seeds mixed in, R12.8) and the round id into exactly the recorded hands.

>>> from domain.rules.cards import format_cards
>>> from domain.fairness.shuffle import commitment, deal, effective_client_seed
>>> seed = bytes(32)
>>> hands = [format_cards(h) for h in deal(seed, "client", "r1", 4)]
>>> prove(seed.hex(), commitment(seed), "client", "r1", hands).fair
True
>>> hands[2] = hands[3]
>>> proof = prove(seed.hex(), commitment(seed), "client", "r1", hands)
>>> proof.seed_matches, proof.hands_match, proof.wrong_seats
(True, False, (2,))

With players' seeds (R12.8) the deal is recomputed from the effective client seed:

>>> seeds = [("p0", "a"), ("p1", ""), ("p2", ""), ("p3", "d")]
>>> mixed = effective_client_seed("client", seeds)
>>> hands = [format_cards(h) for h in deal(seed, mixed, "r1", 4)]
>>> prove(seed.hex(), commitment(seed), "client", "r1", hands, seeds).fair
True
>>> prove(seed.hex(), commitment(seed), "client", "r1", hands).hands_match
False
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from domain.fairness.shuffle import deal, effective_client_seed, verify_commitment
from domain.rules.cards import DECK, Card, format_cards


@dataclass(frozen=True)
class Proof:
    """What the revealed seed proves about one deal.

    ``seed_readable``: the revealed seed is hex at all; ``seed_matches``: its SHA-256 is the
    commitment (R12.6); ``hands_match``: the seeds reproduce every recorded hand (R12.3–R12.5),
    and ``wrong_seats`` are the seats whose recorded hand they do not."""

    seed_readable: bool
    seed_matches: bool
    hands_match: bool
    wrong_seats: tuple[int, ...]

    @property
    def fair(self) -> bool:
        return self.seed_matches and self.hands_match


def prove(
    server_seed: str,
    commitment: str,
    client_seed: str,
    round_id: str,
    hands: Sequence[Sequence[str]],
    player_seeds: Sequence[tuple[str, str]] = (),
    deck: Sequence[Card] = DECK,
    max_players: int = 4,
) -> Proof:
    """R12.6: check a revealed ``server_seed`` (hex) against the ``commitment`` published before
    the deal, and recompute the deal for ``hands``, the recorded hands in seat order (two-letter
    cards, R1.2; R12.5: the k-th player got positions 13k … 13k+12), from the client seed with
    ``player_seeds`` mixed in (R12.8: (player_id, player_seed) in seat order, "" for none), from
    the ruleset's ``deck`` of N cards to at most its ``max_players`` (R14.2.1, R14.2.4)."""
    try:
        seed = bytes.fromhex(server_seed)
    except ValueError:
        return Proof(False, False, False, tuple(range(len(hands))))
    matches = verify_commitment(seed, commitment)
    if not 2 <= len(hands) <= max_players or 13 * len(hands) > len(deck):  # R10.1, R14.2.1
        return Proof(True, matches, False, tuple(range(len(hands))))  # no deal gives these
    mixed = effective_client_seed(client_seed, player_seeds)
    dealt = deal(seed, mixed, round_id, len(hands), deck=deck, max_players=max_players)
    wrong = tuple(
        seat
        for seat, (recorded, cards) in enumerate(zip(hands, dealt, strict=True))
        if list(recorded) != format_cards(cards)
    )
    return Proof(True, matches, not wrong, wrong)


def prove_hand(
    server_seed: str,
    commitment: str,
    client_seed: str,
    round_id: str,
    player_seeds: Sequence[tuple[str, str]],
    player: str,
    hand: Sequence[str],
    deck: Sequence[Card] = DECK,
    max_players: int = 4,
) -> Proof:
    """R12.6, R12.8: what one player can check alone once the seed is revealed: the seed
    against the commitment, and their own ``hand`` recomputed from the client seed with every
    player's seed mixed in, from the ruleset's ``deck`` to at most its ``max_players``
    (R14.2.1, R14.2.4). ``player_seeds`` names every player dealt in, in seat order ("" for
    none given); ``wrong_seats`` holds the player's seat when their hand differs.

    >>> from domain.fairness.shuffle import commitment
    >>> seed = bytes(32)
    >>> seeds = [("p0", "a"), ("p1", "b"), ("p2", ""), ("p3", "d")]
    >>> mine = "Td 5c 4c Kd 3d Qh Qs Th Ac 9d 2d Qc 3h".split()  # R12.8's seat 3
    >>> prove_hand(seed.hex(), commitment(seed), "client", "r1", seeds, "p3", mine).fair
    True
    >>> prove_hand(seed.hex(), commitment(seed), "client", "r1", seeds, "p2", mine).wrong_seats
    (2,)
    """
    players = [p for p, _ in player_seeds]
    seat = players.index(player)
    try:
        seed = bytes.fromhex(server_seed)
    except ValueError:
        return Proof(False, False, False, (seat,))
    matches = verify_commitment(seed, commitment)
    if not 2 <= len(players) <= max_players or 13 * len(players) > len(deck):  # R10.1, R14.2.1
        return Proof(True, matches, False, (seat,))  # no deal gives these
    mixed = effective_client_seed(client_seed, player_seeds)
    dealt = deal(seed, mixed, round_id, len(players), deck=deck, max_players=max_players)
    ok = list(hand) == format_cards(dealt[seat])
    return Proof(True, matches, ok, () if ok else (seat,))
