"""A table: its ruleset, its dealer, its seats, its rounds and the commitment to its next deal
(R8, R10, R12.1)."""

from __future__ import annotations

from datetime import datetime
from functools import cached_property
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.errors import PhaseError, SeatError
from domain.fairness.seeds import KeyRing, SeedKeyMissing, commit, derive_seed
from domain.fairness.shuffle import commitment
from domain.ids import table_uuid
from domain.rules.ruleset import Ruleset

MIN_PLAYERS = 2
_DERIVED = ("ruleset", "_round_set")  # computed from the state, left out of copies


def _no_seed_key(state: dict[str, Any]) -> None:
    """Class version 1 published the next seed in clear (``server_seed``) and no key id."""
    state["seed_key"] = ""
    state["seed_nonce"] = ""


class Table(Aggregate):
    """R10.1: seats 2 to 4 players; one round at a time.

    The table publishes the commitment to its next round's server seed (R12.1) with the id of
    the seed key and the nonce it is derived from (``domain.fairness.seeds``); the seed itself is
    not in its events, so the event store never holds a seed before its reveal. Tables opened by the
    first version recorded the next seed in clear (``server_seed``): such a table deals its next
    round with that seed, and commits under a key from that round's end.
    """

    class Opened(Aggregate.Created):
        """R13: the ruleset in full; R12.1: the first commitment. ``dealer`` is the identity
        that opened the table ("" when opened before it was recorded)."""

        class_version = 2

        table_id: str
        ruleset: dict[str, Any]
        request_id: str
        commitment: str
        server_seed: str  # the next seed in clear in class version 1; "" from version 2 on
        seed_key: str
        seed_nonce: str
        dealer: str
        at: datetime

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            _no_seed_key(state)
            state["dealer"] = ""

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

        class_version = 2

        round_id: str
        commitment: str
        server_seed: str  # the next seed in clear in class version 1; "" from version 2 on
        seed_key: str
        seed_nonce: str
        at: datetime

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            _no_seed_key(state)

    @staticmethod
    def create_id(table_id: str) -> UUID:
        return table_uuid(table_id)

    @classmethod
    def open(
        cls,
        table_id: str,
        ruleset: Ruleset,
        request_id: str,
        keys: KeyRing,
        nonce: bytes,
        dealer: str,
        at: datetime,
    ) -> Table:
        """R12.1: the table commits to its first round's seed, derived under the current key
        of ``keys`` with the fresh ``nonce``; ``dealer`` is the identity opening it."""
        first = commit(keys, table_id, 1, nonce)
        return cls(
            table_id=table_id,
            ruleset=ruleset.to_dict(),
            request_id=request_id,
            commitment=first.commitment,
            server_seed="",
            seed_key=first.key_id,
            seed_nonce=first.nonce,
            dealer=dealer,
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
        seed_key: str,
        seed_nonce: str,
        dealer: str,
        at: datetime,
    ) -> None:
        self.table_id = table_id
        self.ruleset_data = ruleset
        self.request_id = request_id
        self.dealer = dealer
        self.next_commitment = commitment
        self.clear_seed = server_seed  # only from class version 1
        self.next_seed_key = seed_key
        self.next_seed_nonce = seed_nonce
        self.opened_at = at
        self.seats: list[str] = []
        self.current_round: str | None = None
        self.round_ids: list[str] = []

    def __getstate__(self) -> dict[str, Any]:
        """Copies leave out what is derived (the ruleset from ``ruleset_data``, the set of
        ``round_ids``), recomputed on demand."""
        return {k: v for k, v in self.__dict__.items() if k not in _DERIVED}

    def has_round(self, round_id: str) -> bool:
        """Whether ``round_id`` was dealt at this table: every round starts at its table
        (R10.1), so a round id the table does not list was never dealt and need not be looked
        for. A set of ``round_ids``, brought up to date when a round has started since."""
        known: set[str] | None = self.__dict__.get("_round_set")
        if known is None or len(known) != len(self.round_ids):
            known = self.__dict__["_round_set"] = set(self.round_ids)
        return round_id in known

    @cached_property
    def ruleset(self) -> Ruleset:
        return Ruleset.from_dict(self.ruleset_data)

    @property
    def committed_number(self) -> int:
        """The number of the round the published commitment is for: the round in progress,
        else the next one."""
        return len(self.round_ids) + (0 if self.current_round else 1)

    def committed_seed(self, keys: KeyRing) -> bytes:
        """R12.1: the seed behind the published commitment, for the deal and the reveal: the
        seed recorded in clear by the first version, else derived with the recorded key id and
        nonce. ``SeedKeyMissing`` when ``keys`` lacks that key."""
        if self.clear_seed:
            seed = bytes.fromhex(self.clear_seed)
        else:
            key = keys.key(self.next_seed_key)
            nonce = bytes.fromhex(self.next_seed_nonce)
            seed = derive_seed(key, self.table_id, self.committed_number, nonce)
        if commitment(seed) != self.next_commitment:
            raise SeedKeyMissing(
                f"the seed derived for table {self.table_id} does not match its published "
                f"commitment under seed key {self.next_seed_key!r}: the key file is not the one "
                "the commitment was made with"
            )
        return seed

    def sit_down(self, player_id: str, at: datetime) -> None:
        """R10.1: at most four seats (``max_players``, R14.2.1); sitting down again is a no-op."""
        if player_id in self.seats:
            return
        seats = self.ruleset.max_players
        if len(self.seats) >= seats:
            raise SeatError(f"table {self.table_id} is full ({seats} seats)")
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

    def end_round(self, round_id: str, keys: KeyRing, nonce: bytes, at: datetime) -> None:
        """R12.1: a new commitment is published whenever a round ends, to the next round's
        seed under the current key of ``keys`` with the fresh ``nonce``."""
        if self.current_round != round_id:
            raise PhaseError(f"round {round_id} is not in progress at table {self.table_id}")
        following = commit(keys, self.table_id, len(self.round_ids) + 1, nonce)
        self._round_ended(round_id, following.commitment, "", following.key_id, following.nonce, at)

    @event(RoundEnded)
    def _round_ended(
        self,
        round_id: str,
        commitment: str,
        server_seed: str,
        seed_key: str,
        seed_nonce: str,
        at: datetime,
    ) -> None:
        self.current_round = None
        self.next_commitment = commitment
        self.clear_seed = server_seed  # only from class version 1
        self.next_seed_key = seed_key
        self.next_seed_nonce = seed_nonce
