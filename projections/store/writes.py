"""Writing the views: a batch of records as rows, with the tracking position advanced by
compare-and-set in the same transaction, so that a batch applies exactly once even if two
projectors race."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import orjson

from projections.folds import Journal, OpenRound, PlayerLine, RecallLine, Record
from projections.listing import ListedRound
from projections.store.connections import Connections
from projections.store.schema import NAME


class StaleBatch(Exception):
    """Another projector advanced the views first; reload and carry on from there."""


class Writes(Connections):
    """The projector's side of the views: their position, the running balances, a batch."""

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
                (self.UPSERT_LISTED_ROUND, rows.listed_rows()),
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
    UPSERT_LISTED_ROUND = (
        "INSERT INTO {p}listed_rounds (table_id, number, round_id, position, listing) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (table_id, number) DO UPDATE SET "
        "round_id = excluded.round_id, position = excluded.position, listing = excluded.listing"
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
            values.append(_recall_row(position, line, before, after))
        return values


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
        self.listed: dict[tuple[str, int], tuple[int, ListedRound]] = {}  # each round's last

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
        elif isinstance(record, ListedRound):
            self.listed[(record.table_id, record.number)] = (position, record)
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

    def listed_rows(self) -> list[tuple[Any, ...]]:
        """The ``listed_rounds`` rows: each round's state after its last event in the batch
        (a round dealt, arranged and revealed in one batch is encoded once)."""
        return [
            (r.table_id, r.number, r.round_id, position, orjson.dumps(r.to_dict()).decode())
            for position, r in self.listed.values()
        ]


def _recall_row(position: int, line: RecallLine, before: int, after: int) -> tuple[Any, ...]:
    """A ``player_rounds`` row, in the order of ``INSERT_PLAYER_ROUND``'s columns."""
    return (
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
