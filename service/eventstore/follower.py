"""Following the event log: one thread per process reads new events in order and hands them
to listeners (the deadline sweeper, live table streams, projections).

The library's SQLite recorder cannot subscribe (it raises NotImplementedError), so the follower
polls; a local save pokes it so local events are delivered at once. On PostgreSQL the same polling
serves several replicas. Notification ids can skip numbers, so it always resumes from the last id
seen, never from an assumed next one."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import structlog

from service.eventstore.eventlog import EventLogApplication, Topics

Listener = Callable[[int, Any], None]
log = structlog.get_logger(__name__)


class LogFollower:
    def __init__(
        self,
        app: EventLogApplication,
        *,
        start: int = 0,
        interval: float = 0.2,
        batch: int = 500,
        topics: Topics = None,
    ) -> None:
        self.app = app
        self.started_at = start  # where this process picked the log up (``bootstrap.start``)
        self.position = start
        self.interval = interval
        self.batch = batch
        self.topics = topics  # decode only these (or what it says); listeners get no others
        self.listeners: list[Listener] = []
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="log-follower", daemon=True)
        app.listeners.append(lambda recordings: self.poke())

    def poke(self) -> None:
        self._wake.set()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=5)

    def read_once(self) -> int:
        """Deliver every event stored after the current position; returns how many."""
        delivered = 0
        while True:
            events = self.app.events_after(self.position, self.batch, self.topics, caught=True)
            for position, event in events:
                if event is None:
                    self.position = position
                    continue
                for listener in self.listeners:
                    try:
                        listener(position, event)
                    except Exception:
                        log.exception("listener_failed", position=position)
                self.position = position
            delivered += len(events)
            if len(events) < self.batch:
                break
        return delivered

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.read_once()
            except Exception:
                log.exception("follower_read_failed")
            self._wake.wait(self.interval)
            self._wake.clear()
