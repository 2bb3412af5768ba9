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

from domain.tlog.note import Signer
from service.application import Thirteen
from service.errors import NotFound
from service.opening import open_app
from service.transparency.log import TransparencyLog
from service.transparency.store import StoredCheckpoint
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


def test_every_stored_event_is_a_leaf_in_log_order(app: Thirteen) -> None:
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


def test_numbers_postgresql_skips_hold_no_leaf_and_shift_nothing(
    postgres_app: tuple[Thirteen, dict[str, str]],
) -> None:
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


def test_a_sqlite_writer_takes_the_leaves_of_its_own_commits_from_memory(
    sqlite_app: Thirteen, monkeypatch: pytest.MonkeyPatch
) -> None:
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


def test_a_restarted_log_continues_the_tree_and_its_checkpoints_extend_the_last(
    app: Thirteen,
) -> None:
    first = new_log(app)
    credits(app, 9)
    first.append_once()
    first_signed = first.sign_if_due()
    assert first_signed is not None
    before = signed_by(first.text(first_signed), KEY.verifier.vkey)
    credits(app, 4, start=9)  # stored, not yet appended when the process ends
    second = new_log(app)
    credits(app, 6, start=13)
    second.append_once()
    second_signed = second.sign_if_due()
    assert second_signed is not None
    after = signed_by(second.text(second_signed), KEY.verifier.vkey)
    assert after.size == len(stored(app)) > before.size
    proof = second.consistency(before.size, after.size)
    assert consistent(before.size, after.size, before.root, after.root, proof)
    assert_every_event_is_its_leaf(app, second)


def test_proofs_read_only_the_subtrees_they_need(app: Thirteen) -> None:
    log = new_log(app)
    credits(app, 300)
    log.append_once()
    signed = log.sign_if_due()
    assert signed is not None
    size = signed.size
    read: list[int] = []
    rows = log.store._rows

    def counted(statement: str, params: Any = ()) -> list[Any]:
        found = rows(statement, params)
        read.append(len(found))
        return found

    # Every read of the tree's rows goes through the count: what the test measures.
    log.store._rows = counted  # type: ignore[method-assign]
    log.store.forget()  # nothing cached: every node is read from the store
    located = log.locate([150], size)
    log.inclusion(located, size)
    log.consistency(17, size)
    assert sum(read) <= 2 * 9 * 10, read  # log2(300) < 9: O(log² n) rows, not 300


TOP = "SELECT MAX(level) FROM {table} WHERE idx = 0"  # the largest subtree: under every root


def overwrite_node(store: dict[str, str], data: Path, level: int | None, index: int) -> None:
    """Overwrite one stored subtree hash (the triggers that refuse it dropped first); level
    None: the largest subtree, under every root."""
    if store["THIRTEEN_STORE"] == "sqlite":
        with sqlite3.connect(data / "thirteen.sqlite") as db:
            db.execute("DROP TRIGGER IF EXISTS tlog_nodes_no_UPDATE")
            if level is None:
                ((level,),) = db.execute(TOP.format(table="tlog_nodes"))
            db.execute(
                "UPDATE tlog_nodes SET hash = ? WHERE level = ? AND idx = ?",
                (bytes(32), level, index),
            )
        return
    table = f'"{store["POSTGRES_SCHEMA"]}".tlog_nodes'
    with psycopg.connect(autocommit=True, **PG) as db:
        db.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
        if level is None:
            ((level,),) = db.execute(TOP.format(table=table)).fetchall()
        db.execute(
            f"UPDATE {table} SET hash = %s WHERE level = %s AND idx = %s", (bytes(32), level, index)
        )


def tamper_node(store: dict[str, str], data: Path) -> None:
    """Overwrite the stored hash of the tree's largest subtree."""
    overwrite_node(store, data, None, 0)


def assert_never_signed_again(app: Thirteen, signed: StoredCheckpoint, start: int) -> None:
    """A log started afresh on the store's tree signs nothing over ``signed`` once it grew."""
    restarted = new_log(app)  # reads the stored tree afresh
    credits(app, 3, start=start)
    restarted.append_once()
    with structlog.testing.capture_logs() as logged:
        assert restarted.sign_if_due() is None
    assert restarted.latest().size == signed.size
    assert f"no longer extends the checkpoint of {signed.size} events" in str(restarted.failure)
    assert any(e["event"] == "transparency_log_inconsistent" for e in logged)


def test_a_tree_whose_stored_nodes_were_changed_is_never_signed_again(
    app: Thirteen, store: dict[str, str], tmp_path: Path
) -> None:
    log = new_log(app)
    credits(app, 8)
    log.append_once()
    signed = log.sign_if_due()
    assert signed is not None
    tamper_node(store, tmp_path / "data")
    assert_never_signed_again(app, signed, 8)


