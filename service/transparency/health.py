"""Whether the transparency log serves (``TransparencyLog.on_health``): it does not while the
appender has failed ``FAILURES_BEFORE_NOT_SERVING`` times in a row (a database error, an
integrity error from a tampered tree), or while stored events have waited for the tree or a
checkpoint for ``stall_after`` seconds beyond the checkpoint interval without either advancing.
Every replica judges the wait from the stored tree, not only the appender. (A log that refuses
to sign says so itself: ``TransparencyLog.failure``.)"""

from __future__ import annotations

import time

import structlog

from service.transparency.store import TreeState

log = structlog.get_logger("thirteen.transparency")

STALL_AFTER = 30.0
"""Seconds, beyond the checkpoint interval, that stored events may wait for the tree or a
checkpoint while neither advances, before the log reports NOT_SERVING."""
FAILURES_BEFORE_NOT_SERVING = 3  # the appender's failures in a row (as the projector's)


class Health:
    """The appender's failures in a row and the tree's progress, as last observed; whether the
    log serves, as last reported."""

    def __init__(self, checkpoint_interval: float, stall_after: float = STALL_AFTER) -> None:
        self.checkpoint_interval = checkpoint_interval
        self.stall_after = stall_after
        self.failures = 0  # the appender's failures in a row
        self.cause = ""  # the last one's
        self.serving = True
        self._progress: tuple[int, int] = (-1, -1)  # (tree size, signed size) last seen
        self._progress_at = time.monotonic()  # when it last advanced, or nothing waited
        self._waiting = False  # whether stored events wait for the tree or a checkpoint

    def failed(self, cause: str) -> None:
        self.failures += 1
        self.cause = cause

    def recovered(self) -> None:
        self.failures = 0

    def observe(self, tree: TreeState, signed: int, newest: int, now: float) -> None:
        """Note whether the tree (of events up to ``newest`` stored) and its checkpoints (up to
        ``signed`` leaves) have advanced, and whether events wait for them."""
        waiting = tree.position < newest or signed < tree.size
        progress = (tree.size, signed)
        if progress != self._progress or not self._waiting:  # advanced, or it starts waiting
            self._progress, self._progress_at = progress, now
        self._waiting = waiting

    def problem(self, now: float) -> str | None:
        """Why the appender or the tree fails the log now; None when neither does."""
        if self.failures >= FAILURES_BEFORE_NOT_SERVING:
            return f"the appender failed {self.failures} times in a row: {self.cause}"
        waited = now - self._progress_at
        if self._waiting and waited > self.stall_after + self.checkpoint_interval:
            return (
                f"stored events have waited {waited:.0f} s for the tree or a checkpoint, and "
                f"neither advanced (tree of {self._progress[0]} events, signed "
                f"{self._progress[1]})"
            )
        return None

    def judge(self, reason: str | None) -> bool:
        """Serve unless there is a ``reason`` not to; whether that changed (then it is logged)."""
        if (reason is None) == self.serving:
            return False
        self.serving = reason is None
        if reason is None:
            log.info("transparency_log_serving")
        else:
            log.error("transparency_log_not_serving", reason=reason)
        return True
