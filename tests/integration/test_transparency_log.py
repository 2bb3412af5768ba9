"""The transparency log's tree on the event store itself (``service.transparency``), in process,
on SQLite and PostgreSQL: every stored event is a leaf in log order, none skipped, whatever
numbers the store skips; a SQLite writer's own leaves come from memory; proofs read only the
subtrees they need; a restart continues the same tree; a tree whose stored nodes were changed
is never signed again. Proofs and leaves are checked with ``tests.support.tlog``."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import structlog.testing

from domain.signed_note import Signer
from service.application import Thirteen
from service.errors import NotFound
from service.storage import open_app
from service.transparency.log import TransparencyLog
from tests.support.stores import PG, store_environ
from tests.support.tlog import consistent, leaf_of, root_from_inclusion, signed_by

KEY = Signer.from_seed("thirteen.test/log", bytes(range(32)))


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    with store_environ(request.param, tmp_path) as environ:
        yield environ


@pytest.fixture
def app(store: dict[str, str], tmp_path: Path) -> Iterator[Thirteen]:
    opened = open_app(tmp_path / "data", environ=store)
    yield opened
    opened.close()


@pytest.fixture
def postgres_app(tmp_path: Path) -> Iterator[tuple[Thirteen, dict[str, str]]]:
    with store_environ("postgres", tmp_path) as environ:
        opened = open_app(tmp_path / "data", environ=environ)
        yield opened, environ
        opened.close()


@pytest.fixture
def sqlite_app(tmp_path: Path) -> Iterator[Thirteen]:
    opened = open_app(tmp_path / "data", environ={"THIRTEEN_STORE": "sqlite"})
    yield opened
    opened.close()


def new_log(app: Thirteen) -> TransparencyLog:
    log = TransparencyLog(app, KEY, checkpoint_interval=0.0)
    log.create()
    return log


def credits(app: Thirteen, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        app.credit(f"p{i % 7}", 10 + i, f"t-{i}")


def stored(app: Thirteen) -> list[dict[str, Any]]:
    """Every stored event as an export shows it, with its position."""
    return [
        {
            "position": n.id,
            "stream": str(n.originator_id),
            "version": n.originator_version,
            "topic": n.topic,
            "state": json.loads(n.state),
        }
        for n in app.recorder.select_notifications(start=1, limit=100_000)
    ]


def assert_every_event_is_its_leaf(app: Thirteen, log: TransparencyLog) -> None:
    events = stored(app)
    head = signed_by(log.text(log.latest()), KEY.verifier.vkey)
    assert head.size == len(events)
    located = log.locate([e["position"] for e in events], head.size)
    assert [w.leaf_index for w in located] == list(range(len(events)))  # in order, none skipped
    for event, where, proof in zip(events, located, log.inclusion(located, head.size), strict=True):
        assert root_from_inclusion(where.leaf_index, head.size, leaf_of(event), proof) == head.root


def test_every_stored_event_is_a_leaf_in_log_order(app):
    log = new_log(app)
    credits(app, 25)
    log.append_once()
    log.sign_if_due()
    assert_every_event_is_its_leaf(app, log)


def skip_positions(store: dict[str, str], count: int) -> None:
    """Make PostgreSQL's sequence skip numbers, as rolled-back inserts do."""
    with psycopg.connect(autocommit=True, **PG) as db:
        table = f'"{store["POSTGRES_SCHEMA"]}".thirteen_events'
        for _ in range(count):
            db.execute("SELECT nextval(pg_get_serial_sequence(%s, 'notification_id'))", (table,))


def test_numbers_postgresql_skips_hold_no_leaf_and_shift_nothing(postgres_app):
    """(SQLite reuses the numbers of rolled-back inserts.)"""
    app, store = postgres_app
    log = new_log(app)
    credits(app, 3)
    skip_positions(store, 5)
    credits(app, 4, start=3)
    skip_positions(store, 2)
    credits(app, 2, start=7)
    log.append_once()
    log.sign_if_due()
    assert_every_event_is_its_leaf(app, log)
    positions = [e["position"] for e in stored(app)]
    skipped = next(p for p in range(1, positions[-1]) if p not in positions)
    with pytest.raises(NotFound):
        log.locate([skipped], log.latest().size)