def test_a_node_changed_beyond_the_last_checkpoint_is_never_signed_over(
    app: Thirteen, store: dict[str, str], tmp_path: Path
) -> None:
    """The last checkpoint holds between 17 and 31 leaves: its root is folded from the 16-leaf
    subtree 0 and leaves from 16 on, while a tree of 32 or more is folded from the 16-leaf
    subtrees 0 and 1. Subtree 1 changed in the store leaves the last checkpoint's root as it
    was, yet a tree built on it does not extend that checkpoint: the log signs nothing (a fork
    otherwise)."""
    log = new_log(app)
    credits(app, 6)  # three events each: a wallet's opening, its credit, the table's …
    log.append_once()
    signed = log.sign_if_due()
    assert signed is not None and 16 < signed.size < 32
    credits(app, 7, start=6)
    log.append_once()  # 32 leaves or more, not signed yet when the process ends
    assert log.store.state().size >= 32
    overwrite_node(store, tmp_path / "data", 4, 1)
    assert_never_signed_again(app, signed, 13)


def test_a_checkpoint_at_most_every_interval_and_only_when_the_tree_grew(app: Thirteen) -> None:
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


def test_a_log_started_on_a_store_that_holds_events_reads_them_from_the_log(
    store: dict[str, str], tmp_path: Path
) -> None:
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


def test_a_log_that_has_not_advanced_while_events_wait_reports_a_problem(app: Thirteen) -> None:
    """Health (NOT_SERVING): events stored and neither the tree nor a checkpoint advancing for
    longer than ``stall_after`` beyond the checkpoint interval; progress, or nothing waiting,
    clears it. The clock is given, not waited for."""
    log = TransparencyLog(app, KEY, checkpoint_interval=2.0, stall_after=30.0)
    log.create()
    told: list[bool] = []
    log.on_health = told.append
    log.observe(now=0.0)
    assert log.problem(now=1000.0) is None  # nothing stored, nothing waits
    credits(app, 3)
    log.observe(now=1000.0)
    log.report(now=1031.0)
    assert log.problem(now=1031.0) is None and told == []
    log.observe(now=1033.0)  # still nothing appended, and 33 s > 30 + 2 have passed
    log.report(now=1033.0)
    assert "have waited 33 s" in str(log.problem(now=1033.0)) and told == [False]
    log.append_once()  # the tree advances: the waiting starts again
    log.observe(now=1040.0)
    log.report(now=1040.0)
    assert told == [False, True]
    log.observe(now=1100.0)  # appended, but no checkpoint signed for 60 s
    log.report(now=1100.0)
    assert "signed 0" in str(log.problem(now=1100.0)) and told == [False, True, False]
    log.sign_if_due(now=1100.0)
    log.observe(now=1101.0)
    log.report(now=1101.0)
    assert log.problem(now=1101.0) is None and told == [False, True, False, True]


def test_a_replica_that_does_not_lead_judges_the_stall_from_the_stored_tree(app: Thirteen) -> None:
    leader = new_log(app)
    follower = TransparencyLog(app, KEY, checkpoint_interval=2.0, stall_after=30.0)
    credits(app, 4)
    follower.observe(now=0.0)  # not leading: reads the stored tree and checkpoints
    assert follower.problem(now=40.0) is not None
    leader.append_once()
    leader.sign_if_due()
    follower.observe(now=41.0)
    assert follower.problem(now=41.0) is None


def test_a_key_of_the_same_name_never_signs_over_another_keys_checkpoint(app: Thirteen) -> None:
    """(``thirteen serve`` refuses to start with it: tests/cli/test_checkpoint_serve_options.)"""
    first = new_log(app)
    credits(app, 5)
    first.append_once()
    signed = first.sign_if_due()
    assert signed is not None
    other = Signer.from_seed(KEY.name, bytes(range(1, 33)))
    swapped = TransparencyLog(app, other, checkpoint_interval=0.0)
    credits(app, 2, start=5)
    swapped.append_once()
    with structlog.testing.capture_logs() as logged:
        assert swapped.sign_if_due() is None
    assert swapped.latest() == signed
    assert "was signed by another key of that name" in str(swapped.failure)
    assert [e["event"] for e in logged] == ["log_key_conflict"]
    renamed = TransparencyLog(
        app,
        Signer.from_seed("thirteen.test/log-2", bytes(32)),
        checkpoint_interval=0.0,
        new_log=True,
    )
    assert renamed.sign_if_due() is not None  # a new name starts another log, on purpose


