"""A round's evidence as a document: what the store holds about one round (``Evidence``), its
canonical export, and an export read back for an offline audit (``from_document``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from eventsourcing.persistence import StoredEvent

from domain.tlog.chain import StoredRecord
from domain.tlog.evidence import LogEvidence

FORMAT = "thirteen-round-export/2"
"""Version 2 adds ``log``: the events' inclusion proofs against a signed checkpoint of the
transparency log (``domain.tlog.evidence``), or null when the exporter kept no log. Version 1
documents (no ``log``) are read and audited as before."""
FORMATS = ("thirteen-round-export/1", FORMAT)


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


def from_document(text: str) -> Evidence:
    """An export read back; raises ValueError when it is not one."""
    try:
        data = json.loads(text)
        if (
            isinstance(data, dict)
            and set(data) == {"document"}
            and isinstance(data["document"], str)
        ):
            # ExportRound's response as `buf curl` prints it: the export is its one field.
            data = json.loads(data["document"])
    except json.JSONDecodeError as error:
        raise ValueError(f"it is not JSON ({error})") from None
    if not isinstance(data, dict) or data.get("format") not in FORMATS:
        what = (
            "it is not a JSON object"
            if not isinstance(data, dict)
            else "it has no format"
            if "format" not in data
            else f"its format is {str(data['format'])[:60]!r}"
        )
        raise ValueError(
            f"{what}, expected {' or '.join(FORMATS)}: give the document ExportRound returns "
            "(or its whole response, as `buf curl` prints it)"
        )
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
