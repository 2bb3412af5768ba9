"""Reading the views: what each RPC, the sweeper and the audit ask of them, in one snapshot
that begins with the tracking rows (``as_of``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

import orjson

from domain.results import RoundResult
from domain.rules.limits import MAX_POSITION
from projections.folds import OpenRound, RecallLine
from projections.listing import Listing
from projections.store.connections import Connections
from projections.store.schema import NAME, SCHEMA, SCHEMA_VERSION, TABLES

HEAD = "head"  # not a row: the log's newest position, read beside the rows (``Tracking.head``)

T = TypeVar("T")


@dataclass(frozen=True)
class Tracking:
    """The views' tracking rows: the version of their tables (``SCHEMA_VERSION``; 1 for views
    of the first release, which had no such row) and the log position they hold every event
    up to; with the log's head where it can be read in the same snapshot."""

    schema: int
    position: int
    head: int | None = None
    """The event log's newest position in the same snapshot, where the views can read it
    (``ViewStore(log_head=…)``); None where they cannot."""


@dataclass(frozen=True)
class ResumePoint:
    """Where a starting process picks the log up: the views' position and the rounds open at
    that position with their deadlines."""

    position: int
    open_rounds: tuple[OpenRound, ...]


@dataclass(frozen=True)
class LedgerEntry:
    txn_id: int
    kind: str
    round_id: str
    transfer_id: str
    amount: int
    balance_after: int
    at: datetime


@dataclass(frozen=True)
class PlayerStats:
    player_id: str
    rounds_played: int
    net_coins: int
    points: int
    piles_won: int
    scoops: int
    home_runs: int
    fouls: int
    specials: dict[str, int]


@dataclass(frozen=True)
class PlayerRound:
    """A ``RecallLine`` as stored, with the balances around the round and the position of the
    event that ended it (the listing's key)."""

    position: int
    line: RecallLine
    balance_before: int
    balance_after: int


@dataclass(frozen=True)
class FinishedRound:
    round_id: str
    table_id: str
    number: int
    outcome: str
    base_stake: int
    ended_at: datetime
    result: RoundResult | None
    receipt: str


