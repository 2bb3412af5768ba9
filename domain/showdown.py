"""The end of a round across its aggregates: the reveal with its settlement, and leaving the
table, an escape when it falls between the deal and the showdown (R9, R10.3, R10.5, R11,
R12.1). Each is one domain call on the loaded round, table and wallets, so that the
application loads them, calls one function and saves them all in one transaction.

Seeds come in as ``keys``, the seed keys the service holds (``domain.fairness.seeds``): the seed of
the round that ends is derived from the key the table's commitment names, and the table commits to
its next round under the current key with ``nonce``, fresh randomness the service drew.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from domain.errors import PhaseError
from domain.fairness.seeds import KeyRing
from domain.recorded import Outcome
from domain.round import Round
from domain.table import MIN_PLAYERS, Table
from domain.wallet import Wallet


def reveal(
    round_: Round,
    table: Table,
    wallets: Mapping[str, Wallet],
    keys: KeyRing,
    nonce: bytes,
    now: datetime,
) -> Outcome:
    """R10.3: reveal the round with the seed its table committed to (R12.6); R9: settle every
    active player's wallet (``wallets`` by player, at least the active players'); R12.1: the
    table publishes the commitment to its next seed. Refused, changing nothing, when the round
    is over or not ready (``Round.reveal``), or when ``keys`` lacks the key the commitment
    names (``SeedKeyMissing``)."""
    if round_.table_id != table.table_id:
        raise PhaseError(f"round {round_.round_id} is not a round of table {table.table_id}")
    missing = [p for p in round_.active if p not in wallets]
    if missing:
        raise PhaseError(f"the wallets of {', '.join(missing)} are needed to settle the round")
    outcome = round_.reveal(table.committed_seed(keys), now)
    table.end_round(round_.round_id, keys, nonce, now)
    for player in round_.active:
        wallets[player].settle(round_.round_id, outcome.coins[player])
    return outcome


@dataclass(frozen=True)
class Departure:
    """How a player left: ``escaped`` between the deal and the showdown, with the penalty's
    ``transfers`` (R11, sums to zero), and whether that ``abandoned`` the round (R11.3)."""

    escaped: bool
    transfers: dict[str, int] = field(default_factory=dict)
    abandoned: bool = False


def stand_up(
    table: Table,
    leaver: Wallet,
    round_: Round | None,
    wallets: Mapping[str, Wallet],
    keys: KeyRing,
    nonce: bytes,
    now: datetime,
) -> Departure:
    """R10.5: ``leaver`` leaves ``table``, whose round in progress is ``round_`` (None between
    rounds). Outside the round it costs nothing. As an active player of it, it is an escape
    (R11): the penalty moves from ``leaver`` to the other active players' ``wallets`` (by
    player), and when fewer than two players remain the round ends without a showdown
    (R11.3): its seed is published and the table commits to its next one (R12.1); refused,
    changing nothing, when that needs a key ``keys`` lacks (``SeedKeyMissing``)."""
    player = leaver.player_id
    if round_ is None or player not in round_.active:
        table.stand_up(player, None, now)
        leaver.stand_up(table.table_id)
        return Departure(escaped=False)
    if round_.round_id != table.current_round:
        raise PhaseError(f"round {round_.round_id} is not in progress at table {table.table_id}")
    missing = [p for p in round_.active if p != player and p not in wallets]
    if missing:
        raise PhaseError(f"the wallets of {', '.join(missing)} are needed for the escape")
    abandons = len(round_.active) - 1 < MIN_PLAYERS  # R11.3: the round ends without a showdown
    seed = table.committed_seed(keys) if abandons else b""  # before anything changes
    transfers = round_.escape(player, now)
    leaver.pay_escape_penalty(round_.round_id, -transfers[player])
    for other, amount in transfers.items():
        if other != player:
            wallets[other].receive_escape_share(round_.round_id, amount)
    table.stand_up(player, round_.round_id, now)
    if len(round_.active) >= 2:
        return Departure(escaped=True, transfers=transfers)
    round_.abandon(seed, now)  # R11.3
    table.end_round(round_.round_id, keys, nonce, now)
    for remaining in round_.active:
        wallets[remaining].close_round(round_.round_id)
    return Departure(escaped=True, transfers=transfers, abandoned=True)
