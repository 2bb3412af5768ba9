"""The table a round belongs to, for passing ``Arrange``, ``Reveal`` and ``GetRound`` (which
name a round) to the table's owner: kept from the log as rounds are dealt (the follower's
``Round.Dealt``), else one indexed read of the round's first event."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.persistence import Recording

from domain.errors import RuleError
from domain.ids import check_id, round_uuid
from domain.round import Round
from service.application import Thirteen
from service.bounded import Bounded

KEPT = 100_000  # rounds remembered, at most, the most recently dealt first
KEPT_BYTES = 16 * 2**20  # and what they weigh together (about 300 bytes with short table ids)
ENTRY_BYTES = 250  # what an entry holds besides its ids' characters (a round id is a UUID's 36)


class RoundTables:
    """round id → table id, the most recent ``KEPT`` rounds weighing at most ``KEPT_BYTES``
    (a table id may be 128 characters long)."""

    def __init__(self, app: Thirteen, kept: int = KEPT, kept_bytes: int = KEPT_BYTES) -> None:
        self.app = app
        self._tables: Bounded[str, str] = Bounded(kept, kept_bytes, _weight)

    def on_event(self, position: int, event: Any) -> None:
        """The log follower's listener: remember each dealt round's table (another replica's
        rounds; this one's are known as they commit)."""
        if isinstance(event, Round.Dealt):
            self._remember(event.round_id, event.table_id)

    def on_commit(self, recordings: Sequence[Recording[UUID]]) -> None:
        """The application's listener, told of this process's commits before their callers
        are answered: a round dealt here is known before its first ``Arrange`` arrives."""
        for recording in recordings:
            self.on_event(0, recording.domain_event)

    def known(self, round_id: str) -> str | None:
        """The table of ``round_id`` if it is remembered (no read)."""
        try:
            return self._tables.get(round_id)
        except KeyError:
            return None

    def table_of(self, round_id: str) -> str | None:
        """The table of ``round_id``; None for a round that was not dealt (or an id that is
        not one). Blocking: one indexed read when the round is not remembered."""
        found = self.known(round_id)
        if found is not None:
            return found
        try:
            check_id(round_id, "round_id")
        except RuleError:
            return None
        first = self.app.recorder.select_events(round_uuid(round_id), limit=1)
        if not first:
            return None
        dealt = self.app.mapper.to_domain_event(first[0])
        if not isinstance(dealt, Round.Dealt):
            return None
        self._remember(dealt.round_id, dealt.table_id)
        return str(dealt.table_id)

    def _remember(self, round_id: str, table_id: str) -> None:
        self._tables.put(round_id, table_id)


def _weight(table_id: str) -> int:
    return ENTRY_BYTES + 36 + len(table_id)
