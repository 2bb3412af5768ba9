"""The views' tables: a SQLite file of their own beside the event store, or tables prefixed
``thirteen_view_`` in the service's PostgreSQL schema.

Each batch of view changes is written in one transaction together with the tracking position,
advanced by compare-and-set: a batch applies exactly once even if two projectors race.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

from domain.results import RoundResult
from domain.rules.limits import MAX_POSITION
from projections.folds import Journal, OpenRound, PlayerLine, RecallLine, Record

NAME = "views"
SCHEMA = "schema"
HEAD = "head"  # not a row: the log's newest position, read beside the rows (``Tracking.head``)
SCHEMA_VERSION = 3
"""Kept in the tracking table under ``schema``. Version 1 (the first release) had no such
row, no open rounds and another name for the external account; version 2 had no game recall
(``player_rounds``) and numbered a statistics line's seat among the players left at the
showdown. Views of an older version are rebuilt from the log by the projector that leads
(``Projector``)."""


T = TypeVar("T")


class ViewsMissing(Exception):
    """A read found a view table missing: another process is rebuilding the views (it drops
    them before it replays the log), or they were left by a version without that table."""


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
    # Game recall: a player's rounds newest first, keyset-paged on the position of the event
    # that ended each (the primary key serves the whole page).
    "CREATE TABLE IF NOT EXISTS {p}player_rounds (player_id TEXT NOT NULL, "
    "position BIGINT NOT NULL, round_id TEXT NOT NULL, table_id TEXT NOT NULL, "
    "number INTEGER NOT NULL, seat INTEGER NOT NULL, outcome TEXT NOT NULL, "
    "base_stake BIGINT NOT NULL, dealt_at TEXT NOT NULL, ended_at TEXT NOT NULL, "
    "cards TEXT NOT NULL, front TEXT NOT NULL, middle TEXT NOT NULL, back TEXT NOT NULL, "
    "special TEXT NOT NULL, foul INTEGER NOT NULL, foul_reason TEXT NOT NULL, "
    "escaped INTEGER NOT NULL, points BIGINT NOT NULL, coins BIGINT NOT NULL, "
    "balance_before BIGINT NOT NULL, balance_after BIGINT NOT NULL, "
    "PRIMARY KEY (player_id, position))",
    # A round's coin movements, for the balances around it in player_rounds.
    "CREATE INDEX IF NOT EXISTS {p}journal_by_round ON {p}journal (round_id)",
]
_TABLES = [
    "tracking",
    "rounds",
    "round_players",
    "journal",
    "legs",
    "accounts",
    "open_rounds",
    "player_rounds",
]


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


class ViewStore:
    """The views on SQLite (``path``) or PostgreSQL (``postgres`` connection settings)."""

    def __init__(
        self,
        *,
        path: Path | None = None,
        postgres: dict[str, str] | None = None,
        log_head: str = "",
        log_file: Path | None = None,
    ) -> None:
        """``log_head``: a query of the event log's newest position, which every snapshot
        (``as_of``) runs with the tracking rows (``Tracking.head``). ``log_file``: a SQLite
        log's file, attached as ``log`` to the connections that read snapshots, and only to
        those: a write transaction would lock every attached file, the log's too."""
        if (path is None) == (postgres is None):
            raise ValueError("give exactly one of path or postgres")
        self.path = path
        self.postgres = postgres
        self.log_file = log_file
        self.prefix = "thirteen_view_" if postgres else "view_"
        self.reads_head = bool(log_head)
        self._status = (
            f"SELECT name, position FROM {self.prefix}tracking WHERE name IN ('{NAME}', '{SCHEMA}')"
        )
        if log_head:
            self._status += f" UNION ALL SELECT '{HEAD}', ({log_head})"
        self._local = threading.local()  # one connection per thread (and a reader, on SQLite)
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

    def _reader(self) -> Any:
        """The connection of this thread's snapshots: on SQLite with the log attached, one of
        its own that never writes; else the thread's connection."""
        if self.path is None or self.log_file is None:
            return self._connect()
        conn = getattr(self._local, "reader", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path, timeout=30, check_same_thread=False, isolation_level=None
            )
            conn.execute("ATTACH DATABASE ? AS log", (str(self.log_file),))
            self._local.reader = conn
            with self._lock:
                self._all.append(conn)
        return conn

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
        (a write is not: the projector's compare-and-set makes its own retry safe), unless it
        is part of a snapshot (``as_of`` then runs the whole snapshot again)."""
        snapshot = getattr(self._local, "snapshot", None)
        for attempt in (1, 2):
            cursor = (self._connect() if snapshot is None else snapshot).cursor()
            try:
                cursor.execute(self._sql(statement), params)
                return list(cursor.fetchall())
            except Exception as error:
                if _missing_table(error):
                    raise ViewsMissing(str(error)) from error
                if attempt == 2 or snapshot is not None or not self._cut():
                    raise
        raise AssertionError("unreachable")

    def as_of(self, read: Callable[[Tracking], T]) -> T:
        """``read(tracking)`` in one snapshot of the views that begins with their tracking
        rows, so that whatever ``read`` reads is the state those rows describe. A rebuild drops
        ``tracking`` first: on PostgreSQL it waits for this snapshot to end before it can; on
        SQLite the snapshot keeps the state it began with. A session that was cut is replaced
        and the whole snapshot read again, once."""
        for attempt in (1, 2):
            try:
                return self._as_of(read)
            except Exception:
                if attempt == 2 or not self._cut():
                    raise
        raise AssertionError("unreachable")

    def _as_of(self, read: Callable[[Tracking], T]) -> T:
        """A read-only transaction (PostgreSQL: repeatable read, so that every statement sees
        the state of the first) whose first statement reads the tracking rows and the log's
        head; every read of this thread until its end is part of it."""
        conn = self._reader()
        conn.execute(
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" if self.postgres else "BEGIN"
        )
        self._local.snapshot = conn
        try:
            status = {name: int(position) for name, position in self._query(self._status)}
            result = read(Tracking(status.get(SCHEMA, 1), status.get(NAME, 0), status.get(HEAD)))
        except BaseException:
            with suppress(Exception):  # a cut session has no transaction left to end
                conn.execute("ROLLBACK")
            raise
        else:
            conn.execute("COMMIT")
            return result
        finally:
            self._local.snapshot = None

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
        earlier version keep theirs, so that the leading projector rebuilds them.

        On PostgreSQL a replica starting while another's projector writes would take the
        tables' share locks (``CREATE INDEX IF NOT EXISTS`` takes one even when the index
        exists) in another order than that write takes them: a deadlock, and the starting
        replica failed. Every write begins with the tracking row, so the tracking table is
        locked first: the write under way ends before, the next waits until after."""
        with self.transaction() as cursor:
            for statement in _SCHEMA:
                cursor.execute(self._sql(statement))
                if self.postgres and statement is _SCHEMA[0]:
                    cursor.execute(self._sql("LOCK TABLE {p}tracking IN SHARE ROW EXCLUSIVE MODE"))
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
        ``end`` in one transaction; ``balances`` are the running balances, updated here (also
        when the write fails: pass a copy).

        The records are gathered into rows first, then written table by table, each table's
        rows in one statement (``executemany``: on PostgreSQL one round trip, not one a row).
        The order that matters is kept: a recall line's balance without legs is the running
        balance at its turn in the batch, and its legs are read after the batch's legs are
        written."""
        rows = _Rows(balances)
        for position, record in batch:
            rows.add(position, record)
        sql = self._sql
        with self.transaction() as cursor:
            cursor.execute(
                sql("UPDATE {p}tracking SET position = ? WHERE name = ? AND position = ?"),
                (end, NAME, start),
            )
            if cursor.rowcount != 1:
                raise StaleBatch(f"views are no longer at position {start}")
            for statement, values in (
                (self.INSERT_JOURNAL, rows.journal),
                (self.INSERT_LEG, rows.legs),
                (self.INSERT_OPEN_ROUND, rows.opened),
                (self.DELETE_OPEN_ROUND, rows.closed),
                (self.INSERT_ROUND, rows.rounds),
                (self.INSERT_ROUND_PLAYER, rows.round_players),
                (self.UPSERT_ACCOUNT, [(a, balances[a], balances[a]) for a in rows.changed]),
            ):
                if values:
                    cursor.executemany(sql(statement), values)
            recalled = self._recall(cursor, rows.recall)  # the legs are written: read them
            if recalled:
                cursor.executemany(sql(self.INSERT_PLAYER_ROUND), recalled)

    INSERT_JOURNAL = (
        "INSERT INTO {p}journal (txn_id, kind, round_id, transfer_id, at) VALUES (?, ?, ?, ?, ?)"
    )
    INSERT_LEG = "INSERT INTO {p}legs (txn_id, account, amount, balance_after) VALUES (?, ?, ?, ?)"
    INSERT_OPEN_ROUND = (
        "INSERT INTO {p}open_rounds (round_uuid, round_id, deadline) VALUES (?, ?, ?) "
        "ON CONFLICT (round_uuid) DO NOTHING"
    )
    DELETE_OPEN_ROUND = "DELETE FROM {p}open_rounds WHERE round_id = ?"
    INSERT_ROUND = (
        "INSERT INTO {p}rounds (round_id, table_id, number, outcome, base_stake, ruleset, "
        "dealt_at, ended_at, server_seed, result, receipt, position) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    INSERT_ROUND_PLAYER = (
        "INSERT INTO {p}round_players (round_id, player_id, table_id, seat, points, coins, "
        "foul, special, piles_won, scoops, home_run, at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    INSERT_PLAYER_ROUND = (
        "INSERT INTO {p}player_rounds (player_id, position, round_id, table_id, number, seat, "
        "outcome, base_stake, dealt_at, ended_at, cards, front, middle, back, special, foul, "
        "foul_reason, escaped, points, coins, balance_before, balance_after) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    UPSERT_ACCOUNT = (
        "INSERT INTO {p}accounts (account, balance) VALUES (?, ?) "
        "ON CONFLICT (account) DO UPDATE SET balance = ?"
    )
    ROUND_LEGS = (
        "SELECT account, amount, balance_after FROM {p}legs WHERE txn_id IN "
        "(SELECT txn_id FROM {p}journal WHERE round_id = ?) ORDER BY txn_id"
    )
    """Every leg of one round: the round's few journal entries by their index, then their legs
    by the legs' transaction index (a join may instead walk every leg of a player, which grows
    with time)."""

    def _recall(
        self, cursor: Any, lines: list[tuple[int, RecallLine, int]]
    ) -> list[tuple[Any, ...]]:
        """The ``player_rounds`` rows of ``lines`` (each with its position and the player's
        running balance at its turn), each with the player's balance just before the round's
        first coin movement and just after its last (R9, R11), read from the legs already
        written in this transaction (one query a round); with none, that running balance.
        Reading every leg of the batch is reading those before each line: a round's legs all
        come before its recall lines (the settlement first, and the round is over after)."""
        legs: dict[str, dict[str, list[tuple[int, int]]]] = {}
        for round_id in dict.fromkeys(line.round_id for _, line, _ in lines):
            cursor.execute(self._sql(self.ROUND_LEGS), (round_id,))
            of_round = legs[round_id] = {}
            for account, amount, balance_after in cursor.fetchall():
                of_round.setdefault(account, []).append((int(amount), int(balance_after)))
        values = []
        for position, line, running in lines:
            mine = legs[line.round_id].get(line.player_id)
            if mine:
                before, after = mine[0][1] - mine[0][0], mine[-1][1]
            else:
                before = after = running
            values.append(
                (
                    line.player_id,
                    position,
                    line.round_id,
                    line.table_id,
                    line.number,
                    line.seat,
                    line.outcome,
                    line.base_stake,
                    line.dealt_at.isoformat(),
                    line.ended_at.isoformat(),
                    json.dumps(line.cards),
                    json.dumps(line.front),
                    json.dumps(line.middle),
                    json.dumps(line.back),
                    line.special,
                    int(line.foul),
                    line.foul_reason,
                    int(line.escaped),
                    line.points,
                    line.coins,
                    before,
                    after,
                )
            )
        return values

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
        order = {
            "tracking": "name",
            "rounds": "round_id",
            "round_players": "round_id, player_id",
            "journal": "txn_id",
            "legs": "txn_id, account",
            "accounts": "account",
            "open_rounds": "round_uuid",
            "player_rounds": "player_id, position",
        }
        return {
            t: [tuple(r) for r in self._query(f"SELECT * FROM {{p}}{t} ORDER BY {o}")]
            for t, o in order.items()
        }


def _missing_table(error: Exception) -> bool:
    """SQLite's "no such table", or PostgreSQL's undefined_table (SQLSTATE 42P01)."""
    if isinstance(error, sqlite3.OperationalError):
        return str(error).startswith("no such table")
    return getattr(error, "sqlstate", None) == "42P01"


def _player_round(player_id: str, row: Sequence[Any]) -> PlayerRound:
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
        cards=tuple(json.loads(cards)),
        front=tuple(json.loads(front)),
        middle=tuple(json.loads(middle)),
        back=tuple(json.loads(back)),
        special=special,
        foul=bool(foul),
        foul_reason=reason,
        escaped=bool(escaped),
        points=int(points),
        coins=int(coins),
    )
    return PlayerRound(int(position), line, int(row[19]), int(row[20]))


class _Rows:
    """A batch of records as the rows of each view table, in record order; ``balances`` (the
    running balances) move on with each leg."""

    def __init__(self, balances: dict[str, int]) -> None:
        self.balances = balances
        self.changed: dict[str, None] = {}  # accounts whose balance moved, in order
        self.journal: list[tuple[Any, ...]] = []
        self.legs: list[tuple[Any, ...]] = []
        self.opened: list[tuple[Any, ...]] = []
        self.closed: list[tuple[Any, ...]] = []
        self.rounds: list[tuple[Any, ...]] = []
        self.round_players: list[tuple[Any, ...]] = []
        self.recall: list[tuple[int, RecallLine, int]] = []

    def add(self, position: int, record: Record) -> None:
        if isinstance(record, Journal):
            self.journal.append(
                (position, record.kind, record.round_id, record.transfer_id, record.at.isoformat())
            )
            for leg in record.legs:
                balance = self.balances[leg.account] = (
                    self.balances.get(leg.account, 0) + leg.amount
                )
                self.changed[leg.account] = None
                self.legs.append((position, leg.account, leg.amount, balance))
        elif isinstance(record, RecallLine):
            self.recall.append((position, record, self.balances.get(record.player_id, 0)))
        elif isinstance(record, OpenRound):
            self.opened.append(
                (str(record.round_uuid), record.round_id, record.deadline.isoformat())
            )
        else:
            self.closed.append((record.round_id,))
            self.rounds.append(
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
                    json.dumps(record.result.to_dict()) if record.result else None,
                    record.receipt,
                    position,
                )
            )
            self.round_players.extend(_player_line(line) for line in record.players)


def _player_line(line: PlayerLine) -> tuple[Any, ...]:
    return (
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
    )
