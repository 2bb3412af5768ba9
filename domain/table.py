"""A table: its ruleset, its seats, its rounds and the commitment to its next deal (R8, R10,
R12.1)."""

from __future__ import annotations

from datetime import datetime
from functools import cached_property
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.errors import PhaseError, SeatError
from domain.ids import table_uuid
from domain.ruleset import Ruleset
from domain.shuffle import commitment

MAX_SEATS = 4
MIN_PLAYERS = 2


class Table(Aggregate):
    """R10.1: seats 2 to 4 players; one round at a time.

    The next round's server seed is kept in the table's events so a restart cannot lose it; only
    its commitment leaves the service before the reveal (R12.1).
    """

    class Opened(Aggregate.Created):
        table_id: str
        ruleset: dict[str, Any]
        request_id: str
        commitment: str
        server_seed: str
        at: datetime

    class PlayerSatDown(Aggregate.Event):
        player_id: str
        at: datetime

    class PlayerStoodUp(Aggregate.Event):
        player_id: str
        escaped_round: str | None
        at: datetime

    class RoundStarted(Aggregate.Event):
        round_id: str
        number: int
        at: datetime

    class RoundEnded(Aggregate.Event):
        """The round is over; the next deal's commitment is published (R12.1)."""

        round_id: str
        commitment: str
        server_seed: str
        at: datetime

    @staticmethod
    def create_id(table_id: str) -> UUID:
        return table_uuid(table_id)

    @classmethod
    def open(
        cls, table_id: str, ruleset: Ruleset, request_id: str, server_seed: bytes, at: datetime
    ) -> Table:
        return cls(
            table_id=table_id,
            ruleset=ruleset.to_dict(),
            request_id=request_id,
            commitment=commitment(server_seed),
            server_seed=server_seed.hex(),
            at=at,
        )

    @event(Opened)
    def __init__(
        self,
        table_id: str,
        ruleset: dict[str, Any],
        request_id: str,
        commitment: str,
        server_seed: str,
        at: datetime,
    ) -> None:
        self.table_id = table_id
        self.ruleset_data = ruleset
        self.request_id = request_id
        self.next_commitment = commitment
        self.next_seed = server_seed
        self.opened_at = at
        self.seats: list[str] = []
        self.current_round: str | None = None
        self.round_ids: list[str] = []

    def __getstate__(self) -> dict[str, Any]:
        """Copies leave out the ruleset derived from ``ruleset_data`` (recomputed on demand)."""
        return {k: v for k, v in self.__dict__.items() if k != "ruleset"}

    @cached_property
    def ruleset(self) -> Ruleset:
        return Ruleset.from_dict(self.ruleset_data)

    def sit_down(self, player_id: str, at: datetime) -> None:
        """R10.1: at most four seats; sitting down again is a no-op."""
        if player_id in self.seats:
            return
        if len(self.seats) >= MAX_SEATS:
            raise SeatError(f"table {self.table_id} is full ({MAX_SEATS} seats)")
        self._sat_down(player_id, at)

    @event(PlayerSatDown)
    def _sat_down(self, player_id: str, at: datetime) -> None:
        self.seats.append(player_id)

    def stand_up(self, player_id: str, escaped_round: str | None, at: datetime) -> None:
        if player_id not in self.seats:
            raise SeatError(f"player {player_id} is not seated at table {self.table_id}")
        self._stood_up(player_id, escaped_round, at)

    @event(PlayerStoodUp)
    def _stood_up(self, player_id: str, escaped_round: str | None, at: datetime) -> None:
        self.seats.remove(player_id)

    def start_round(self, round_id: str, at: datetime) -> None:
        """R10.1: a deal needs two seated players and no round in progress."""
        if self.current_round is not None:
            raise PhaseError(
                f"table {self.table_id} has round {self.current_round} in progress: reveal it first"
            )
        if len(self.seats) < MIN_PLAYERS:
            raise PhaseError(
                f"table {self.table_id} has {len(self.seats)} seated player(s); "
                f"a deal needs at least {MIN_PLAYERS}"
            )
        self._round_started(round_id, len(self.round_ids) + 1, at)

    @event(RoundStarted)
    def _round_started(self, round_id: str, number: int, at: datetime) -> None:
        self.current_round = round_id
        self.round_ids.append(round_id)

    def end_round(self, round_id: str, next_seed: bytes, at: datetime) -> None:
        """R12.1: a new commitment is published whenever a round ends."""
        if self.current_round != round_id:
            raise PhaseError(f"round {round_id} is not in progress at table {self.table_id}")
        self._round_ended(round_id, commitment(next_seed), next_seed.hex(), at)

    @event(RoundEnded)
    def _round_ended(self, round_id: str, commitment: str, server_seed: str, at: datetime) -> None:
        self.current_round = None
        self.next_commitment = commitment
        self.next_seed = server_seed
