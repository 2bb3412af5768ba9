"""Was this deal fair? The fairness proof of R12, in one place: the audit, ``explain`` and the
demo all ask ``prove``.

A deal is fair when the revealed server seed hashes to the commitment published before the
deal (R12.1, R12.6) and the published algorithm (R12.3–R12.5) turns that seed, the client seed
and the round id into exactly the recorded hands.

>>> from domain.cards import format_cards
>>> from domain.shuffle import commitment, deal
>>> seed = bytes(32)
>>> hands = [format_cards(h) for h in deal(seed, "client", "r1", 4)]
>>> prove(seed.hex(), commitment(seed), "client", "r1", hands).fair
True
>>> hands[2] = hands[3]
>>> proof = prove(seed.hex(), commitment(seed), "client", "r1", hands)
>>> proof.seed_matches, proof.hands_match, proof.wrong_seats
(True, False, (2,))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from domain.cards import format_cards
from domain.shuffle import deal, verify_commitment


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
) -> Proof:
    """R12.6: check a revealed ``server_seed`` (hex) against the ``commitment`` published before
    the deal, and recompute the deal for ``hands``, the recorded hands in seat order (two-letter
    cards, R1.2; R12.5: the k-th player got positions 13k … 13k+12)."""
    try:
        seed = bytes.fromhex(server_seed)
    except ValueError:
        return Proof(False, False, False, tuple(range(len(hands))))
    matches = verify_commitment(seed, commitment)
    if not 2 <= len(hands) <= 4:  # no deal gives these (R10.1): none of them is right
        return Proof(True, matches, False, tuple(range(len(hands))))
    dealt = deal(seed, client_seed, round_id, len(hands))
    wrong = tuple(
        seat
        for seat, (recorded, cards) in enumerate(zip(hands, dealt, strict=True))
        if list(recorded) != format_cards(cards)
    )
    return Proof(True, matches, not wrong, wrong)
