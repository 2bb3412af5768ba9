"""What a ``Revealed`` event records of the scored showdown, and the outcome it stands for (R6,
R9).

The scored showdown is recorded once, with the ``Revealed`` event that decided it (record once, copy
on read: docs/internals/decisions.md): ``record`` writes what the event keeps besides the totals and
coins it always held, and ``recorded_score`` reads it back. ``domain.results`` copies it into the
result every reader gets."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

from domain.rules.scoring import PairScore, PileScore, PlayerScore, RoundScore
from domain.rules.specials import Special


@dataclass(frozen=True)
class Outcome:
    """A finished showdown: the score (R6) and each active player's settled coins (R9)."""

    score: RoundScore
    coins: dict[str, int]


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
