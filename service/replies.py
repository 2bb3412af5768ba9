"""What the application's commands answer (``service.application.Thirteen``), read by the gRPC
adapter (``service.rpc``) once the command's events are durable."""

from __future__ import annotations

from dataclasses import dataclass

from domain.results import RoundResult
from domain.round import Round
from domain.rules.specials import Special
from domain.table import Table
from service.eventstore.answers import Saved


@dataclass(frozen=True)
class Balance:
    player_id: str
    balance: int


@dataclass(frozen=True)
class StandUpResult:
    table: Table
    escaped: bool
    transfers: dict[str, int]


@dataclass(frozen=True)
class ArrangeResult:
    round: Round
    player_id: str
    foul_reason: str | None
    special: Special | None


@dataclass(frozen=True)
class RevealResult:
    round: Round
    result: RoundResult
    saved: Saved  # the reveal's events; stored once the command is answered

    @property
    def position(self) -> int:
        """The reveal's position in the event log."""
        return self.saved.position

    @property
    def receipt(self) -> str:
        """The chain hash of the round's last event."""
        return self.saved.head(self.round.id)
