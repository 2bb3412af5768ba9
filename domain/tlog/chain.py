"""Tamper evidence: every stored event carries ``chain``, the SHA-256 of the previous event's
chain in its stream and the event's canonical bytes. Editing, deleting, inserting or reordering
an event breaks the links after it; the last link of a round is handed out as a receipt.

>>> body = canonical("s", 1, "m:E", {"a": 1})
>>> first = StoredRecord(1, "s", 1, "m:E", {"a": 1, "chain": link("", body)})
>>> verify_chain([first]) == []
True
>>> verify_chain([StoredRecord(1, "s", 1, "m:E", {"a": 2, "chain": first.chain})])[0].event
'event 1 (E, version 1 of stream s)'
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

CHAIN = "chain"


@dataclass(frozen=True)
class StoredRecord:
    """One stored event as the store holds it: its position in the log, its stream (the
    aggregate id) and version, its topic, and its state as decoded JSON."""

    position: int
    stream: str
    version: int
    topic: str
    state: Mapping[str, Any]
    raw: bytes | None = None  # the stored bytes, when read from a store (saves re-encoding)

    @property
    def chain(self) -> str:
        return str(self.state.get(CHAIN, ""))

    @property
    def name(self) -> str:
        """How a finding names this event."""
        kind = self.topic.rsplit(":", 1)[-1]
        where = f"version {self.version} of stream {self.stream}"
        return (
            f"event {self.position} ({kind}, {where})"
            if self.position > 0
            else (f"{kind} event, {where}")
        )


def canonical(stream: str, version: int, topic: str, state: Mapping[str, Any]) -> bytes:
    """The event's bytes for hashing: sorted-key compact JSON, without the chain itself."""
    body = {k: v for k, v in state.items() if k != CHAIN}
    return json.dumps(
        {"stream": stream, "version": version, "topic": topic, "state": body},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode()


def link(previous: str, body: bytes) -> str:
    return hashlib.sha256(previous.encode() + b"\n" + body).hexdigest()


@dataclass(frozen=True)
class ChainFinding:
    event: str
    message: str


def verify_chain(
    records: Iterable[StoredRecord], *, previous: str = "", first_version: int = 1
) -> list[ChainFinding]:
    """Check one stream's records in version order: consecutive versions from
    ``first_version`` and every link; each break is named by the event where it shows."""
    findings = []
    expected = first_version
    for record in records:
        if record.version != expected:
            findings.append(
                ChainFinding(
                    record.name,
                    f"expected version {expected} of the "
                    f"stream here: an event is missing or was inserted",
                )
            )
        wanted = link(
            previous, canonical(record.stream, record.version, record.topic, record.state)
        )
        if record.chain != wanted:
            findings.append(
                ChainFinding(
                    record.name,
                    "its chain hash does not match its "
                    "content and the event before it: it was edited, "
                    "inserted or moved, or the one before it was",
                )
            )
        previous = record.chain
        expected = record.version + 1
    return findings
