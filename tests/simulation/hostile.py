"""Huge and malformed values. Every one must be refused (a definite error, never OK, never
INTERNAL) and change nothing: no wallet, table or transfer may appear because of it.

Ids that the catalogue invents are recorded in the model so the final checks can look for any
trace of them. Honest players are targets too (a negative debit that were accepted would
mint coins), always under a transfer id of the catalogue's own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc

from service._generated.thirteen.v1 import table_pb2, wallet_pb2
from tests.simulation.client import Client
from tests.simulation.model import Model
from tests.simulation.report import Failures, Figures

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
OVERLONG = "x" * 129  # one more than the service's longest id
HUGE = "y" * 200_000  # well below gRPC's 1 MiB limit, far above any sane id

REFUSALS = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.OUT_OF_RANGE,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    }
)


@dataclass(frozen=True)
class Call:
    service: str
    method: str
    request: Any
    player: str = ""  # a hostile player that must end with no wallet
    table: str = ""  # a hostile table that must not exist
    transfer: tuple[str, str] | None = None  # (transfer id, player) that must leave no trace


Builder = Callable[[str, str], Call]  # (fresh tag, an honest player) → the call


def _credit(player: str, amount: int, transfer: str) -> Any:
    return wallet_pb2.CreditRequest(player_id=player, amount=amount, transfer_id=transfer)


def _debit(player: str, amount: int, transfer: str) -> Any:
    return wallet_pb2.DebitRequest(player_id=player, amount=amount, transfer_id=transfer)


def _credit_fresh(amount: int) -> Builder:
    def build(tag: str, honest: str) -> Call:
        player = f"hostile-{tag}"
        transfer = f"h-{tag}"
        request = _credit(player, amount, transfer)
        return Call("wallets", "Credit", request, player=player, transfer=(transfer, player))

    return build


def _credit_honest(amount: int) -> Builder:
    def build(tag: str, honest: str) -> Call:
        transfer = f"h-{tag}"
        return Call(
            "wallets", "Credit", _credit(honest, amount, transfer), transfer=(transfer, honest)
        )

    return build


def _debit_honest(amount: int) -> Builder:
    def build(tag: str, honest: str) -> Call:
        transfer = f"h-{tag}"
        return Call(
            "wallets", "Debit", _debit(honest, amount, transfer), transfer=(transfer, honest)
        )

    return build


def _ids(player: str, transfer: str) -> Builder:
    def build(tag: str, honest: str) -> Call:
        p = player.replace("{tag}", tag)
        t = transfer.replace("{tag}", tag)
        return Call("wallets", "Credit", _credit(p, 100, t), player=p, transfer=(t, p))

    return build


def _table(**parameters: Any) -> Builder:
    scalars = {k: v for k, v in parameters.items() if k not in ("pile_bonuses", "special_points")}

    def build(tag: str, honest: str) -> Call:
        table = f"hostile-t-{tag}"
        request = table_pb2.OpenTableRequest(table_id=table, request_id=tag)
        request.ruleset_parameters.CopyFrom(table_pb2.RulesetParameters(**scalars))
        if "pile_bonuses" in parameters:
            request.ruleset_parameters.pile_bonuses.CopyFrom(
                table_pb2.PileBonuses(**parameters["pile_bonuses"])
            )
        if "special_points" in parameters:
            request.ruleset_parameters.special_points.update(parameters["special_points"])
        return Call("tables", "OpenTable", request, table=table)

    return build


def _table_id(table: str) -> Builder:
    def build(tag: str, honest: str) -> Call:
        return Call(
            "tables",
            "OpenTable",
            table_pb2.OpenTableRequest(table_id=table, request_id=tag),
            table=table,
        )

    return build


CATALOGUE: dict[str, Builder] = {
    "credit 2^62 to a new player": _credit_fresh(2**62),
    "credit 2^63-1 to a new player": _credit_fresh(INT64_MAX),
    "credit 2^62 to a seated player": _credit_honest(2**62),
    "credit a negative amount": _credit_honest(-5),
    "credit zero": _credit_honest(0),
    "credit -2^63": _credit_honest(-(2**63)),
    "debit a negative amount": _debit_honest(-7),
    "debit -2^62": _debit_honest(-(2**62)),
    "debit 2^62": _debit_honest(2**62),
    "credit with an overlong player id": _ids(OVERLONG + "{tag}", "h-{tag}"),
    "credit with an overlong transfer id": _ids("hostile-{tag}", OVERLONG + "{tag}"),
    "credit with a 200 kB player id": _ids(HUGE + "{tag}", "h-{tag}"),
    "credit with a NUL in the player id": _ids("hostile-\x00-{tag}", "h-{tag}"),
    "credit with a newline in the transfer id": _ids("hostile-{tag}", "h-\n-{tag}"),
    "credit with an empty player id": _ids("", "h-{tag}"),
    "ruleset scoop_multiplier 2^31-1": _table(scoop_multiplier=INT32_MAX),
    "ruleset home_run_multiplier 2^31-1": _table(home_run_multiplier=INT32_MAX),
    "ruleset escape_penalty_multiple 2^31-1": _table(escape_penalty_multiple=INT32_MAX),
    "ruleset pile bonus 2^31-1": _table(pile_bonuses={"back": {"straight_flush": INT32_MAX}}),
    "ruleset special points 2^31-1": _table(special_points={"six_pairs": INT32_MAX}),
    "ruleset fixed base_stake 2^62": _table(stake_policy="fixed", base_stake=2**62),
    "ruleset seat_minimum 2^62": _table(seat_minimum=2**62),
    "ruleset negative scoop_multiplier": _table(scoop_multiplier=-3),
    "ruleset arrange_seconds 0": _table(arrange_seconds=0),
    "table with an overlong id": _table_id(OVERLONG),
    "table with a 200 kB id": _table_id(HUGE),
}


class Hostile:
    """Sends catalogue entries and judges the answers."""

    def __init__(self, client: Client, model: Model, figures: Figures, failures: Failures):
        self.client = client
        self.model = model
        self.figures = figures
        self.failures = failures
        self.sent = 0

    def send(self, name: str, tag: str, honest: str) -> bool:
        """Send one; True when it was refused as it must be."""
        call = CATALOGUE[name](tag, honest)
        if call.player:
            self.model.hostile_players.add(call.player)
        if call.table:
            self.model.hostile_tables.add(call.table)
        if call.transfer is not None:
            self.model.hostile_transfers[call.transfer[0]] = call.transfer[1]
        self.sent += 1
        answer = self.client.call(
            call.service, call.method, call.request, what=f"({name})", hostile=True
        )
        if answer.ok:
            self.failures.add(
                "huge and malformed values are refused",
                f"{name}: accepted ({type(answer.reply).__name__} {_short(answer.reply)})",
            )
            return False
        if answer.code not in REFUSALS:
            self.failures.add(
                "huge and malformed values are refused",
                f"{name}: answered {answer.code.name if answer.code else '?'} "
                f"({answer.message[:120]}), not a refusal",
            )
            return False
        self.figures.add("hostile calls refused")
        return True


def _short(message: Any) -> str:
    text = str(message).replace("\n", " ")
    return text[:160]
