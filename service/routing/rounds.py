"""The table a round belongs to, for passing ``Arrange``, ``Reveal`` and ``GetRound`` (which
name a round) to the table's owner: kept from the log as rounds are dealt (the follower's
``Round.Dealt``), else one indexed read of the round's first event."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.persistence import Recording

from domain.errors import RuleError
from domain.ids import check_id, round_uuid
from domain.round import Round
from service.application import Thirteen

KEPT = 100_000  # rounds remembered (about 200 bytes each), the most recently dealt first


class RoundTables:
    """round id → table id, the most recent ``KEPT`` rounds."""

    def __init__(self, app: Thirteen, kept: int = KEPT) -> None:
        self.app = app
        self.kept = kept
        self._tables: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

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
        with self._lock:
            return self._tables.get(round_id)

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
        with self._lock:
            self._tables[round_id] = table_id
            self._tables.move_to_end(round_id)
            while len(self._tables) > self.kept:
                self._tables.popitem(last=False)
