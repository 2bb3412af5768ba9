"""A round's result as plain data: what ``Reveal`` answers, what the results view stores and
what the audit compares (R6, R9).

It is copied from what the ``Revealed`` event recorded (``domain.recorded``), never scored
again; only the audit scores the round again, on purpose, and compares.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from domain.recorded import Outcome
from domain.round import Round
from domain.rules.cards import format_cards


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
        shown = play.arrangement or play.split
        piles = shown.piles if shown is not None else ((), (), ())
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
