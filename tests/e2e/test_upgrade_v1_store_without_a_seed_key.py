"""The first release's store starts as it is (issue 23, finding 2). Its tables committed their
next seeds in clear, so a new seed key deals every one of them; ``serve`` refused it all the
same ("the store already holds events: restore the key file its tables committed under"), with
a step nothing documented. On SQLite it now makes the key and plays on; on PostgreSQL, where a
seed key file must always be given, it names the exact command, and plays on once it is run.
``thirteen status`` says what the store holds before and after."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from uuid import UUID

from eventsourcing.persistence import StoredEvent

from service.opening import open_app
from tests.e2e.helpers import arrange_well, deal, get_table, hands_of, reveal
from tests.support.cli import thirteen
from tests.support.serve_process import ServeProcess

FIXTURE = Path(__file__).parent.parent / "fixtures" / "v1_store"


def first_release_store(data: Path, store: dict[str, str]) -> None:
    """The fixture's events under ``data`` (SQLite) or in this test's PostgreSQL schema,
    without any key file."""
    if store["THIRTEEN_STORE"] == "sqlite":
        shutil.copytree(FIXTURE, data)
        return
    uri = f"file:{FIXTURE / 'thirteen.sqlite'}?mode=ro&immutable=1"
    with closing(sqlite3.connect(uri, uri=True)) as db:
        rows = db.execute(
            "SELECT originator_id, originator_version, topic, state FROM stored_events "
            "ORDER BY rowid"
        ).fetchall()
    app = open_app(data, environ=store)
    try:
        app.recorder.insert_events([StoredEvent(UUID(o), v, t, s) for o, v, t, s in rows])
    finally:
        app.close()


def status(data: Path, store: dict[str, str]) -> dict[str, object]:
    done = thirteen("status", "--data", data, "--json", env=store)
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout)
    return found


def test_the_first_releases_store_serves_without_a_seed_key_file_and_plays_on(
    tmp_path: Path, store: dict[str, str]
) -> None:
    data = tmp_path / "data"
    first_release_store(data, store)
    before = status(data, store)
    assert before["seed_keys"] == {"tables_by_key_id": {"": 2}, "file": None}
    if store["THIRTEEN_STORE"] == "postgres":
        done = thirteen("serve", "--address", "127.0.0.1:0", "--data", data, env=store)
        assert done.returncode == 2 and "Traceback" not in done.stderr
        command = f"`thirteen seed-key init {data / 'seed.key'}`"
        assert command in done.stderr.splitlines()[-1]
        assert thirteen("seed-key", "init", data / "seed.key").returncode == 0
        assert thirteen("keys", "init", data).returncode == 0  # its log key, likewise
    else:
        assert not (data / "seed.key").exists()
    server = ServeProcess(data, environ=store, make_keys=False)
    try:
        if store["THIRTEEN_STORE"] == "sqlite":
            assert any("created the seed key file" in line for line in server.lines)
        open_round = get_table(server, "t-fujian").current_round_id
        assert open_round  # dealt by the first release, from its seed in clear
        assert reveal(server, open_round).server_seed
        dealt = deal(server, "t-fujian", "after-the-upgrade")
        assert len(hands_of(dealt)) >= 2
        arrange_well(server, dealt)
        assert reveal(server, dealt.round_id).server_seed
    finally:
        server.stop()
    after = status(data, store)
    by_key = after["seed_keys"]["tables_by_key_id"]  # type: ignore[index]
    current = after["seed_keys"]["file"]["current"]  # type: ignore[index]
    assert set(by_key) - {""} == {current} and sum(by_key.values()) == 2
    # t-fujian moved to the key; t-standard too once the sweeper revealed its overdue round
    assert by_key.get("", 0) <= 1
    audited = thirteen("audit", "--data", data, "--all", env=store)
    assert audited.returncode == 0, audited.stdout + audited.stderr
