"""What a PostgreSQL replica's writer read of the log catching up before its batches
(``Writer._catch_up``: every event stored since its last look, the other replicas' among them),
kept undecoded so that the process's log follower need not read those events again.

With the process's own commits (``EventLogApplication.recent``) they are the whole log from
``since`` (after it) to ``to``: a catch-up reads every event after a position, and PostgreSQL's
recorder locks the table to insert, so events become visible in position order and none can
appear later at or below a position read past. A commit of this process extends that span only
when its first position follows ``to`` (then nothing can lie between); otherwise the next
catch-up does. A reader at or beyond ``to`` reads the store, as before."""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import Notification
from eventsourcing.utils import get_topic

KEPT = 512  # events of the catch-ups kept (a follower is usually one batch behind)


class Caught:
    """The catch-ups' events, and the span of the log they make whole with this process's own
    commits. The writer thread updates it; readers on other threads take snapshots."""

    def __init__(self, kept: int = KEPT) -> None:
        self.kept: deque[Notification] = deque(maxlen=kept)
        # (since, to): every event after ``since`` up to ``to`` is kept here or in ``recent``;
        # replaced whole, after what it covers is kept, so a reader never sees a torn span.
        self.whole: tuple[int, int] = (-1, -1)

    def restart(self, seen: int) -> int:
        """The writer starts looking at the log after ``seen`` (its first batch, or after
        falling too far behind): nothing before is known. Returns ``seen``.

        What is kept stays (the deque drops the oldest as it fills): a follower may hold the
        span it read before this (``events_after`` reads it, then what is kept), and would find
        the other replicas' events of that span gone. Every event kept is at or below ``seen``
        (stored, so at most the log's newest), below any span from now on."""
        self.whole = (seen, seen)
        return seen

    def read(self, seen: int, changed: Sequence[Notification]) -> None:
        """A catch-up read ``changed``: every event stored after ``seen`` when it looked (at
        most a page of them: then the span ends at the page's last)."""
        since, to = self.whole
        self.kept.extend(changed)
        if seen > to:  # a span that does not join the one held: start from it
            since = seen
        self.whole = (since, max(to, changed[-1].id if changed else seen))

    def committed(self, first: int, last: int) -> None:
        """This process committed the events at ``first`` … ``last`` (in ``recent``)."""
        since, to = self.whole
        if first == to + 1 and since >= 0:
            self.whole = (since, last)

    def after(
        self,
        position: int,
        limit: int,
        recent: Sequence[tuple[int, Any]],
        recent_kept: int,
        whole: tuple[int, int] | None = None,
    ) -> list[tuple[int, str, Notification | None, Any]] | None:
        """The log after ``position`` as memory holds it, at most ``limit`` events, each as
        (position, topic, the stored event or None, this process's event object or None);
        None when memory does not hold the log just after ``position``. ``recent`` is a
        snapshot of the process's own latest commits, a deque of at most ``recent_kept``;
        ``whole``, the span as it was read before that snapshot was taken (so that the
        snapshot holds every commit the span covers)."""
        since, to = self.whole if whole is None else whole
        kept = list(self.kept)
        floor = since
        if kept and len(kept) == self.kept.maxlen:  # older ones may have been dropped
            floor = max(floor, kept[0].id - 1)
        if recent and len(recent) >= recent_kept:
            floor = max(floor, recent[0][0] - 1)
        if not floor <= position < to or limit <= 0:
            return None
        held: dict[int, tuple[int, str, Notification | None, Any]] = {}
        start = bisect.bisect_right(kept, position, key=lambda n: n.id)
        for n in kept[start:]:
            if n.id > to:
                break
            held[n.id] = (n.id, n.topic, n, None)
        start = bisect.bisect_right(recent, position, key=lambda entry: entry[0])
        for p, event in recent[start:]:
            if p > to:
                break
            held[p] = (p, get_topic(type(event)), None, event)
        return [held[p] for p in sorted(held)[:limit]]
