"""A player's coins, seat and open round (R8, R9, R10.6, R11), and idempotent transfers."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.errors import PhaseError, RuleError, SeatError, quoted
from domain.ids import transfer_uuid, wallet_uuid
from domain.rules.limits import MAX_BALANCE, MAX_TRANSFER


class InsufficientFunds(RuleError):
    """A debit above the balance."""


class Wallet(Aggregate):
    """One player's coins. The balance never goes below zero (R9.1)."""

    class Opened(Aggregate.Created):
        player_id: str

    class Credited(Aggregate.Event):
        player_id: str
        transfer_id: str
        amount: int
        balance: int

    class Debited(Aggregate.Event):
        player_id: str
        transfer_id: str
        amount: int
        balance: int

    class SatDown(Aggregate.Event):
        table_id: str

    class StoodUp(Aggregate.Event):
        table_id: str

    class RoundEntered(Aggregate.Event):
        round_id: str

    class RoundSettled(Aggregate.Event):
        """R9: the player's settlement of a revealed round (signed)."""

        round_id: str
        amount: int
        balance: int

    class RoundClosed(Aggregate.Event):
        """R11.3: the round ended without a showdown; nothing to settle."""

        round_id: str

    class EscapePenaltyPaid(Aggregate.Event):
        """R11.1: the player escaped; paid the penalty and left the table."""

        round_id: str
        table_id: str
        amount: int
        balance: int

    class EscapeShareReceived(Aggregate.Event):
        """R11.2: a share of another player's escape penalty."""

        round_id: str
        amount: int
        balance: int

    @staticmethod
    def create_id(player_id: str) -> UUID:
        return wallet_uuid(player_id)

    @event(Opened)
    def __init__(self, player_id: str) -> None:
        self.player_id = player_id
        self.balance = 0
        self.table_id: str | None = None
        self.round_id: str | None = None

    # Coins in and out -------------------------------------------------------------------------

    def credit(self, transfer_id: str, amount: int) -> None:
        """Refused above ``MAX_BALANCE``: no credit makes a balance that a deal would refuse
        (``domain.rules.limits``)."""
        _check_amount(amount)
        if self.balance + amount > MAX_BALANCE:
            room = max(MAX_BALANCE - self.balance, 0)
            raise RuleError(
                f"a credit of {amount:,} would take the balance to {self.balance + amount:,} "
                f"coins, above the limit of {MAX_BALANCE:,} a wallet may hold; at most "
                f"{room:,} more can be credited",
                field="amount",
            )
        self._credited(self.player_id, transfer_id, amount, self.balance + amount)

    @event(Credited)
    def _credited(self, player_id: str, transfer_id: str, amount: int, balance: int) -> None:
        self.balance = balance

    def debit(self, transfer_id: str, amount: int) -> None:
        """R10.6: no withdrawal while in a dealt, unrevealed round; never below zero."""
        _check_amount(amount)
        if self.round_id is not None:
            raise PhaseError(
                f"player {self.player_id} is in round {self.round_id}, which is "
                "not revealed yet: coins cannot be withdrawn until it is"
            )
        if amount > self.balance:
            raise InsufficientFunds(
                f"player {self.player_id} has {self.balance} coins, cannot debit {amount}"
            )
        self._debited(self.player_id, transfer_id, amount, self.balance - amount)

    @event(Debited)
    def _debited(self, player_id: str, transfer_id: str, amount: int, balance: int) -> None:
        self.balance = balance

    # Seats and rounds -------------------------------------------------------------------------

    def sit_down(self, table_id: str) -> None:
        """R10.6: one table at a time."""
        if self.table_id is not None and self.table_id != table_id:
            raise SeatError(
                f"player {self.player_id} is already seated at table "
                f"{self.table_id}; stand up there first"
            )
        if self.table_id != table_id:
            self._sat_down(table_id)

    @event(SatDown)
    def _sat_down(self, table_id: str) -> None:
        self.table_id = table_id

    def stand_up(self, table_id: str) -> None:
        if self.table_id == table_id:
            self._stood_up(table_id)

    @event(StoodUp)
    def _stood_up(self, table_id: str) -> None:
        self.table_id = None

    def enter_round(self, round_id: str) -> None:
        self._round_entered(round_id)

    @event(RoundEntered)
    def _round_entered(self, round_id: str) -> None:
        self.round_id = round_id

    def settle(self, round_id: str, amount: int) -> None:
        """R9.1: apply a settlement; it never takes more than the balance."""
        if self.balance + amount < 0:
            raise RuleError(
                f"settlement of {amount} would leave player {self.player_id} below zero"
            )
        self._round_settled(round_id, amount, self.balance + amount)

    @event(RoundSettled)
    def _round_settled(self, round_id: str, amount: int, balance: int) -> None:
        self.balance = balance
        self.round_id = None

    def close_round(self, round_id: str) -> None:
        self._round_closed(round_id)

    @event(RoundClosed)
    def _round_closed(self, round_id: str) -> None:
        self.round_id = None

    def pay_escape_penalty(self, round_id: str, amount: int) -> None:
        """R11.1: the escapee pays and leaves the table and the round."""
        assert self.table_id is not None
        self._escape_penalty_paid(round_id, self.table_id, amount, self.balance - amount)

    @event(EscapePenaltyPaid)
    def _escape_penalty_paid(self, round_id: str, table_id: str, amount: int, balance: int) -> None:
        self.balance = balance
        self.round_id = None
        self.table_id = None

    def receive_escape_share(self, round_id: str, amount: int) -> None:
        self._escape_share_received(round_id, amount, self.balance + amount)

    @event(EscapeShareReceived)
    def _escape_share_received(self, round_id: str, amount: int, balance: int) -> None:
        self.balance = balance


def _check_amount(amount: int) -> None:
    """R7.2: whole coins, 1 to ``MAX_TRANSFER`` (``domain.rules.limits``)."""
    if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
        raise RuleError(
            f"amount must be a whole number of coins above zero, got {quoted(amount)}",
            field="amount",
        )
    if amount > MAX_TRANSFER:
        raise RuleError(
            f"amount must be at most {MAX_TRANSFER:,} coins per transfer, got {quoted(amount)}",
            field="amount",
        )


class Transfer(Aggregate):
    """A credit or debit, kept under its ``transfer_id`` so a retry moves nothing twice."""

    class Recorded(Aggregate.Created):
        transfer_id: str
        player_id: str
        kind: str
        amount: int
        balance: int

    @staticmethod
    def create_id(transfer_id: str) -> UUID:
        return transfer_uuid(transfer_id)

    @event(Recorded)
    def __init__(
        self, transfer_id: str, player_id: str, kind: str, amount: int, balance: int
    ) -> None:
        self.transfer_id = transfer_id
        self.player_id = player_id
        self.kind = kind
        self.amount = amount
        self.balance = balance

    def same_request(self, player_id: str, kind: str, amount: int) -> bool:
        return (self.player_id, self.kind, self.amount) == (player_id, kind, amount)

    def describe(self) -> dict[str, Any]:
        return {"player_id": self.player_id, "kind": self.kind, "amount": self.amount}
