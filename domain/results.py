"""A round's result as plain data: what ``Reveal`` answers, what the results view stores and
what the audit compares (R6, R9).

The scored showdown is recorded once, with the ``Revealed`` event that decided it (STYLE 12):
``record`` writes what the event keeps besides the totals and coins it always held, and
``recorded_score`` reads it back. Every reader copies the result; only the audit scores the
round again, on purpose, and compares.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict

from domain.rules.cards import format_cards
from domain.rules.scoring import PairScore, PileScore, PlayerScore, RoundScore
from domain.rules.specials import Special

if TYPE_CHECKING:
    from domain.round import Outcome, Round


class PileRecord(TypedDict):
    """A ``PileScore`` as stored: ``a`` and ``b`` are the two sides' piles in words."""

    result: int
    worth: int
    a: str
    b: str


class PairRecord(TypedDict):
    a: str
    b: str
    points: int
    piles: list[PileRecord]
    scoop: bool
    home_run: bool
    explanation: str


class PlayerRecord(TypedDict):
    """A player's verdict at the showdown: why they are foul (R4.3) or the special they
    played (R5), each None when not."""

    player_id: str
    foul_reason: str | None
    special: str | None


class ShowdownRecord(TypedDict):
    """What a ``Revealed`` event records of the scored showdown (class version 2): the
    players in seat order and every pair. The totals and coins stay in the event's ``points``
    and ``coins``, where the first version recorded them."""

    players: list[PlayerRecord]
    pairs: list[PairRecord]


def record(score: RoundScore) -> ShowdownRecord:
    """The showdown as the ``Revealed`` event stores it (JSON-ready)."""
    return {
        "players": [
            {
                "player_id": p.player_id,
                "foul_reason": p.foul_reason,
                "special": p.special.id if p.special else None,
            }
            for p in score.players
        ],
        "pairs": [
            {
                "a": p.a,
                "b": p.b,
                "points": p.points,
                "piles": [
                    {"result": s.result, "worth": s.worth, "a": s.a_words, "b": s.b_words}
                    for s in p.pile_scores
                ],
                "scoop": p.scoop,
                "home_run": p.home_run,
                "explanation": p.explanation,
            }
            for p in score.pairs
        ],
    }


def recorded_score(showdown: ShowdownRecord, points: Mapping[str, int]) -> RoundScore:
    """The ``RoundScore`` a reveal recorded: ``showdown`` as ``record`` wrote it and
    ``points`` the totals recorded beside it; equal to the score it was written from."""
    players = tuple(
        PlayerScore(
            p["player_id"],
            points[p["player_id"]],
            p["foul_reason"] is not None,
            Special.from_id(p["special"]) if p["special"] else None,
            p["foul_reason"],
        )
        for p in showdown["players"]
    )
    pairs = tuple(
        PairScore(
            p["a"],
            p["b"],
            p["points"],
            tuple(PileScore(s["result"], s["worth"], s["a"], s["b"]) for s in p["piles"]),
            p["scoop"],
            p["home_run"],
            p["explanation"],
        )
        for p in showdown["pairs"]
    )
    return RoundScore(players, pairs)


@dataclass(frozen=True)
class PlayerResult:
    player_id: str
    points: int
    coins: int
    foul: bool
    foul_reason: str
    special: str
    front: list[str]
    middle: list[str]
    back: list[str]
    cards: list[str]


@dataclass(frozen=True)
class PairResult:
    a: str
    b: str
    points: int
    piles: list[int]
    scoop: bool
    home_run: bool
    explanation: str


@dataclass(frozen=True)
class RoundResult:
    round_id: str
    table_id: str
    server_seed: str
    base_stake: int
    revealed_at: datetime | None
    players: list[PlayerResult]
    pairs: list[PairResult]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (``asdict`` is many times slower on the rebuild path)."""
        return {
            "round_id": self.round_id,
            "table_id": self.table_id,
            "server_seed": self.server_seed,
            "base_stake": self.base_stake,
            "revealed_at": self.revealed_at.isoformat() if self.revealed_at else None,
            "players": [dict(vars(p)) for p in self.players],
            "pairs": [dict(vars(p)) for p in self.pairs],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RoundResult:
        revealed = data.get("revealed_at")
        return cls(
            round_id=data["round_id"],
            table_id=data["table_id"],
            server_seed=data["server_seed"],
            base_stake=data["base_stake"],
            revealed_at=datetime.fromisoformat(revealed) if revealed else None,
            players=[PlayerResult(**p) for p in data["players"]],
            pairs=[PairResult(**p) for p in data["pairs"]],
        )


def round_result(round_: Round, outcome: Outcome | None = None) -> RoundResult:
    """The result of a revealed round as its reveal recorded it, copied, not scored again;
    ``outcome`` instead when the caller has one (the audit's, scored again to compare)."""
    outcome = outcome or round_.revealed_outcome()
    if outcome is None:
        raise ValueError(f"round {round_.round_id} has no showdown: it was not revealed")
    players = []
    for score in outcome.score.players:
        play = round_.play_of(score.player_id)
        piles: tuple[Any, Any, Any] = ((), (), ())
        if play.arrangement is not None:
            piles = play.arrangement.piles  # type: ignore[assignment]
        elif play.split is not None:
            piles = (play.split.front, play.split.middle, play.split.back)
        players.append(
            PlayerResult(
                player_id=score.player_id,
                points=score.points,
                coins=outcome.coins[score.player_id],
                foul=score.foul,
                foul_reason=score.foul_reason or "",
                special=score.special.id if score.special else "",
                front=format_cards(piles[0]),
                middle=format_cards(piles[1]),
                back=format_cards(piles[2]),
                cards=list(round_.hands[score.player_id]),
            )
        )
    pairs = [
        PairResult(
            a=p.a,
            b=p.b,
            points=p.points,
            piles=list(p.piles),
            scoop=p.scoop,
            home_run=p.home_run,
            explanation=p.explanation,
        )
        for p in outcome.score.pairs
    ]
    return RoundResult(
        round_id=round_.round_id,
        table_id=round_.table_id,
        server_seed=round_.server_seed or "",
        base_stake=round_.base_stake,
        revealed_at=round_.ended_at,
        players=players,
        pairs=pairs,
    )
