"""A table's rounds as ``ListRounds`` shows them (issue 22: a cost bound per call): each round as
an observer sees it, kept up to date by the projector from every round event, so that a page is
one range read of the view's primary key ``(table_id, number)`` instead of a hundred rounds
loaded from the event store.

``ListRounds`` shows every caller what an observer sees (``domain.visibility.OBSERVER``), so
the view holds that one view of each round and no other: before the round is over no hand and
no submission, only who has submitted (R10.4), and no server seed (R12.1); once it is over every
hand, the seed, the cards no one was dealt (R14.2.4) and the result the reveal recorded (R12.6).
What an observer may see is ``domain.visibility``'s to say, asked here when the row is written;
nothing hidden is stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from domain import visibility
from domain.dealing import undealt_cards
from domain.results import RoundResult, round_result
from domain.round import Round
from domain.rules.cards import format_cards

Listing = dict[str, Any]
"""A round as the view stores it and a page reads it back (``ListedRound.to_dict``): plain JSON
data whose keys are the names of the round's fields (those of ``domain.round``,
``domain.results`` and of the API's ``Round``), times in ISO 8601. A page is mapped from these
directly, with no dataclass between: a page of 100 rounds of four players is about 430 kB of
JSON, and every copy of it is milliseconds of the server's one interpreter."""


@dataclass(frozen=True)
class ListedPlayer:
    """A player of a round as everyone may see them all along (R10.1, R11, R12.8)."""

    player_id: str
    balance_at_deal: int
    submitted: bool
    escaped: bool
    player_seed: str


@dataclass(frozen=True)
class ListedRound:
    """A round as an observer sees it (``visibility.OBSERVER``)."""

    round_id: str
    table_id: str
    number: int
    commitment: str
    client_seed: str
    base_stake: int
    dealt_at: datetime
    deadline: datetime
    phase: str  # "dealt", "revealed" or "abandoned" (``Round.phase``)
    players: tuple[ListedPlayer, ...]  # in seat order
    hands: tuple[tuple[str, tuple[str, ...]], ...]  # (player, cards) an observer may see
    server_seed: str
    result: RoundResult | None  # the one the reveal recorded
    undealt_cards: tuple[str, ...] = ()  # R14.2.4, once the round is over

    def to_dict(self) -> Listing:
        return {
            "round_id": self.round_id,
            "table_id": self.table_id,
            "number": self.number,
            "commitment": self.commitment,
            "client_seed": self.client_seed,
            "base_stake": self.base_stake,
            "dealt_at": self.dealt_at.isoformat(),
            "deadline": self.deadline.isoformat(),
            "phase": self.phase,
            "players": [
                {
                    "player_id": p.player_id,
                    "seat": seat,
                    "balance_at_deal": p.balance_at_deal,
                    "submitted": p.submitted,
                    "escaped": p.escaped,
                    "player_seed": p.player_seed,
                }
                for seat, p in enumerate(self.players)
            ],
            "hands": [{"player_id": p, "cards": list(cards)} for p, cards in self.hands],
            "server_seed": self.server_seed,
            "result": self.result.to_dict() if self.result is not None else None,
            "undealt_cards": list(self.undealt_cards),
        }


def listed(round_: Round) -> ListedRound:
    """``round_`` as an observer sees it now. An observer is no player, so is never told the
    specials a hand qualifies for (R5.6, ``visibility.shows_qualifying``)."""
    viewer = visibility.OBSERVER
    return ListedRound(
        round_id=round_.round_id,
        table_id=round_.table_id,
        number=round_.number,
        commitment=round_.commitment,
        client_seed=round_.client_seed,
        base_stake=round_.base_stake,
        dealt_at=round_.dealt_at,
        deadline=round_.deadline,
        phase=round_.phase,
        players=tuple(
            ListedPlayer(
                player_id=p,
                balance_at_deal=round_.balances[p],
                submitted=p in round_.submissions,  # public all along (R10.4)
                escaped=p in round_.escaped,
                player_seed=round_.player_seeds.get(p, ""),  # R12.8
            )
            for p in round_.players
        ),
        hands=tuple((p, tuple(round_.hands[p])) for p in visibility.visible_hands(round_, viewer)),
        server_seed=round_.server_seed or "",
        result=round_result(round_) if round_.revealed else None,
        undealt_cards=tuple(
            format_cards(undealt_cards(round_)) if visibility.shows_undealt(round_) else ()
        ),
    )
