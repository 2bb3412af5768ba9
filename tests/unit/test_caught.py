"""What a replica's writer read catching up, kept for its log follower
(``service.eventstore.caught``): what memory gives a reader must be exactly the log after its
position, never an event skipped (another replica's, committed between a catch-up and this
process's commit), never one out of order, whatever the order of catch-ups, commits, skipped
numbers and events falling out of memory."""

from __future__ import annotations

from collections import deque
from typing import Any
from uuid import uuid4

from eventsourcing.persistence import Notification
from hypothesis import given, settings
from hypothesis import strategies as st

from service.eventstore.caught import Caught

STREAM = uuid4()


class Mine:
    """An event object this process committed (``recent`` holds it)."""

    def __init__(self, position: int) -> None:
        self.position = position


def stored(position: int, topic: str) -> Notification:
    return Notification(
        id=position, originator_id=STREAM, originator_version=position, topic=topic, state=b"{}"
    )


MINE_TOPIC = "tests.unit.test_caught:Mine"
STEPS = st.lists(st.sampled_from(["theirs", "skip", "batch", "raced", "restart"]), max_size=60)


@settings(max_examples=300, deadline=None)
@given(STEPS, st.integers(1, 6), st.integers(2, 12), st.integers(2, 12), st.integers(1, 5))
def test_memory_gives_exactly_the_log_after_a_position(
    steps: list[str], size: int, kept: int, recent_kept: int, limit: int
) -> None:
    """A log written by this process (batches: a catch-up, then its commit, sometimes with
    another replica's commit in between) and by others, with skipped numbers: at every reader
    position, memory either declines or gives the log's next events, in order, at most
    ``limit``, each of this process's as its own object and every other as stored."""
    log: list[tuple[int, str, Any]] = []  # (position, topic, this process's object or None)
    recent: deque[tuple[int, Any]] = deque(maxlen=recent_kept)
    caught = Caught(kept)
    top, seen = 0, -1

    def catch_up() -> None:
        nonlocal seen
        if seen < 0:
            seen = caught.restart(top)
            return
        changed = [stored(p, t) for p, t, _ in log if p > seen][:3]  # pages of 3
        while True:
            caught.read(seen, changed)
            if changed:
                seen = changed[-1].id
            if len(changed) < 3:
                return
            changed = [stored(p, t) for p, t, _ in log if p > seen][:3]

    for step in steps:
        if step in ("theirs", "raced"):
            if step == "raced":
                catch_up()
            for _ in range(size):
                top += 1
                log.append((top, "theirs", None))
        if step == "skip":
            top += 2
        if step in ("batch", "raced"):
            if step == "batch":
                catch_up()
            if seen >= 0:  # a writer commits only after its first catch-up
                first = top + 1
                for _ in range(size):
                    top += 1
                    mine = Mine(top)
                    log.append((top, MINE_TOPIC, mine))
                    recent.append((top, mine))
                caught.committed(first, top)
        if step == "restart":
            seen = caught.restart(top)
        for position in range(-1, top + 2):
            given_back = caught.after(position, limit, list(recent), recent_kept)
            if given_back is None:
                continue
            expected = [entry for entry in log if entry[0] > position][: len(given_back)]
            assert given_back, position  # memory gives something, or declines
            assert len(given_back) <= limit
            assert [(p, t) for p, t, _, _ in given_back] == [(p, t) for p, t, _ in expected]
            for (_, _, stored_event, own), (_, _, mine_object) in zip(
                given_back, expected, strict=True
            ):
                if mine_object is not None:
                    assert own is mine_object
                else:
                    assert own is None and stored_event is not None


def test_memory_serves_a_follower_one_batch_behind() -> None:
    """The case it is for: the other replica committed, this one caught up and committed right
    after; a follower where it read last gets both from memory, without reading the store."""
    caught = Caught()
    recent: deque[tuple[int, Any]] = deque(maxlen=8)
    caught.restart(10)
    caught.read(10, [stored(11, "theirs"), stored(12, "theirs")])
    mine = Mine(13)
    recent.append((13, mine))
    caught.committed(13, 13)
    given_back = caught.after(10, 100, list(recent), 8)
    assert given_back is not None
    assert [(p, t, own) for p, t, _, own in given_back] == [
        (11, "theirs", None),
        (12, "theirs", None),
        (13, MINE_TOPIC, mine),
    ]
    assert caught.after(13, 100, list(recent), 8) is None  # the newest: read the store
    caught.committed(15, 15)  # 14 may be another replica's: not known
    assert caught.after(13, 100, list(recent), 8) is None


def test_a_span_read_before_the_writer_starts_afresh_still_finds_its_events() -> None:
    """The follower reads the span (``events_after``: ``caught.whole``, then ``recent``), and
    only then what is kept. The writer, far behind, may start afresh in between (``restart``
    and its next catch-up, on its own thread): the kept events of the span it read were gone,
    and memory gave this process's own commit at the span's end as the next event, the other
    replicas' events before it skipped (never seen by the follower's listeners: watch streams,
    the projector)."""
    caught = Caught()
    recent: deque[tuple[int, Any]] = deque(maxlen=8)
    caught.restart(10)
    caught.read(10, [stored(11, "theirs"), stored(12, "theirs"), stored(13, "theirs")])
    mine = Mine(14)
    recent.append((14, mine))
    caught.committed(14, 14)
    span = caught.whole  # the follower at 11 reads the span, and recent
    snapshot = list(recent)
    caught.restart(40_000)  # meanwhile the writer, 20 pages behind, starts afresh
    caught.read(40_000, [stored(40_001, "theirs")])
    given_back = caught.after(11, 100, snapshot, 8, span)
    assert given_back is None or [p for p, _, _, _ in given_back] == [12, 13, 14]
