"""``ViewStore.as_of``, the snapshot every read of the views is answered from
(``service.rpc.views``), on SQLite and PostgreSQL: it reads the tracking rows and the log's
newest position together; a rebuild that drops the views meanwhile changes nothing it reads
(PostgreSQL: the drop waits for it; SQLite: it keeps the state it began with); views dropped
before it are ``ViewsMissing``; a PostgreSQL session cut under it is replaced and the whole
snapshot read again."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from projections.projector import Projector
from projections.store import SCHEMA_VERSION, Tracking, ViewsMissing, ViewStore
from service.application import Thirteen
from service.opening import open_app
from tests.e2e.helpers import WAIT, wait_until
from tests.support.stores import PG, store_environ


@dataclass
class Stores:
    app: Thirteen
    views: ViewStore

    def project(self) -> None:
        Projector(self.app, self.views).run_once()


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stores]:
    with store_environ(request.param, tmp_path) as environ:
        app = open_app(tmp_path / "data", environ=environ)
        views, _ = app.database.views()
        views.create()
        try:
            yield Stores(app, views)
        finally:
            views.close()
            app.close()


def test_a_snapshot_reads_the_tracking_rows_and_the_log_head_together(stores: Stores) -> None:
    stores.app.credit("ann", 10, "first")
    stores.project()
    head = stores.app.max_position()
    assert stores.views.as_of(lambda tracking: tracking) == Tracking(SCHEMA_VERSION, head, head)
    stores.app.credit("ann", 5, "second")  # stored, not projected yet
    behind = stores.views.as_of(lambda tracking: tracking)
    assert (behind.position, behind.head) == (head, stores.app.max_position())
    assert behind.head is not None and behind.head > head


def test_a_rebuild_cannot_change_what_a_snapshot_reads(stores: Stores) -> None:
    """One snapshot reads ann's ledger, pauses while another connection drops every view (as
    a rebuild starts), and reads it again: the same entries, and the balance they end on."""
    for k in range(3):
        stores.app.credit("ann", 10, f"c{k}")
    stores.project()
    paused, resume = threading.Event(), threading.Event()

    def read(tracking: Tracking) -> tuple[Tracking, Any, Any, Any]:
        first = stores.views.ledger("ann", 0, 100)
        paused.set()
        assert resume.wait(WAIT)
        return tracking, first, stores.views.ledger("ann", 0, 100), stores.views.balance("ann")

    rebuilder, _ = stores.app.database.views()  # another connection, as another process's
    sessions: list[int] = []

    def drop() -> None:
        if rebuilder.postgres:
            sessions.append(rebuilder._connect().info.backend_pid)
        rebuilder.drop()

    try:
        with ThreadPoolExecutor(2) as pool:
            reading = pool.submit(stores.views.as_of, read)
            assert paused.wait(WAIT)
            dropping = pool.submit(drop)
            if stores.views.postgres:
                wait_until(
                    lambda: sessions and _waits_for_a_lock(sessions[0]),
                    "the drop to wait for the snapshot",
                )
                assert not dropping.done()
            else:
                dropping.result(timeout=WAIT)  # SQLite: a reader does not hold a writer off
            resume.set()
            tracking, first, again, balance = reading.result(timeout=WAIT)
            dropping.result(timeout=WAIT)
    finally:
        rebuilder.close()
    assert tracking.position == stores.app.max_position()
    assert [e.amount for e in first] == [10, 10, 10] and again == first
    assert balance == 30
    with pytest.raises(ViewsMissing):
        stores.views.as_of(lambda tracking: stores.views.ledger("ann", 0, 100))


def _waits_for_a_lock(pid: int) -> bool:
    import psycopg

    with psycopg.connect(autocommit=True, **PG) as admin:
        row = admin.execute(
            "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)
        ).fetchone()
    return row is not None and row[0] == "Lock"


def test_a_snapshot_on_a_cut_postgres_session_is_read_again_on_a_new_one(stores: Stores) -> None:
    if not stores.views.postgres:
        pytest.skip("PostgreSQL sessions only")
    import psycopg

    stores.app.credit("ann", 10, "first")
    stores.project()
    pid = stores.views._connect().info.backend_pid
    with psycopg.connect(autocommit=True, **PG) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    tracking, balance = stores.views.as_of(lambda t: (t, stores.views.balance("ann")))
    assert (tracking.position, balance) == (stores.app.max_position(), 10)
    assert stores.views._connect().info.backend_pid != pid
