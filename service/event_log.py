"""The event store as the application uses it: one writer per process, every save chained for
tamper evidence (``service.chaining``), listeners told of each save, and the log read by position.
``Thirteen`` builds its commands and queries on this."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Collection
from typing import Any
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.persistence import JSONTranscoder, Mapper, Recording

from service.chaining import ChainHeads, ChainingMapper


class EventLogApplication(Application[UUID]):
    """An eventsourcing application whose saves are linked into hash chains and whose log is
    read by position (by the follower, the projector, the watch streams and the audit)."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        super().__init__(env)
        self.listeners: list[Callable[[], None]] = []
        self.writer = threading.RLock()  # see ``service.application.command``
        self.heads = ChainHeads(self, self.writer)

    def construct_mapper(self) -> Mapper[UUID]:
        transcoder = self.construct_transcoder()
        assert isinstance(transcoder, JSONTranscoder)
        return ChainingMapper(transcoder)

    def save(self, *objs: Any, **kwargs: Any) -> list[Recording[UUID]]:
        """Store every new event in one transaction, each linked to the one before it in its
        stream (``domain.chain``) as it is encoded. Heads are remembered only once stored."""
        store = functools.partial(super().save, *objs, **kwargs)
        return self.heads.save(objs, store)

    def chain_head(self, aggregate_id: UUID, version: int | None = None) -> str:
        """The chain hash of a stream's event at ``version`` (default: its last event)."""
        return self.heads.head(aggregate_id, version)

    def _notify(self, recordings: list[Recording[UUID]]) -> None:
        for listener in self.listeners:
            listener()

    def max_position(self) -> int:
        """The position of the newest stored event (0 when there is none)."""
        return self.recorder.max_notification_id() or 0

    def load(self, aggregate_id: UUID, version: int) -> Any:
        """An aggregate as it was at ``version``."""
        return self.repository.get(aggregate_id, version=version)

    def events_after(
        self, position: int, limit: int = 500, topics: Collection[str] | None = None
    ) -> list[tuple[int, Any]]:
        """Stored events after a position in the log, with their positions. With ``topics``,
        only events of those topics are decoded; the others come as ``None`` so that a reader
        still advances past them."""
        notifications = self.recorder.select_notifications(start=position + 1, limit=limit)
        return [
            (n.id, self.mapper.to_domain_event(n) if topics is None or n.topic in topics else None)
            for n in notifications
        ]
