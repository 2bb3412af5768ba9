"""The views' tables, their version, and making or dropping them. A change to a table is a new
``SCHEMA_VERSION``: there are no migrations, the views are rebuilt from the log instead."""

from __future__ import annotations

from projections.store.connections import Connections

# The tracking rows: the log position the views hold every event up to, and their version.
NAME = "views"
SCHEMA = "schema"
SCHEMA_VERSION = 5
"""Kept in the tracking table under ``schema``. Version 1 (the first release) had no such
row, no open rounds and another name for the external account; version 2 had no game recall
(``player_rounds``) and numbered a statistics line's seat among the players left at the
showdown; version 3 had no table listing (``listed_rounds``, issue 22); version 4 listed no
undealt cards (R14.2.4, issue 25). Views of an older
version are rebuilt from the log by the projector that leads (``Projector``)."""

# A table of data: one statement a table or index, long as the tables are wide.
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
    # ListRounds: every round of a table as an observer sees it (projections.listing),
    # keyset-paged on its number (the primary key serves the whole page).
    "CREATE TABLE IF NOT EXISTS {p}listed_rounds (table_id TEXT NOT NULL, "
    "number INTEGER NOT NULL, round_id TEXT NOT NULL, position BIGINT NOT NULL, "
    "listing TEXT NOT NULL, PRIMARY KEY (table_id, number))",
]
TABLES = {
    "tracking": "name",
    "rounds": "round_id",
    "round_players": "round_id, player_id",
    "journal": "txn_id",
    "legs": "txn_id, account",
    "accounts": "account",
    "open_rounds": "round_uuid",
    "player_rounds": "player_id, position",
    "listed_rounds": "table_id, number",
}
"""Every view table, with the columns that order its rows (its primary key, for ``dump``)."""


class Schema(Connections):
    """Making and dropping the views' tables, and reading their version."""

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

    def drop(self) -> None:
        with self.transaction() as cursor:
            for table in TABLES:
                cursor.execute(self._sql(f"DROP TABLE IF EXISTS {{p}}{table}"))