def test_a_key_of_an_earlier_name_never_signs_over_that_names_checkpoints(app: Thirteen) -> None:
    """Log A signs, the log is renamed to B and signs, then a key named A but not A's key comes
    back: the last checkpoint is B's, yet A's last is still A's key's, and witnesses of A hold
    it: the intruder signs nothing (and ``serve`` refuses it, ``stored_key_conflict``). Nor
    does A's own key sign again once the log has moved to B (issue 23): witnesses would see two
    logs alternate over one store."""
    from service.tools.log_keys import stored_key_conflict

    first = new_log(app)
    credits(app, 3)
    first.append_once()
    assert first.sign_if_due() is not None
    renamed = TransparencyLog(
        app,
        Signer.from_seed("thirteen.test/log-2", bytes(32)),
        checkpoint_interval=0.0,
        new_log=True,
    )
    credits(app, 2, start=3)
    renamed.append_once()
    assert renamed.sign_if_due() is not None
    intruder = Signer.from_seed(KEY.name, bytes(range(1, 33)))
    assert "was signed by another key of that name" in str(stored_key_conflict(app, intruder))
    assert stored_key_conflict(app, KEY) is None  # A's own key signed A's checkpoints
    swapped = TransparencyLog(app, intruder, checkpoint_interval=0.0)
    credits(app, 2, start=5)
    swapped.append_once()
    with structlog.testing.capture_logs() as logged:
        assert swapped.sign_if_due() is None
    assert "was signed by another key of that name" in str(swapped.failure)
    assert "log_key_conflict" in [e["event"] for e in logged]
    for on_purpose in (False, True):  # the log is B's now: A's key signs nothing, even so
        back = TransparencyLog(app, KEY, checkpoint_interval=0.0, new_log=on_purpose)
        back.append_once()
        with structlog.testing.capture_logs() as logged:
            assert back.sign_if_due() is None
        assert "is of log thirteen.test/log-2, not of this key's name" in str(back.failure)
        assert [e["event"] for e in logged] == ["log_key_foreign"]


def test_audit_all_judges_the_tree_by_the_checkpoint_signed_when_it_began_reading(
    app: Thirteen,
) -> None:
    """``audit --all`` on a store a server is serving: a checkpoint signed while the audit reads
    or judges covers events it never read, which is no deletion."""
    from service.evidence import StoreReader
    from service.transparency.audits import StoreLogAudit

    log = new_log(app)
    credits(app, 5)
    log.append_once()
    first = log.sign_if_due()
    assert first is not None
    audit = StoreLogAudit(app, KEY.verifier)
    for _ in StoreReader(app, lambda _: None).every_round(None, audit.take):
        pass
    credits(app, 3, start=5)  # meanwhile the server goes on, and signs again
    log.append_once()
    assert log.sign_if_due() is not None
    findings = audit.tree()
    assert all(f.ok for f in findings), [f.message for f in findings if not f.ok]
    assert any(f"({first.size} events) is signed" in f.message for f in findings), findings


def test_a_store_from_before_cosignature_times_gets_the_column_and_keeps_its_lines(
    store: dict[str, str], tmp_path: Path
) -> None:
    """Stores written by issue 12's first version have no ``cosigned_at``: the column is added
    at start, their lines read as before, and a newer line replaces one of them."""
    app = open_app(tmp_path / "data", environ=store)
    try:
        log = TransparencyLog(app, KEY)
        old = log.store._sql(
            "CREATE TABLE {p}cosignatures (size BIGINT NOT NULL, witness TEXT NOT NULL, "
            "line TEXT NOT NULL, PRIMARY KEY (size, witness))"
        )
        with log.store._transaction(commit=True) as cursor:
            cursor.execute(old)
            cursor.execute(
                log.store._sql("INSERT INTO {p}cosignatures VALUES (1, 'w+01', 'old line\n')")
            )
        log.create()
        assert log.store.cosignatures(1) == ["old line\n"]
        log.store.add_cosignatures(1, [("w+01", "new line\n", 5)])
        log.store.add_cosignatures(1, [("w+01", "older line\n", 4)])
        assert log.store.cosignatures(1) == ["new line\n"]
        log.create()  # again: nothing to add
    finally:
        app.close()


def test_leaves_missing_from_memory_are_read_from_the_log_not_skipped(app: Thirteen) -> None:
    """Issue 10: the appender takes this process's leaves from memory only where they continue
    the tree without a gap. A commit whose leaves memory lacks (one dropped here) sits between
    two that it has: the appender reads that one from the log, and every event is a leaf, in
    order. Before, a sole writer's appender went on from memory past the gap."""
    log = new_log(app)
    credits(app, 4)
    log.append_once()
    credits(app, 6, start=4)
    dropped = len(app.logged) - 5  # a leaf in the middle of what the appender has not seen
    kept = [entry for at, entry in enumerate(app.logged) if at != dropped]
    app.logged.clear()
    app.logged.extend(kept)
    log.append_once()
    log.sign_if_due()
    assert_every_event_is_its_leaf(app, log)
