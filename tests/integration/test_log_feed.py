"""Issue 10: the log's readers (follower, projector, watch streams, transparency log) take a
process's own latest commits from memory instead of reading and decoding them again, on
SQLite and on PostgreSQL, where other replicas commit between them. What memory gives must be
exactly what the log holds: never an event skipped, never one out of order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import Notification

from service.eventstore.eventlog import from_memory
from service.opening import open_app
from tests.support.stores import store_environ


def stored(app: Any, after: int) -> list[tuple[int, Any]]:
    """The events after ``after`` as the log holds them (read and decoded from the store)."""
    return [
        (n.id, app.mapper.to_domain_event(n))
        for n in app.recorder.select_notifications(start=after + 1, limit=1000)
    ]


def same(fed: list[tuple[int, Any]], read: list[tuple[int, Any]]) -> bool:
    """The same events at the same positions: each event's class and whole state."""
    return [(p, type(e), vars(e)) for p, e in fed] == [(p, type(e), vars(e)) for p, e in read]


def test_replicas_committing_in_turn_feed_their_readers_exactly_the_log(tmp_path: Path) -> None:
    """Two replicas on one PostgreSQL schema commit in turn (so each one's commits have the
    other's between them): at every position, what either gives its readers is a prefix of
    what the log holds after it, the same events at the same positions, and a reader that
    follows it from 0 ends with every event of the log in order."""
    with store_environ("postgres", tmp_path) as environ:
        key = tmp_path / "seed.key"
        a = open_app(tmp_path / "a", environ=environ, seed_key=key)
        b = open_app(tmp_path / "b", environ=environ, seed_key=key)
        try:
            for i in range(12):
                (a if i % 3 else b).credit(f"p{i % 4}", 10 + i, f"t{i}")
            top = a.max_position()
            fed_somewhere = caught_somewhere = 0
            for app in (a, b):
                for position in range(top + 1):
                    run, _ = from_memory(list(app.recent), position, 1000, only_writer=False)
                    fed_somewhere += bool(run)
                    read = stored(app, position)
                    assert same(run, read[: len(run)]), position
                    assert same(app.events_after(position, 1000), read), position
                    fed = app.events_after(position, 1000, caught=True)  # the follower's way
                    assert same(fed, read[: len(fed)]) and (fed or not read), position
                    caught_somewhere += (
                        app.caught.after(position, 1, list(app.recent), 1024) is not None
                    )
                for caught in (False, True):
                    followed, position = [], 0
                    while True:
                        batch = app.events_after(position, 3, caught=caught)
                        if not batch:
                            break
                        followed += batch
                        position = batch[-1][0]
                    assert same(followed, stored(app, 0)) and len(followed) == top
            assert fed_somewhere  # memory was used, not only the log
            assert caught_somewhere  # and what a writer read catching up
        finally:
            b.close()
            a.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_sole_writer_feeds_its_readers_from_memory(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One process: every reader position from the oldest commit memory holds on is served
    from memory, equal to the log, and nothing is decoded again; only a sole writer (SQLite)
    knows from memory that nothing came after (a replica's log read finds nothing new)."""
    with store_environ(kind, tmp_path) as environ:
        app = open_app(tmp_path / "data", environ=environ)
        sole = kind == "sqlite"
        try:
            for i in range(6):
                app.credit(f"p{i % 2}", 5 + i, f"t{i}")
            top = app.max_position()
            decoded: list[int] = []
            decode = app.mapper.to_domain_event

            def counted(n: Notification) -> DomainEventProtocol[UUID]:
                decoded.append(n.id)
                return decode(n)

            monkeypatch.setattr(app.mapper, "to_domain_event", counted)
            for position in range(top):
                run, whole = from_memory(list(app.recent), position, 1000, only_writer=sole)
                assert whole == sole  # on PostgreSQL the log is asked what came after
                read = stored(app, position)
                assert same(run, read)
                decoded.clear()
                assert same(app.events_after(position, 1000), read)
                assert decoded == []  # this process's own events are never decoded again
        finally:
            app.close()
