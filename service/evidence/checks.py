"""A round's evidence judged: its records decoded back into domain events (``Decoder``), the
links and names the domain's verifier cannot see checked here, then ``domain.audit`` on the
rest. Every finding is returned; a record too damaged to read is a finding, never a crash."""

from __future__ import annotations

import json
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
from domain.ids import round_uuid, table_uuid
from domain.results import RoundResult
from domain.tlog.chain import StoredRecord, verify_chain
from domain.wallet import Wallet
from service.evidence.document import Evidence

WALLET_MOVES = {
    get_topic(Wallet.RoundSettled): "settlement",
    get_topic(Wallet.EscapePenaltyPaid): "escape_penalty",
    get_topic(Wallet.EscapeShareReceived): "escape_share",
}


def _amount(record: StoredRecord) -> int:
    amount = int(record.state["amount"])
    return -amount if record.topic == get_topic(Wallet.EscapePenaltyPaid) else amount


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
        p: [(WALLET_MOVES[r.topic], _amount(r)) for r, _ in rs]
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
