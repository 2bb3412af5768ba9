"""Gathering the evidence about rounds from the store, exporting it as a canonical document,
and reading a document back for an offline audit. The judging is ``domain.audit``'s."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from eventsourcing.persistence import (
    DatetimeAsISO,
    DecimalAsStr,
    JSONTranscoder,
    Mapper,
    StoredEvent,
    UUIDAsHex,
)
from eventsourcing.utils import get_topic

from domain.audit import RoundEvidence, verify_round
from domain.findings import Finding
from domain.ids import round_uuid, table_uuid, wallet_uuid
from domain.results import RoundResult
from domain.round import Round
from domain.table import Table
from domain.tlog.chain import StoredRecord, verify_chain
from domain.tlog.evidence import LogEvidence
from domain.wallet import Wallet
from service.application import Thirteen
from service.errors import NotFound

FORMAT = "thirteen-round-export/2"
"""Version 2 adds ``log``: the events' inclusion proofs against a signed checkpoint of the
transparency log (``domain.tlog.evidence``), or null when the exporter kept no log. Version 1
documents (no ``log``) are read and audited as before."""
FORMATS = ("thirteen-round-export/1", FORMAT)
_WALLET_MOVES = {
    get_topic(Wallet.RoundSettled): "settlement",
    get_topic(Wallet.EscapePenaltyPaid): "escape_penalty",
    get_topic(Wallet.EscapeShareReceived): "escape_share",
}


def _state(raw: bytes) -> dict[str, Any]:
    """The stored JSON; bytes that are not a JSON object (tampering) read as an empty state,
    which the hash chain then reports."""
    try:
        state = json.loads(raw)
    except ValueError:
        return {}
    return state if isinstance(state, dict) else {}


def record_of(position: int, stored: StoredEvent) -> StoredRecord:
    return StoredRecord(
        position,
        str(stored.originator_id),
        stored.originator_version,
        stored.topic,
        _state(stored.state),
        stored.state,
    )


def _amount(record: StoredRecord) -> int:
    amount = int(record.state["amount"])
    return -amount if record.topic == get_topic(Wallet.EscapePenaltyPaid) else amount


@dataclass
class Evidence:
    """What the store holds about one round, as records (decoded on demand)."""

    round_id: str
    table_id: str
    round_records: list[StoredRecord]
    table_opened: StoredRecord | None  # None when the store no longer has it
    wallet_records: dict[str, list[tuple[StoredRecord, str]]] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    receipt: str = ""
    table_ended: bool | None = None  # whether the table recorded the round's end
    links_checked: bool = False  # the wallet and table chains were verified whole already
    log: LogEvidence | None = None  # where its events are in the signed transparency log

    def records(self) -> list[StoredRecord]:
        """Every event of the document: the round's, the table's opening, the wallets'."""
        found = list(self.round_records)
        found += [self.table_opened] if self.table_opened else []
        return found + [r for moves in self.wallet_records.values() for r, _ in moves]

    def document(self) -> str:
        """The export: canonical JSON (sorted keys, compact) of every event of the round, the
        table's opening (with its ruleset) and the wallet movements, each with its chain, and
        where they are in the transparency log."""
        return json.dumps(
            {
                "format": FORMAT,
                "round_id": self.round_id,
                "table_id": self.table_id,
                "round_events": [_record_json(r) for r in self.round_records],
                "table_opened": _record_json(self.table_opened) if self.table_opened else None,
                "wallet_events": {
                    p: [{**_record_json(r), "previous_chain": prev} for r, prev in rs]
                    for p, rs in self.wallet_records.items()
                },
                "result": self.result,
                "receipt": self.receipt,
                "log": self.log.to_json() if self.log else None,
            },
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )


def _record_json(record: StoredRecord) -> dict[str, Any]:
    return {
        "position": record.position,
        "stream": record.stream,
        "version": record.version,
        "topic": record.topic,
        "state": record.state,
    }


def _record_from_json(data: Mapping[str, Any]) -> StoredRecord:
    return StoredRecord(
        int(data["position"]),
        str(data["stream"]),
        int(data["version"]),
        str(data["topic"]),
        dict(data["state"]),
    )


class Decoder:
    """Turns stored records back into domain events with the application's transcodings."""

    def __init__(self) -> None:
        transcoder = JSONTranscoder()
        for transcoding in (UUIDAsHex(), DecimalAsStr(), DatetimeAsISO()):  # as the app's
            transcoder.register(transcoding)
        self.mapper: Mapper[UUID] = Mapper(transcoder=transcoder)
        self._rulesets: dict[tuple[str, str], dict[str, Any]] = {}

    def event(self, record: StoredRecord) -> Any:
        """The domain event; from the stored bytes when the record came from a store."""
        state = record.raw if record.raw is not None else json.dumps(dict(record.state)).encode()
        stored = StoredEvent(
            originator_id=UUID(record.stream),
            originator_version=record.version,
            topic=record.topic,
            state=state,
        )
        return self.mapper.to_domain_event(stored)

    def ruleset_of(self, opened: StoredRecord) -> dict[str, Any]:
        """A table's ruleset from its opening event (decoded once per table)."""
        key = (opened.stream, opened.chain)
        if key not in self._rulesets:
            self._rulesets[key] = dict(self.event(opened).ruleset)
        return self._rulesets[key]


