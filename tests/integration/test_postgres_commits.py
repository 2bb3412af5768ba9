"""What a commit on PostgreSQL sends besides its events (issue 21, a cheaper command path)."""

from __future__ import annotations

from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from service.eventstore.postgres import PostgresEvents, settings
from service.opening import open_app
from tests.support.stores import store_environ


def test_a_commit_notifies_no_one(tmp_path: Path) -> None:
    """The library's recorder sends ``NOTIFY`` on its events table's channel in every insert,
    for subscriptions by ``LISTEN``; nothing here listens (the log's readers poll, as on
    SQLite), and each notification was a statement more in every batch's transaction and a
    place in PostgreSQL's notification queue at its commit. A session listening on that channel
    hears nothing while commands are stored, and the events are stored all the same."""
    with store_environ("postgres", tmp_path) as environ:
        app = open_app(tmp_path / "a", environ=environ, seed_key=tmp_path / "seed.key")
        try:
            recorder = app.recorder
            assert isinstance(recorder, PostgresEvents)
            channel = recorder.channel_name
            conninfo = make_conninfo("", **settings(environ))
            with psycopg.connect(conninfo, autocommit=True) as listener:
                listener.execute(f'LISTEN "{channel}"')
                before = app.max_position()
                for i in range(5):
                    app.credit(f"p{i}", 10, f"t{i}")
                assert app.max_position() > before
                heard = list(listener.notifies(timeout=1.0, stop_after=1))
            assert heard == []
        finally:
            app.close()
