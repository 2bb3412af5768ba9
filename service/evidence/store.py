"""A round's evidence gathered from a live store: one round at a time, or the whole log in one
pass for ``thirteen audit --all``."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from uuid import UUID

from eventsourcing.utils import get_topic

from domain.findings import Finding
from domain.ids import round_uuid, table_uuid, wallet_uuid
from domain.round import Round
from domain.table import Table
from domain.tlog.chain import StoredRecord, verify_chain
from domain.wallet import Wallet
from service.application import Thirteen
from service.errors import NotFound
from service.evidence.checks import WALLET_MOVES
from service.evidence.document import Evidence, record_of


class StoreReader:
    """Evidence from a live store, one round at a time (``evidence``) or the whole log in
    one pass (``every_round``)."""

    def __init__(self, app: Thirteen, result_of: Callable[[str], dict[str, Any] | None]) -> None:
        self.app = app
        self.result_of = result_of

    def _stream(self, stream: UUID) -> list[StoredRecord]:
        # Positions are not known per stream here; 0 marks "read by stream".
        return [record_of(0, s) for s in self.app.recorder.select_events(stream)]

    def evidence(self, round_id: str) -> Evidence:
        records = self._stream(round_uuid(round_id))
        if not records:
            raise NotFound(f"round {round_id!r} does not exist")
        table_id = str(records[0].state.get("table_id", ""))
        table = self._stream(table_uuid(table_id))
        players = list(records[0].state.get("players", []))
        wallets: dict[str, list[tuple[StoredRecord, str]]] = {}
        for player in players:
            stream = self._stream(wallet_uuid(player))
            wallets[player] = _moves_for(stream, round_id)
        opened = table[0] if table and table[0].topic == get_topic(Table.Opened) else None
        return Evidence(
            round_id,
            table_id,
            records,
            opened,
            wallets,
            self.result_of(round_id),
            table_ended=_table_ended(table, round_id),
        )

    def every_round(
        self,
        progress: Callable[[int, int], None] | None = None,
        each: Callable[[StoredRecord], None] | None = None,
    ) -> Iterator[tuple[Evidence | None, list[Finding]]]:
        """One pass over the log: every stream's chain is checked, then every round's
        evidence is yielded (with findings about streams that belong to no round first);
        ``each`` is handed every record in log order as it is read (the transparency log's
        leaves are recomputed from them)."""
        last = self.app.max_position()
        streams: dict[str, list[StoredRecord]] = defaultdict(list)
        position = 0
        while True:
            batch = self.app.recorder.select_notifications(start=position + 1, limit=5000)
            if not batch:
                break
            for n in batch:
                record = record_of(n.id, n)
                streams[record.stream].append(record)
                if each is not None:
                    each(record)
            position = batch[-1].id
            if progress:
                progress(position, last)
        yield from self._judge_streams(streams)

    def _judge_streams(
        self, streams: dict[str, list[StoredRecord]]
    ) -> Iterator[tuple[Evidence | None, list[Finding]]]:
        rounds, others = _chains(streams)
        links = _Links(streams)
        opened, started, ended, moves = links.opened, links.started, links.ended, links.moves
        yield None, others
        seen: set[str] = set()
        for stream, records in rounds.items():
            dealt = records[0].state
            round_id = str(dealt.get("round_id") or _round_id_of(stream, started))
            table_id = str(dealt.get("table_id") or started.get(round_id, ""))
            seen.add(round_id)
            yield (
                Evidence(
                    round_id,
                    table_id,
                    records,
                    opened.get(str(table_uuid(table_id))),
                    {p: moves[round_id].get(p, []) for p in dealt.get("players", moves[round_id])},
                    self.result_of(round_id),
                    table_ended=(round_id in ended) if round_id in started else None,
                    links_checked=True,
                ),
                [],
            )
        lost = [(r, t) for r, t in started.items() if r not in seen]
        lost += [(r, "") for r in moves if r not in seen and r not in started]
        if lost:
            yield (
                None,
                [
                    Finding(
                        "R10.1",
                        False,
                        f"round {r} is named by the "
                        f"{'table ' + t if t else 'wallets'} but has no events of its "
                        "own: they were deleted",
                    )
                    for r, t in lost
                ],
            )


def _chains(
    streams: dict[str, list[StoredRecord]],
) -> tuple[dict[str, list[StoredRecord]], list[Finding]]:
    """Each stream put in version order (a finding where the log stored it otherwise), and every
    chain but the rounds' checked: the rounds' streams, for their own audit, and the findings."""
    round_topic = get_topic(Round.Dealt).rsplit(".", 1)[0] + "."  # "domain.round:Round."
    rounds: dict[str, list[StoredRecord]] = {}
    others: list[Finding] = []
    for stream, in_log_order in streams.items():
        records = sorted(in_log_order, key=lambda r: r.version)
        if records != in_log_order:
            moved = next(r for r, o in zip(records, in_log_order, strict=True) if r is not o)
            others.append(
                Finding(
                    "CHAIN",
                    False,
                    "the stream's events are stored out of order: versions do not follow the log",
                    moved.name,
                )
            )
        streams[stream] = records
        if records[0].topic.startswith(round_topic):
            rounds[stream] = records  # its chain is checked with the round
            continue
        for broken in verify_chain(records):
            others.append(Finding("CHAIN", False, broken.message, broken.event))
    return rounds, others


class _Links:
    """What the tables and wallets say of the rounds: each table's opening, which table started
    each round and which ended, and each round's wallet moves by player (with the chain before
    each move)."""

    def __init__(self, streams: dict[str, list[StoredRecord]]) -> None:
        self.opened: dict[str, StoredRecord] = {}
        self.started: dict[str, str] = {}  # round id → table id
        self.ended: set[str] = set()
        self.moves: dict[str, dict[str, list[tuple[StoredRecord, str]]]] = defaultdict(dict)
        for records in streams.values():
            first = records[0]
            if first.topic == get_topic(Table.Opened):
                self.opened[first.stream] = first
                table_id = str(first.state.get("table_id", ""))
                for record in records:
                    if record.topic == get_topic(Table.RoundStarted):
                        self.started[str(record.state.get("round_id"))] = table_id
                    elif record.topic == get_topic(Table.RoundEnded):
                        self.ended.add(str(record.state.get("round_id")))
            elif first.topic == get_topic(Wallet.Opened):
                player, previous = str(first.state.get("player_id", "")), ""
                for record in records:
                    if record.topic in WALLET_MOVES:
                        self.moves[str(record.state.get("round_id"))].setdefault(player, []).append(
                            (record, previous)
                        )
                    previous = record.chain


def _round_id_of(stream: str, started: Mapping[str, str]) -> str:
    """A round whose deal event is gone: find its id among the rounds the tables started."""
    for round_id in started:
        if str(round_uuid(round_id)) == stream:
            return round_id
    return stream


def _table_ended(table: list[StoredRecord], round_id: str) -> bool | None:
    """Whether the table's stream ends this round (None: it never started it there)."""
    started = ended = False
    for record in table:
        if record.state.get("round_id") == round_id:
            started = started or record.topic == get_topic(Table.RoundStarted)
            ended = ended or record.topic == get_topic(Table.RoundEnded)
    return ended if started else None


def _moves_for(stream: list[StoredRecord], round_id: str) -> list[tuple[StoredRecord, str]]:
    found = []
    previous = ""
    for record in stream:
        if record.topic in WALLET_MOVES and record.state.get("round_id") == round_id:
            found.append((record, previous))
        previous = record.chain
    return found