def _named_rightly(evidence: Evidence) -> list[Finding]:
    """An export relabelled as another round (its ``round_id`` and ``table_id`` edited, every
    event and proof untouched) must not audit as that round: the ids are bound to the events."""
    found = []
    stream = str(round_uuid(evidence.round_id))
    wrong = [r for r in evidence.round_records if r.stream != stream]
    dealt = evidence.round_records[0].state if evidence.round_records else {}
    if wrong or dealt.get("round_id", evidence.round_id) != evidence.round_id:
        found.append(
            Finding(
                "RECORD",
                False,
                f"the events are not those of round {evidence.round_id}: they belong to stream "
                f"{(wrong[0] if wrong else evidence.round_records[0]).stream}",
            )
        )
    table = evidence.table_opened
    if dealt.get("table_id", evidence.table_id) != evidence.table_id or (
        table is not None and table.stream != str(table_uuid(evidence.table_id))
    ):
        found.append(
            Finding(
                "RECORD",
                False,
                f"the round and its table's opening are not of table {evidence.table_id}",
            )
        )
    return found


def evidence_to_check(evidence: Evidence, decoder: Decoder) -> tuple[RoundEvidence, list[Finding]]:
    """The domain's evidence, plus findings about the wallet and table links themselves and about
    whether the records are the round and table the evidence names."""
    extra = _named_rightly(evidence)
    for records in [] if evidence.links_checked else evidence.wallet_records.values():
        for record, previous in records:
            for broken in verify_chain([record], previous=previous, first_version=record.version):
                extra.append(Finding("CHAIN", False, broken.message, broken.event))
    table_ruleset: dict[str, Any] = {}
    if evidence.table_opened is None:
        extra.append(
            Finding(
                "R13",
                False,
                f"the opening event of table {evidence.table_id} "
                "is missing, so its ruleset cannot be compared",
            )
        )
    else:
        if not evidence.links_checked:
            for broken in verify_chain([evidence.table_opened]):
                extra.append(Finding("CHAIN", False, broken.message, broken.event))
        table_ruleset = decoder.ruleset_of(evidence.table_opened)
    moves = {
        p: [(_WALLET_MOVES[r.topic], _amount(r)) for r, _ in rs]
        for p, rs in evidence.wallet_records.items()
    }
    view = RoundResult.from_dict(evidence.result) if evidence.result else None
    return RoundEvidence(
        round_id=evidence.round_id,
        records=evidence.round_records,
        events=[decoder.event(r) for r in evidence.round_records],
        table_ruleset=table_ruleset,
        wallet_moves=moves,
        view=view,
        receipt=evidence.receipt,
        table_ended=evidence.table_ended,
    ), extra


def audit(evidence: Evidence, decoder: Decoder) -> list[Finding]:
    """Every finding about the round. A record too damaged to be read as events is itself a
    failed finding, never a crash."""
    try:
        checked, extra = evidence_to_check(evidence, decoder)
        return verify_round(checked) + extra
    except Exception as error:  # tampered data can be anything at all
        return [
            Finding(
                "RECORD",
                False,
                f"the round's record cannot be read as events: {type(error).__name__}: {error}",
            )
        ]


def from_document(text: str) -> Evidence:
    """An export read back; raises ValueError when it is not one."""
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("format") not in FORMATS:
        raise ValueError(f"not a round export (expected format {' or '.join(FORMATS)})")
    return Evidence(
        round_id=str(data["round_id"]),
        table_id=str(data["table_id"]),
        round_records=[_record_from_json(r) for r in data["round_events"]],
        table_opened=_record_from_json(data["table_opened"]) if data["table_opened"] else None,
        wallet_records={
            p: [(_record_from_json(r), str(r["previous_chain"])) for r in rs]
            for p, rs in data["wallet_events"].items()
        },
        result=data.get("result"),
        receipt=str(data.get("receipt") or ""),
        log=LogEvidence.from_json(data["log"]) if data.get("log") else None,
    )


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
                        "the stream's events are stored out of "
                        "order: versions do not follow the log",
                        moved.name,
                    )
                )
            streams[stream] = records
            if records[0].topic.startswith(round_topic):
                rounds[stream] = records  # its chain is checked with the round
                continue
            for broken in verify_chain(records):
                others.append(Finding("CHAIN", False, broken.message, broken.event))
        opened: dict[str, StoredRecord] = {}
        started: dict[str, str] = {}  # round id → table id
        ended: set[str] = set()
        moves: dict[str, dict[str, list[tuple[StoredRecord, str]]]] = defaultdict(dict)
        for records in streams.values():
            first = records[0]
            if first.topic == get_topic(Table.Opened):
                opened[first.stream] = first
                table_id = str(first.state.get("table_id", ""))
                for record in records:
                    if record.topic == get_topic(Table.RoundStarted):
                        started[str(record.state.get("round_id"))] = table_id
                    elif record.topic == get_topic(Table.RoundEnded):
                        ended.add(str(record.state.get("round_id")))
            elif first.topic == get_topic(Wallet.Opened):
                player, previous = str(first.state.get("player_id", "")), ""
                for record in records:
                    if record.topic in _WALLET_MOVES:
                        moves[str(record.state.get("round_id"))].setdefault(player, []).append(
                            (record, previous)
                        )
                    previous = record.chain
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
        if record.topic in _WALLET_MOVES and record.state.get("round_id") == round_id:
            found.append((record, previous))
        previous = record.chain
    return found
