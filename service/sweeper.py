"""R10.3: reveal rounds whose deadline has passed, so a silent client cannot stall a table.
Missing or foul arrangements are then fouls (R4.3)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any
from uuid import UUID

import structlog
from eventsourcing.utils import get_topic

from domain.errors import RuleError
from domain.round import Round
from projections.folds import OpenRound
from service.application import Thirteen
from service.caller import SWEEPER, acting_as

log = structlog.get_logger(__name__)

SWEEPER_TOPICS = frozenset(get_topic(c) for c in (Round.Dealt, Round.Revealed, Round.Abandoned))
"""The events ``on_event`` reads: a round dealt, and its end."""
OWNER_GRACE_SECONDS = 10.0  # past its deadline by this, any replica reveals a round
FIRST_RETRY_SECONDS = 1.0  # the pause before trying a refused reveal again, doubling …
MAX_RETRY_SECONDS = 300.0  # … up to this


class DeadlineSweeper:
    """Keeps the open rounds from the log (every replica's) and reveals the overdue ones: with
    replicas (``service.routing``), those of the tables ``owns`` says are this replica's, and
    any round ``OWNER_GRACE_SECONDS`` past its deadline, whose owner is late or gone. Two
    replicas revealing one round are safe: the store takes the first reveal only."""

    def __init__(
        self,
        app: Thirteen,
        *,
        interval: float = 0.25,
        owns: Callable[[str], bool] | None = None,
        table_of: Callable[[str], str | None] | None = None,
    ) -> None:
        self.app = app
        self.interval = interval
        self.owns = owns
        self.table_of = table_of
        self.open: dict[UUID, tuple[str, datetime]] = {}  # round aggregate id → id, deadline
        # A reveal the rules refused (its seed key is missing, say) is tried again after a
        # doubling pause, not at every sweep: round id → (monotonic time, pause).
        self._refused: dict[str, tuple[float, float]] = {}
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
                ended = self.open.pop(event.originator_id, None)
                if ended is not None:
                    self._refused.pop(ended[0], None)

    def sweep(self) -> list[str]:
        """Reveal every open round past its deadline; returns the rounds revealed."""
        now = self.app.clock.now()
        with self._lock:
            due = [r for r, deadline in self.open.values() if deadline <= now]
            late = {r for r, deadline in self.open.values() if self._late(deadline, now)}
        if self.owns is not None:
            due = [r for r in due if r in late or self._mine(r)]
        revealed = []
        moment = time.monotonic()
        waiting = {r for r, (not_before, _) in self._refused.items() if moment < not_before}
        for round_id in self.app.overdue([r for r in due if r not in waiting]):
            try:
                with acting_as(SWEEPER):  # recorded as the sweeper's reveal
                    self.app.reveal(round_id)
                revealed.append(round_id)
                self._refused.pop(round_id, None)
                log.info("round_revealed_at_deadline", round_id=round_id)
            except RuleError as error:  # the round cannot be revealed now (a missing key…)
                pause = self._refused.get(round_id, (0.0, FIRST_RETRY_SECONDS / 2))[1]
                delay = min(max(pause * 2, self.interval), MAX_RETRY_SECONDS)
                self._refused[round_id] = (time.monotonic() + delay, delay)
                log.warning(
                    "deadline_reveal_skipped",
                    round_id=round_id,
                    reason=error.message,
                    retry_in_seconds=round(delay, 2),
                )
        return revealed

    def _late(self, deadline: datetime, now: datetime) -> bool:
        return (now - deadline).total_seconds() > OWNER_GRACE_SECONDS

    def _mine(self, round_id: str) -> bool:
        """Whether this replica owns the round's table (a round of no known table: yes)."""
        table_id = None if self.table_of is None else self.table_of(round_id)
        return table_id is None or self.owns is None or self.owns(table_id)

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
