"""R10.3: reveal rounds whose deadline has passed, so a silent client cannot stall a table.
Missing or foul arrangements are then fouls (R4.3)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import datetime
from typing import Any
from uuid import UUID

import structlog

from domain.errors import RuleError
from domain.round import Round
from projections.folds import OpenRound
from service.application import Thirteen
from service.caller import SWEEPER, acting_as

log = structlog.get_logger(__name__)


class DeadlineSweeper:
    """Keeps the open rounds from the log (every replica's) and reveals the overdue ones."""

    def __init__(self, app: Thirteen, *, interval: float = 0.25) -> None:
        self.app = app
        self.interval = interval
        self.open: dict[UUID, tuple[str, datetime]] = {}  # round aggregate id → id, deadline
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="deadline-sweeper", daemon=True)

    def resume(self, rounds: Iterable[OpenRound]) -> None:
        """Start from the rounds the views knew open (so start-up needs no full log read)."""
        with self._lock:
            for found in rounds:
                self.open[found.round_uuid] = (found.round_id, found.deadline)

    def on_event(self, position: int, event: Any) -> None:
        with self._lock:
            if isinstance(event, Round.Dealt):
                self.open[event.originator_id] = (event.round_id, event.deadline)
            elif isinstance(event, Round.Revealed | Round.Abandoned):
                self.open.pop(event.originator_id, None)

    def sweep(self) -> list[str]:
        """Reveal every open round past its deadline; returns the rounds revealed."""
        now = self.app.clock.now()
        with self._lock:
            due = [r for r, deadline in self.open.values() if deadline <= now]
        revealed = []
        for round_id in self.app.overdue(due):
            try:
                with acting_as(SWEEPER):  # recorded as the sweeper's reveal
                    self.app.reveal(round_id)
                revealed.append(round_id)
                log.info("round_revealed_at_deadline", round_id=round_id)
            except RuleError as error:  # another replica or caller was first
                log.info("deadline_reveal_skipped", round_id=round_id, reason=error.message)
        return revealed

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sweep()
            except Exception:
                log.exception("sweep_failed")
