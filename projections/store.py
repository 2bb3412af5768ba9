"""The views' tables: a SQLite file of their own beside the event store, or tables prefixed
``thirteen_view_`` in the service's PostgreSQL schema.

Each batch of view changes is written in one transaction together with the tracking position,
advanced by compare-and-set: a batch applies exactly once even if two projectors race.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from domain.results import RoundResult
from projections.folds import Journal, OpenRound, PlayerLine, Record, RoundRecord

NAME = "views"
SCHEMA = "schema"
SCHEMA_VERSION = 2
"""Kept in the tracking table under ``schema``. Version 1 (the first release) had no such
row, no open rounds and another name for the external account; views of an older version are
rebuilt from the log by the projector that leads (``Projector``)."""


class StaleBatch(Exception):
    """Another projector advanced the views first; reload and carry on from there."""


_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS {p}tracking (name TEXT PRIMARY KEY, position BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {p}rounds (round_id TEXT PRIMARY KEY, table_id TEXT NOT NULL, "
    "number INTEGER NOT NULL, outcome TEXT NOT NULL, base_stake BIGINT NOT NULL, "
    "ruleset TEXT NOT NULL, dealt_at TEXT NOT NULL, ended_at TEXT NOT NULL, "
    "server_seed TEXT NOT NULL, result TEXT, receipt TEXT NOT NULL, "
    "position BIGINT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS {p}rounds_by_table ON {p}rounds (table_id, number)",
    "CREATE TABLE IF NOT EXISTS {p}round_players (round_id TEXT NOT NULL, "
    "player_id TEXT NOT NULL, table_id TEXT NOT NULL, seat INTEGER NOT NULL, "
    "points BIGINT NOT NULL, coins BIGINT NOT NULL, foul INTEGER NOT NULL, "
    "special TEXT NOT NULL, piles_won INTEGER NOT NULL, scoops INTEGER NOT NULL, "
    "home_run INTEGER NOT NULL, at TEXT NOT NULL, PRIMARY KEY (round_id, player_id))",
    "CREATE INDEX IF NOT EXISTS {p}round_players_by_player ON {p}round_players (player_id)",
    "CREATE TABLE IF NOT EXISTS {p}journal (txn_id BIGINT PRIMARY KEY, kind TEXT NOT NULL, "
    "round_id TEXT NOT NULL, transfer_id TEXT NOT NULL, at TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {p}legs (txn_id BIGINT NOT NULL, account TEXT NOT NULL, "
    "amount BIGINT NOT NULL, balance_after BIGINT NOT NULL, PRIMARY KEY (account, txn_id))",
    "CREATE INDEX IF NOT EXISTS {p}legs_by_txn ON {p}legs (txn_id)",
    "CREATE TABLE IF NOT EXISTS {p}accounts (account TEXT PRIMARY KEY, balance BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {p}open_rounds (round_uuid TEXT PRIMARY KEY, "
    "round_id TEXT NOT NULL, deadline TEXT NOT NULL)",
]
_TABLES = ["tracking", "rounds", "round_players", "journal", "legs", "accounts", "open_rounds"]


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
class FinishedRound:
    round_id: str
    table_id: str
    number: int
    outcome: str
    base_stake: int
    ended_at: datetime
    result: RoundResult | None
    receipt: str


class ViewStore:
    """The views on SQLite (``path``) or PostgreSQL (``postgres`` connection settings)."""

    def __init__(self, *, path: Path | None = None, postgres: dict[str, str] | None = None) -> None:
        if (path is None) == (postgres is None):
            raise ValueError("give exactly one of path or postgres")
        self.path = path
        self.postgres = postgres
        self.prefix = "thirteen_view_" if postgres else "view_"
        self._local = threading.local()  # one connection per thread
        self._all: list[Any] = []
        self._lock = threading.Lock()

    # Connections --------------------------------------------------------------------------

    def _connect(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self.postgres and (conn.closed or conn.broken):
            # The session was cut (pg_terminate_backend, a restart, a fail-over): open another.
            with self._lock:
                if conn in self._all:
                    self._all.remove(conn)
            conn.close()
            conn = None
        if conn is None:
            conn = self._open()
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def _open(self) -> Any:
        if self.path is not None:
            conn = sqlite3.connect(
                self.path, timeout=30, check_same_thread=False, isolation_level=None
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            return conn
        import psycopg
        from psycopg.conninfo import make_conninfo

        settings = dict(self.postgres or {})
        schema = settings.pop("schema", "")
        if schema:
            settings["options"] = f"-c search_path={schema}"
        return psycopg.connect(make_conninfo("", **settings), autocommit=True)

    def _sql(self, statement: str) -> str:
        statement = statement.replace("{p}", self.prefix)
        return statement.replace("?", "%s") if self.postgres else statement

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        conn = self._connect()
        if self.postgres:
            with conn.transaction():
                yield conn.cursor()
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn.cursor()
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _query(self, statement: str, params: Sequence[Any] = ()) -> list[Any]:
        """Rows of a read; a read on a session that was cut is tried once more on a new one
        (a write is not: the projector's compare-and-set makes its own retry safe)."""
        for attempt in (1, 2):
            cursor = self._connect().cursor()
            try:
                cursor.execute(self._sql(statement), params)
                return list(cursor.fetchall())
            except Exception:
                if attempt == 2 or not self._cut():
                    raise
        raise AssertionError("unreachable")

    def _cut(self) -> bool:
        conn = getattr(self._local, "conn", None)
        return bool(self.postgres and conn is not None and (conn.closed or conn.broken))

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()

    # Schema -------------------------------------------------------------------------------

    def create(self) -> None:
        """Create what is missing. Fresh views get this version's schema mark; views of an
        earlier version keep theirs, so that the leading projector rebuilds them."""
        with self.transaction() as cursor:
            for statement in _SCHEMA:
                cursor.execute(self._sql(statement))
            cursor.execute(
                self._sql(
                    "INSERT INTO {p}tracking (name, position) VALUES (?, 0) "
                    "ON CONFLICT (name) DO NOTHING"
                ),
                (NAME,),
            )
            if cursor.rowcount == 1:
                cursor.execute(
                    self._sql("INSERT INTO {p}tracking (name, position) VALUES (?, ?)"),
                    (SCHEMA, SCHEMA_VERSION),
                )

    def schema_version(self) -> int:
        """The version of the views' tables: 1 for views of the first release."""
        rows = self._query("SELECT position FROM {p}tracking WHERE name = ?", (SCHEMA,))
        return int(rows[0][0]) if rows else 1

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

    def drop(self) -> None:
        with self.transaction() as cursor:
            for table in _TABLES:
                cursor.execute(self._sql(f"DROP TABLE IF EXISTS {{p}}{table}"))

    # Writing ------------------------------------------------------------------------------

    def position(self) -> int:
        rows = self._query("SELECT position FROM {p}tracking WHERE name = ?", (NAME,))
        return int(rows[0][0]) if rows else 0

    def balances(self) -> dict[str, int]:
        return {a: int(b) for a, b in self._query("SELECT account, balance FROM {p}accounts")}

    def write(
        self, batch: Sequence[tuple[int, Record]], start: int, end: int, balances: dict[str, int]
    ) -> None:
        """Apply records (with their event positions) and move tracking from ``start`` to
        ``end`` in one transaction; ``balances`` are the running balances, updated here."""
        sql = self._sql
        changed: set[str] = set()
        with self.transaction() as cursor:
            cursor.execute(
                sql("UPDATE {p}tracking SET position = ? WHERE name = ? AND position = ?"),
                (end, NAME, start),
            )
            if cursor.rowcount != 1:
                raise StaleBatch(f"views are no longer at position {start}")
            for position, record in batch:
                if isinstance(record, Journal):
                    self._journal(cursor, position, record, balances, changed)
                elif isinstance(record, OpenRound):
                    cursor.execute(
                        sql(
                            "INSERT INTO {p}open_rounds (round_uuid, round_id, deadline) "
                            "VALUES (?, ?, ?) ON CONFLICT (round_uuid) DO NOTHING"
                        ),
                        (str(record.round_uuid), record.round_id, record.deadline.isoformat()),
                    )
                else:
                    cursor.execute(
                        sql("DELETE FROM {p}open_rounds WHERE round_id = ?"), (record.round_id,)
                    )
                    self._round(cursor, position, record)
            for account in changed:
                cursor.execute(
                    sql(
                        "INSERT INTO {p}accounts (account, balance) VALUES (?, ?) "
                        "ON CONFLICT (account) DO UPDATE SET balance = ?"
                    ),
                    (account, balances[account], balances[account]),
                )

    def _journal(
        self,
        cursor: Any,
        position: int,
        record: Journal,
        balances: dict[str, int],
        changed: set[str],
    ) -> None:
        cursor.execute(
            self._sql(
                "INSERT INTO {p}journal (txn_id, kind, round_id, transfer_id, "
                "at) VALUES (?, ?, ?, ?, ?)"
            ),
            (position, record.kind, record.round_id, record.transfer_id, record.at.isoformat()),
        )
        for leg in record.legs:
            balances[leg.account] = balances.get(leg.account, 0) + leg.amount
            changed.add(leg.account)
            cursor.execute(
                self._sql(
                    "INSERT INTO {p}legs (txn_id, account, amount, "
                    "balance_after) VALUES (?, ?, ?, ?)"
                ),
                (position, leg.account, leg.amount, balances[leg.account]),
            )

    def _round(self, cursor: Any, position: int, record: RoundRecord) -> None:
        result = json.dumps(record.result.to_dict()) if record.result else None
        cursor.execute(
            self._sql(
                "INSERT INTO {p}rounds (round_id, table_id, number, outcome, base_stake, ruleset, "
                "dealt_at, ended_at, server_seed, result, receipt, position) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            ),
            (
                record.round_id,
                record.table_id,
                record.number,
                record.outcome,
                record.base_stake,
                json.dumps(record.ruleset),
                record.dealt_at.isoformat(),
                record.ended_at.isoformat(),
                record.server_seed,
                result,
                record.receipt,
                position,
            ),
        )
        for line in record.players:
            self._player_line(cursor, line)

    def _player_line(self, cursor: Any, line: PlayerLine) -> None:
        cursor.execute(
            self._sql(
                "INSERT INTO {p}round_players (round_id, player_id, table_id, seat, points, coins, "
                "foul, special, piles_won, scoops, home_run, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            ),
            (
                line.round_id,
                line.player_id,
                line.table_id,
                line.seat,
                line.points,
                line.coins,
                int(line.foul),
                line.special,
                line.piles_won,
                line.scoops,
                int(line.home_run),
                line.at.isoformat(),
            ),
        )

    # Reading ------------------------------------------------------------------------------

    def _finished(self, row: Sequence[Any]) -> FinishedRound:
        round_id, table_id, number, outcome, base_stake, ended_at, result, receipt = row
        return FinishedRound(
            round_id,
            table_id,
            int(number),
            outcome,
            int(base_stake),
            datetime.fromisoformat(ended_at),
            RoundResult.from_dict(json.loads(result)) if result else None,
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

    def balance(self, account: str) -> int | None:
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
        order = {
            "tracking": "name",
            "rounds": "round_id",
            "round_players": "round_id, player_id",
            "journal": "txn_id",
            "legs": "txn_id, account",
            "accounts": "account",
            "open_rounds": "round_uuid",
        }
        return {
            t: [tuple(r) for r in self._query(f"SELECT * FROM {{p}}{t} ORDER BY {o}")]
            for t, o in order.items()
        }