def test_a_sqlite_writer_takes_the_leaves_of_its_own_commits_from_memory(sqlite_app, monkeypatch):
    """(On PostgreSQL the other replicas' events are read from the log.)"""
    app = sqlite_app
    log = new_log(app)
    credits(app, 3)
    log.append_once()  # catches up (the tree starts behind the store)
    credits(app, 10, start=3)

    def unread(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the log was read although this process wrote it")

    monkeypatch.setattr(app.recorder, "select_notifications", unread)
    assert log.append_once() > 0
    monkeypatch.undo()
    log.sign_if_due()
    assert_every_event_is_its_leaf(app, log)  # the leaves from memory are the stored events'


def test_a_restarted_log_continues_the_tree_and_its_checkpoints_extend_the_last(app):
    first = new_log(app)
    credits(app, 9)
    first.append_once()
    before = signed_by(first.text(first.sign_if_due()), KEY.verifier.vkey)
    credits(app, 4, start=9)  # stored, not yet appended when the process ends
    second = new_log(app)
    credits(app, 6, start=13)
    second.append_once()
    after = signed_by(second.text(second.sign_if_due()), KEY.verifier.vkey)
    assert after.size == len(stored(app)) > before.size
    proof = second.consistency(before.size, after.size)
    assert consistent(before.size, after.size, before.root, after.root, proof)
    assert_every_event_is_its_leaf(app, second)


def test_proofs_read_only_the_subtrees_they_need(app):
    log = new_log(app)
    credits(app, 300)
    log.append_once()
    size = log.sign_if_due().size
    read: list[int] = []
    rows = log.store._rows

    def counted(statement: str, params: Any = ()) -> list[Any]:
        found = rows(statement, params)
        read.append(len(found))
        return found

    log.store._rows = counted  # type: ignore[method-assign]
    log.store.forget()  # nothing cached: every node is read from the store
    located = log.locate([150], size)
    log.inclusion(located, size)
    log.consistency(17, size)
    assert sum(read) <= 2 * 9 * 10, read  # log2(300) < 9: O(log² n) rows, not 300


TOP = "SELECT MAX(level) FROM {table} WHERE idx = 0"  # the largest subtree: under every root


def tamper_node(store: dict[str, str], data: Path) -> None:
    """Overwrite the stored hash of the tree's largest subtree."""
    if store["THIRTEEN_STORE"] == "sqlite":
        with sqlite3.connect(data / "thirteen.sqlite") as db:
            db.execute("DROP TRIGGER tlog_nodes_no_UPDATE")
            ((level,),) = db.execute(TOP.format(table="tlog_nodes"))
            db.execute(
                "UPDATE tlog_nodes SET hash = ? WHERE level = ? AND idx = 0", (bytes(32), level)
            )
        return
    table = f'"{store["POSTGRES_SCHEMA"]}".tlog_nodes'
    with psycopg.connect(autocommit=True, **PG) as db:
        db.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
        ((level,),) = db.execute(TOP.format(table=table)).fetchall()
        db.execute(f"UPDATE {table} SET hash = %s WHERE level = %s AND idx = 0", (bytes(32), level))


def test_a_tree_whose_stored_nodes_were_changed_is_never_signed_again(app, store, tmp_path):
    log = new_log(app)
    credits(app, 8)
    log.append_once()
    signed = log.sign_if_due()
    assert signed is not None
    tamper_node(store, tmp_path / "data")
    restarted = new_log(app)  # reads the stored tree afresh
    credits(app, 3, start=8)
    restarted.append_once()
    with structlog.testing.capture_logs() as logged:
        assert restarted.sign_if_due() is None
    assert restarted.latest().size == signed.size
    assert restarted.failure is not None
    assert any(e["event"] == "transparency_log_inconsistent" for e in logged)


def test_a_checkpoint_at_most_every_interval_and_only_when_the_tree_grew(app):
    log = TransparencyLog(app, KEY, checkpoint_interval=2.0)
    log.create()
    credits(app, 2)
    log.append_once()
    first = log.sign_if_due(now=100.0)
    assert first is not None
    credits(app, 2, start=2)
    log.append_once()
    assert log.sign_if_due(now=101.9) is None  # grown, but too soon
    second = log.sign_if_due(now=102.0)
    assert second is not None and second.size > first.size
    assert log.sign_if_due(now=200.0) is None  # not grown
    # A restarted process waits an interval from its start before signing again.
    restarted = TransparencyLog(app, KEY, checkpoint_interval=2.0)
    credits(app, 1, start=4)
    restarted.append_once()
    assert restarted.sign_if_due(now=500.0) is None
    assert restarted.sign_if_due(now=502.0) is not None


def test_a_log_started_on_a_store_that_holds_events_reads_them_from_the_log(store, tmp_path):
    """The leaves read back from the stored bytes equal those hashed at encoding (above)."""
    before = open_app(tmp_path / "data", environ=store)
    credits(before, 12)
    before.close()
    app = open_app(tmp_path / "data", environ=store)  # a new process: nothing in memory
    try:
        assert not app.logged
        log = new_log(app)
        assert log.append_once() == len(stored(app))
        log.sign_if_due()
        assert_every_event_is_its_leaf(app, log)
    finally:
        app.close()
