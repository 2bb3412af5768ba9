"""Whether views kept by another process (``thirteen worker``) have stopped advancing while
events wait for them: what a serving process that keeps no views judges its ``ResultsService``
health by (``Projector`` with ``stall_after``)."""

from __future__ import annotations

STALL_AFTER = 15.0
"""Seconds the views may stay where they are while stored events wait for them before the
serving process reports ``ResultsService`` NOT_SERVING (no worker keeps them)."""


class Stall:
    """The views' position and the log's head as last observed, and since when the views have
    not advanced while events waited."""

    def __init__(self, after: float = STALL_AFTER) -> None:
        self.after = after
        self._position: int | None = None
        self._since = 0.0

    def observe(self, position: int, head: int, now: float) -> str | None:
        """Note the views at ``position`` and the log's newest event at ``head`` at ``now``;
        why the views have stalled, or None while they keep up (or advance).

        >>> stall = Stall(after=15.0)
        >>> stall.observe(3, 5, now=0.0) is None
        True
        >>> print(stall.observe(3, 6, now=16.0))  # doctest: +ELLIPSIS
        the views have stayed at position 3 for 16 s while 3 events wait: is a thirteen worker ...
        >>> stall.observe(4, 6, now=17.0) is None  # advancing again
        True
        >>> stall.observe(6, 6, now=40.0) is None  # caught up
        True
        """
        if position != self._position or position >= head:
            self._position, self._since = position, now
            return None
        waited = now - self._since
        if waited <= self.after:
            return None
        return (
            f"the views have stayed at position {position} for {waited:.0f} s while "
            f"{head - position} events wait: is a thirteen worker running?"
        )