class Queries(Connections):
    """The reads of the views."""

    def as_of(self, read: Callable[[Tracking], T]) -> T:
        """``read(tracking)`` in one snapshot of the views that begins with their tracking
        rows, so that whatever ``read`` reads is the state those rows describe. A rebuild drops
        ``tracking`` first: on PostgreSQL it waits for this snapshot to end before it can; on
        SQLite the snapshot keeps the state it began with. A session that was cut is replaced
        and the whole snapshot read again, once."""
        return self._snapshot(lambda: read(self._tracking()))

    def _tracking(self) -> Tracking:
        """The tracking rows, and the log's head where the views read it (``log_head``)."""
        statement = (
            f"SELECT name, position FROM {self.prefix}tracking WHERE name IN ('{NAME}', '{SCHEMA}')"
        )
        if self.log_head:
            statement += f" UNION ALL SELECT '{HEAD}', ({self.log_head})"
        status = {name: int(position) for name, position in self._query(statement)}
        return Tracking(status.get(SCHEMA, 1), status.get(NAME, 0), status.get(HEAD))

    def resume_point(self) -> ResumePoint | None:
        """The views' position and the rounds open there, read together; None when the views
        are of an earlier schema (they know no open rounds) and the log must be read from 0."""
        with self.transaction() as cursor:
            cursor.execute(
                self._sql("SELECT name, position FROM {p}tracking WHERE name IN (?, ?)"),
                (NAME, SCHEMA),
            )
            tracking = dict(cursor.fetchall())
            if tracking.get(SCHEMA) != SCHEMA_VERSION:
                return None
            cursor.execute(self._sql("SELECT round_uuid, round_id, deadline FROM {p}open_rounds"))
            rounds = tuple(
                OpenRound(UUID(u), r, datetime.fromisoformat(d)) for u, r, d in cursor.fetchall()
            )
        return ResumePoint(int(tracking.get(NAME, 0)), rounds)

    def _finished(self, row: Sequence[Any]) -> FinishedRound:
        round_id, table_id, number, outcome, base_stake, ended_at, result, receipt = row
        return FinishedRound(
            round_id,
            table_id,
            int(number),
            outcome,
            int(base_stake),
            datetime.fromisoformat(ended_at),
            RoundResult.from_dict(orjson.loads(result)) if result else None,
            receipt,
        )

    _ROUND_COLUMNS = "round_id, table_id, number, outcome, base_stake, ended_at, result, receipt"

    def finished_round(self, round_id: str) -> FinishedRound | None:
        rows = self._query(
            f"SELECT {self._ROUND_COLUMNS} FROM {{p}}rounds WHERE round_id = ?", (round_id,)
        )
        return self._finished(rows[0]) if rows else None

    def table_history(self, table_id: str, after_number: int, limit: int) -> list[FinishedRound]:
        rows = self._query(
            f"SELECT {self._ROUND_COLUMNS} FROM {{p}}rounds WHERE table_id = ? "
            "AND number > ? ORDER BY number LIMIT ?",
            (table_id, after_number, limit),
        )
        return [self._finished(r) for r in rows]

    LISTED_PAGE = (
        "SELECT listing FROM {p}listed_rounds WHERE table_id = ? AND number > ? "
        "ORDER BY number LIMIT ?"
    )
    """A page of ``ListRounds``: one forward range read of the primary key, no sort, the same
    cost at any depth (a token holds the last number listed, not an offset)."""

    def listed_rounds(self, table_id: str, after_number: int, limit: int) -> list[Listing]:
        """A table's rounds as an observer sees them, oldest first, after ``after_number``."""
        rows = self._query(self.LISTED_PAGE, (table_id, after_number, limit))
        return [orjson.loads(listing) for (listing,) in rows]

    def ledger(self, account: str, after_txn: int, limit: int) -> list[LedgerEntry]:
        rows = self._query(
            "SELECT l.txn_id, j.kind, j.round_id, j.transfer_id, l.amount, l.balance_after, "
            "j.at FROM {p}legs l JOIN {p}journal j ON j.txn_id = l.txn_id "
            "WHERE l.account = ? AND l.txn_id > ? ORDER BY l.txn_id LIMIT ?",
            (account, after_txn, limit),
        )
        return [
            LedgerEntry(int(t), k, r, x, int(a), int(b), datetime.fromisoformat(at))
            for t, k, r, x, a, b, at in rows
        ]

    RECALL_PAGE = (
        "SELECT position, round_id, table_id, number, seat, outcome, base_stake, dealt_at, "
        "ended_at, cards, front, middle, back, special, foul, foul_reason, escaped, points, "
        "coins, balance_before, balance_after FROM {p}player_rounds WHERE player_id = ? "
        "AND position < ? ORDER BY position DESC LIMIT ?"
    )
    """A page of game recall: one backward range read of the primary key, no sort."""

    def player_rounds(self, player_id: str, before: int, limit: int) -> list[PlayerRound]:
        """A player's ended rounds, newest first: those that ended before position ``before``
        (0: from the newest)."""
        rows = self._query(self.RECALL_PAGE, (player_id, before or MAX_POSITION + 1, limit))
        return [_player_round(player_id, row) for row in rows]

    def balance(self, account: str) -> int | None:
        """An account's balance; None for an account no journal entry has touched (a player
        without a wallet: every wallet begins with a credit)."""
        rows = self._query("SELECT balance FROM {p}accounts WHERE account = ?", (account,))
        return int(rows[0][0]) if rows else None

    def player_stats(self, player_id: str) -> PlayerStats:
        ((rounds, points, piles, scoops, home_runs, fouls),) = self._query(
            "SELECT COUNT(*), COALESCE(SUM(points), 0), COALESCE(SUM(piles_won), 0), "
            "COALESCE(SUM(scoops), 0), COALESCE(SUM(home_run), 0), COALESCE(SUM(foul), 0) "
            "FROM {p}round_players WHERE player_id = ?",
            (player_id,),
        )
        specials = dict(
            self._query(
                "SELECT special, COUNT(*) FROM {p}round_players WHERE player_id = ? "
                "AND special <> '' GROUP BY special ORDER BY special",
                (player_id,),
            )
        )
        ((net,),) = self._query(
            "SELECT COALESCE(SUM(l.amount), 0) FROM {p}legs l JOIN {p}journal j "
            "ON j.txn_id = l.txn_id WHERE l.account = ? "
            "AND j.kind IN ('settlement', 'escape_penalty')",
            (player_id,),
        )
        return PlayerStats(
            player_id,
            int(rounds),
            int(net),
            int(points),
            int(piles),
            int(scoops),
            int(home_runs),
            int(fouls),
            {k: int(v) for k, v in specials.items()},
        )

    def leaderboard(self, since: datetime | None, limit: int) -> list[tuple[str, int, int]]:
        """(player, net coins from play, journal entries) since a moment, best first."""
        rows = self._query(
            "SELECT l.account, SUM(l.amount), COUNT(*) FROM {p}legs l JOIN {p}journal j "
            "ON j.txn_id = l.txn_id WHERE j.kind IN ('settlement', 'escape_penalty') "
            "AND j.at >= ? GROUP BY l.account ORDER BY SUM(l.amount) DESC, l.account LIMIT ?",
            (since.isoformat() if since else "", limit),
        )
        return [(a, int(n), int(c)) for a, n, c in rows]

    def unbalanced_journals(self) -> list[int]:
        """Journal transactions whose legs do not sum to zero (there must be none)."""
        rows = self._query("SELECT txn_id FROM {p}legs GROUP BY txn_id HAVING SUM(amount) <> 0")
        return [int(r[0]) for r in rows]

    def dump(self) -> dict[str, list[Any]]:
        """Every view row, in a stable order: for comparing a rebuild with the live views."""
        return {
            t: [tuple(r) for r in self._query(f"SELECT * FROM {{p}}{t} ORDER BY {o}")]
            for t, o in TABLES.items()
        }


def _player_round(player_id: str, row: Sequence[Any]) -> PlayerRound:
    """The ``PlayerRound`` of a ``RECALL_PAGE`` row (written by ``writes._recall_row``)."""
    (position, round_id, table_id, number, seat, outcome, base_stake, dealt_at, ended_at) = row[:9]
    cards, front, middle, back, special, foul, reason, escaped, points, coins = row[9:19]
    line = RecallLine(
        round_id=round_id,
        table_id=table_id,
        number=int(number),
        player_id=player_id,
        seat=int(seat),
        outcome=outcome,
        base_stake=int(base_stake),
        dealt_at=datetime.fromisoformat(dealt_at),
        ended_at=datetime.fromisoformat(ended_at),
        cards=tuple(orjson.loads(cards)),
        front=tuple(orjson.loads(front)),
        middle=tuple(orjson.loads(middle)),
        back=tuple(orjson.loads(back)),
        special=special,
        foul=bool(foul),
        foul_reason=reason,
        escaped=bool(escaped),
        points=int(points),
        coins=int(coins),
    )
    return PlayerRound(int(position), line, int(row[19]), int(row[20]))
