"""A store edited behind the service's back, served as tiles (issue 24; SQLite, where the file
is at hand): an edited event's bundle is never served (its entry no longer hashes to its leaf:
``500``, logged ``tiles_unservable``), and an edited leaf hash is served as stored, so the mirror
that reads the tiles refuses the tree (its root is not the signed checkpoint's)."""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest

from tests.e2e.helpers import seated_table, wait_until
from tests.e2e.test_tiles import BANNER, caught_up, fetch, log_key
from tests.support.serve_process import ServeProcess
from tests.support.tiles_mirror import MirrorError, TilesMirror

TILES = ("--tiles", "127.0.0.1:0", "--checkpoint-interval", "0.2")


def started(data: Path) -> tuple[ServeProcess, str]:
    process = ServeProcess(data, *TILES)
    line = wait_until(
        lambda: next((x for x in process.lines if x.startswith(BANNER)), None), "the tiles", 30
    )
    return process, line[len(BANNER) :].strip().rstrip("/")


def logged_once_written(tmp_path: Path) -> tuple[Path, int]:
    """A store with a few events, all in a signed checkpoint; the server stopped."""
    data = tmp_path / "data"
    process, base = started(data)
    try:
        seated_table(process, "t1", {"ann": 5000, "bo": 5000})
        size = caught_up(process, TilesMirror(base, log_key(process))).size
    finally:
        process.stop()
    return data, size


def edit(data: Path, statement: str, *triggers: str) -> None:
    with closing(sqlite3.connect(data / "thirteen.sqlite")) as db:
        for trigger in triggers:
            db.execute(f"DROP TRIGGER {trigger}")
        assert db.execute(statement).rowcount == 1
        db.commit()


def test_an_edited_event_s_bundle_is_never_served(tmp_path: Path) -> None:
    data, size = logged_once_written(tmp_path)
    with closing(sqlite3.connect(data / "thirteen.sqlite")) as db:
        state = json.loads(
            db.execute("SELECT state FROM stored_events WHERE rowid = 2").fetchone()[0]
        )
    state["amount"] = state.get("amount", 0) + 1_000_000
    edited = json.dumps(state).replace("'", "''")
    edit(
        data,
        f"UPDATE stored_events SET state = CAST('{edited}' AS BLOB) WHERE rowid = 2",
        "stored_events_no_update",
    )
    process, base = started(data)
    try:
        status, _, body = fetch(f"{base}/tile/entries/000.p/{size}")
        assert status == 500 and b"cannot be served" in body
        assert fetch(f"{base}/tile/0/000.p/{size}")[0] == 200  # the hashes are as signed
        wait_until(lambda: any("tiles_unservable" in x for x in process.lines), "the log line")
        with pytest.raises(MirrorError, match="HTTP 500"):
            TilesMirror(base, log_key(process)).poll()
    finally:
        process.stop()


def test_an_edited_leaf_hash_makes_the_mirror_refuse_the_tree(tmp_path: Path) -> None:
    data, _ = logged_once_written(tmp_path)
    edit(
        data,
        "UPDATE tlog_nodes SET hash = zeroblob(32) WHERE level = 0 AND idx = 1",
        "tlog_nodes_no_UPDATE",
    )
    process, base = started(data)
    try:
        mirror = TilesMirror(base, log_key(process))
        deadline = time.monotonic() + 10
        with pytest.raises(MirrorError, match="the leaves' tree is not the checkpoint's"):
            while time.monotonic() < deadline:
                mirror.poll()
    finally:
        process.stop()
