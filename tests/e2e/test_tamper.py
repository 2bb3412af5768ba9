"""Tamper evidence (issue: the audit detects an edited, deleted, inserted or reordered event).

Rounds are played into a SQLite store through the application; then, as an attacker with
access to the database file would, each test drops the immutability triggers and edits its own
copy of the store with the ``sqlite3`` module. The real ``thirteen audit`` console script must
exit with status 1 and name the broken event (its type, version and stream; with ``--all`` also
its position in the log) in a CHAIN or rule finding; the untouched store audits clean.

Rounds exported as documents are audited offline (``thirteen audit --file``) the same way.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from domain.ids import round_uuid
from domain.rules.ruleset import STANDARD
from domain.rules.suggest import suggest
from domain.tlog.chain import CHAIN, canonical, link
from service.application import Thirteen
from service.evidence import StoreReader
from service.opening import open_app
from tests.bench.projections import play

SCRIPT = shutil.which("thirteen", path=str(Path(sys.executable).parent))
DB = "thirteen.sqlite"
ROUND = "domain.round:Round"
REVEALED = 6  # the stream of a 4-player round: Dealt 1, Arranged 2..5, Revealed 6
ALL = "--all"
ONE = "--round"


@dataclass(frozen=True)
class Played:
    """The pristine store, the round every test tampers with, and what the app handed out."""

    data: Path
    round_id: str
    stream: str  # the round's stream id as findings print it (a dashed UUID)
    originator_id: str  # as the SQLite table stores it (hex, no dashes)
    receipt: str  # RevealResult.receipt of that round
    document: str  # the round exported by StoreReader


def _play_round(app: Thirteen, table_id: str, client_seed: str) -> tuple[str, str]:
    round_ = app.deal(table_id, client_seed=client_seed)
    for player in round_.players:
        a = suggest(list(round_.hand(player)), STANDARD).arrangement
        app.arrange(round_.round_id, player, a.front, a.middle, a.back)
    return round_.round_id, app.reveal(round_.round_id).receipt


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    data = tmp_path_factory.mktemp("tamper") / "pristine"
    app = open_app(data, environ={"THIRTEEN_STORE": "sqlite"})
    try:
        play(app, 2, tables=2)  # tables t0 and t1, four players each, a round on each
        round_id, receipt = _play_round(app, "t0", "target")
        _play_round(app, "t1", "after-1")  # later events in the log and in the same streams
        _play_round(app, "t0", "after-2")
        document = StoreReader(app, lambda _: None).evidence(round_id).document()
    finally:
        app.close()
    uuid = round_uuid(round_id)
    return Played(data, round_id, str(uuid), uuid.hex, receipt, document)


@pytest.fixture
def data(played: Played, tmp_path: Path) -> Path:
    """This test's own copy of the pristine store."""
    copy = tmp_path / "data"
    shutil.copytree(played.data, copy)
    return copy


@contextmanager
def attacker(data: Path) -> Iterator[sqlite3.Connection]:
    """The database as someone with access to the file sees it: triggers dropped."""
    connection = sqlite3.connect(data / DB)
    try:
        connection.execute("DROP TRIGGER stored_events_no_update")
        connection.execute("DROP TRIGGER stored_events_no_delete")
        yield connection
        connection.commit()
    finally:
        connection.close()


def row(
    connection: sqlite3.Connection, stream: str, version: int
) -> tuple[int, str, dict[str, Any]]:
    """(position, topic, state) of one stored event."""
    found = connection.execute(
        "SELECT rowid, topic, state FROM stored_events "
        "WHERE originator_id = ? AND originator_version = ?",
        (stream, version),
    ).fetchone()
    assert found is not None, f"no version {version} of stream {stream}"
    return int(found[0]), str(found[1]), json.loads(found[2])


def position_of(data: Path, stream: str, version: int) -> int:
    connection = sqlite3.connect(data / DB)
    try:
        return row(connection, stream, version)[0]
    finally:
        connection.close()


def write_state(
    connection: sqlite3.Connection, stream: str, version: int, state: dict[str, Any]
) -> None:
    connection.execute(
        "UPDATE stored_events SET state = ? WHERE originator_id = ? AND originator_version = ?",
        (json.dumps(state).encode(), stream, version),
    )


# Running the real console script ------------------------------------------------------------


@dataclass
class Audit:
    status: int
    stdout: str
    stderr: str

    @property
    def report(self) -> dict[str, Any]:
        assert "Traceback" not in self.stderr, (
            f"the audit crashed instead of reporting findings (exit {self.status}):\n"
            f"{self.stderr[-2500:]}"
        )
        assert self.stdout.strip(), f"the audit printed nothing; stderr:\n{self.stderr}"
        report: dict[str, Any] = json.loads(self.stdout)
        return report

    def failed(self) -> list[dict[str, Any]]:
        return [f for r in self.report["rounds"] for f in r["findings"] if not f["ok"]]


def run_audit(args: Sequence[str]) -> Audit:
    if SCRIPT is None:
        pytest.fail("the thirteen console script is not installed: run make setup")
    done = subprocess.run(
        [SCRIPT, "audit", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "THIRTEEN_STORE": "sqlite"},
    )
    return Audit(done.returncode, done.stdout, done.stderr)


def audit_store(data: Path, played: Played, mode: str, *extra: str) -> Audit:
    where = [ALL] if mode == ALL else [ONE, played.round_id]
    return run_audit(["--data", str(data), *where, "--json", *extra])


def event_name(played: Played, mode: str, kind: str, version: int, position: int) -> str:
    """How the audit names an event: with its position in the log when it read the log, by
    its stream when it read one stream (``domain.tlog.chain.StoredRecord.name``)."""
    where = f"version {version} of stream {played.stream}"
    return f"event {position} ({kind}, {where})" if mode == ALL else f"{kind} event, {where}"


def assert_names(audit: Audit, rule: str, name: str) -> None:
    """Exit status 1 and a failing finding under ``rule`` that names the event ``name``."""
    failed = audit.failed()
    assert audit.status == 1, f"exit status {audit.status}, failed findings {failed}"
    assert audit.report["ok"] is False
    assert any(f["rule"] == rule and f["event"] == name for f in failed), (
        f"no failing {rule} finding names [{name}]; the failed findings are "
        + json.dumps(failed, indent=1, ensure_ascii=False)
    )


modes = pytest.mark.parametrize("mode", [ALL, ONE])


# The untouched store and the triggers --------------------------------------------------------


@modes
def test_untouched_store_audits_clean(played: Played, data: Path, mode: str) -> None:
    audit = audit_store(data, played, mode)
    assert audit.status == 0, audit.stdout + audit.stderr
    assert audit.report["ok"] is True
    assert audit.failed() == []
    if mode == ONE:
        with_receipt = audit_store(data, played, mode, "--receipt", played.receipt)
        assert with_receipt.status == 0, with_receipt.stdout + with_receipt.stderr


def test_triggers_refuse_update_and_delete(played: Played, data: Path) -> None:
    connection = sqlite3.connect(data / DB)
    try:
        before = connection.execute("SELECT count(*), sum(length(state)) FROM stored_events")
        counted = before.fetchone()
        with pytest.raises(sqlite3.DatabaseError, match="stored events are immutable"):
            connection.execute(
                "UPDATE stored_events SET state = state WHERE originator_id = ?",
                (played.originator_id,),
            )
        with pytest.raises(sqlite3.DatabaseError, match="stored events are immutable"):
            connection.execute(
                "DELETE FROM stored_events WHERE originator_id = ? AND originator_version = ?",
                (played.originator_id, REVEALED),
            )
        connection.rollback()
        after = connection.execute("SELECT count(*), sum(length(state)) FROM stored_events")
        assert after.fetchone() == counted
    finally:
        connection.close()


# (a) Edited events ---------------------------------------------------------------------------


@modes
def test_edited_settlement_is_named(played: Played, data: Path, mode: str) -> None:
    """Coins moved between two players in the Revealed event; the sum stays zero."""
    with attacker(data) as db:
        _, _, state = row(db, played.originator_id, REVEALED)
        winner, loser = sorted(state["coins"])[:2]
        state["coins"][winner] += 100
        state["coins"][loser] -= 100
        write_state(db, played.originator_id, REVEALED, state)
    position = position_of(data, played.originator_id, REVEALED)
    name = event_name(played, mode, "Round.Revealed", REVEALED, position)
    audit = audit_store(data, played, mode)
    assert_names(audit, "CHAIN", name)
    assert_names(audit, "R9", name)  # the settlement scored again differs


@modes
def test_edited_points_are_named(played: Played, data: Path, mode: str) -> None:
    with attacker(data) as db:
        _, _, state = row(db, played.originator_id, REVEALED)
        first, second = sorted(state["points"])[:2]
        state["points"][first] += 1
        state["points"][second] -= 1
        write_state(db, played.originator_id, REVEALED, state)
    position = position_of(data, played.originator_id, REVEALED)
    name = event_name(played, mode, "Round.Revealed", REVEALED, position)
    audit = audit_store(data, played, mode)
    assert_names(audit, "CHAIN", name)
    assert_names(audit, "R6", name)


@modes
def test_edited_recorded_showdown_is_named(played: Played, data: Path, mode: str) -> None:
    """A pile's worth raised in the showdown the Revealed event records (class version 2):
    the totals and coins are untouched, but the showdown scored again differs (R6)."""
    with attacker(data) as db:
        _, _, state = row(db, played.originator_id, REVEALED)
        state["result"]["pairs"][0]["piles"][0]["worth"] += 1
        write_state(db, played.originator_id, REVEALED, state)
    position = position_of(data, played.originator_id, REVEALED)
    name = event_name(played, mode, "Round.Revealed", REVEALED, position)
    audit = audit_store(data, played, mode)
    assert_names(audit, "CHAIN", name)
    assert_names(audit, "R6", name)
    assert not any(f["rule"] == "R9" for f in audit.failed())


@modes
def test_edited_card_in_an_arrangement_is_named(played: Played, data: Path, mode: str) -> None:
    """A card of the first arrangement replaced by a card dealt to someone else."""
    with attacker(data) as db:
        _, _, dealt = row(db, played.originator_id, 1)
        _, _, arranged = row(db, played.originator_id, 2)
        other = next(p for p in dealt["players"] if p != arranged["player_id"])
        arranged["front"][0] = dealt["hands"][other][0]
        write_state(db, played.originator_id, 2, arranged)
    name = event_name(played, mode, "Round.Arranged", 2, position_of(data, played.originator_id, 2))
    audit = audit_store(data, played, mode)
    assert_names(audit, "CHAIN", name)
    assert_names(audit, "R4.1", name)


def test_edited_event_is_named_in_the_text_report(played: Played, data: Path) -> None:
    with attacker(data) as db:
        _, _, state = row(db, played.originator_id, REVEALED)
        first, second = sorted(state["coins"])[:2]
        state["coins"][first] -= 7
        state["coins"][second] += 7
        write_state(db, played.originator_id, REVEALED, state)
    position = position_of(data, played.originator_id, REVEALED)
    audit = run_audit(["--data", str(data), ALL])
    assert audit.status == 1, audit.stdout + audit.stderr
    assert f"round {played.round_id} FAILS" in audit.stdout
    name = event_name(played, ALL, "Round.Revealed", REVEALED, position)
    lines = [line for line in audit.stdout.splitlines() if line.strip().startswith("FAIL")]
    assert any(" CHAIN " in line and line.endswith(f"[{name}]") for line in lines), audit.stdout


# (b) Deleted events --------------------------------------------------------------------------


@modes
def test_deleted_event_in_the_middle_is_named(played: Played, data: Path, mode: str) -> None:
    """Version 3 (an arrangement) removed: the break shows at version 4."""
    with attacker(data) as db:
        db.execute(
            "DELETE FROM stored_events WHERE originator_id = ? AND originator_version = 3",
            (played.originator_id,),
        )
    name = event_name(played, mode, "Round.Arranged", 4, position_of(data, played.originator_id, 4))
    assert_names(audit_store(data, played, mode), "CHAIN", name)


@modes
def test_deleted_deal_is_named(played: Played, data: Path, mode: str) -> None:
    """The first event of the round removed: the stream now starts at version 2."""
    with attacker(data) as db:
        db.execute(
            "DELETE FROM stored_events WHERE originator_id = ? AND originator_version = 1",
            (played.originator_id,),
        )
    name = event_name(played, mode, "Round.Arranged", 2, position_of(data, played.originator_id, 2))
    assert_names(audit_store(data, played, mode), "CHAIN", name)


def _delete_reveal(data: Path, played: Played) -> None:
    with attacker(data) as db:
        db.execute(
            "DELETE FROM stored_events WHERE originator_id = ? AND originator_version = ?",
            (played.originator_id, REVEALED),
        )


@modes
def test_deleted_reveal_fails_the_cross_checks(played: Played, data: Path, mode: str) -> None:
    """The last event of the round removed. The stream's own chain is still a valid prefix, but
    the wallets settled the round (and the table ended it): the audit must not pass."""
    _delete_reveal(data, played)
    audit = audit_store(data, played, mode)
    rounds = {r["round_id"]: r for r in audit.report["rounds"]}
    checks = rounds[played.round_id]["findings"]
    assert audit.status == 1, (
        f"deleting the Revealed event of round {played.round_id} went undetected "
        f"(exit {audit.status}): all {len(checks)} checks of the round pass, the first says "
        f"{checks[0]['message']!r}"
    )
    assert rounds[played.round_id]["ok"] is False


def test_deleted_reveal_is_caught_by_the_receipt(played: Played, data: Path) -> None:
    _delete_reveal(data, played)
    name = event_name(played, ONE, "Round.Arranged", 5, 0)  # the head the chain now ends at
    audit = audit_store(data, played, ONE, "--receipt", played.receipt)
    assert_names(audit, "CHAIN", name)
    assert any("receipt" in f["message"] for f in audit.failed())


def test_deleted_round_stream_is_detected(played: Played, data: Path) -> None:
    """Every event of the round removed: its wallets' settlements and the table's record of the
    round remain, naming a round the log no longer holds."""
    with attacker(data) as db:
        db.execute("DELETE FROM stored_events WHERE originator_id = ?", (played.originator_id,))
    audit = audit_store(data, played, ALL)
    assert audit.status == 1, (
        f"deleting round {played.round_id} entirely went undetected (exit {audit.status}): "
        f"{len(audit.report['rounds'])} other rounds audited, nothing names it"
    )
    assert played.round_id in json.dumps(audit.report["rounds"], ensure_ascii=False)


# (c) Inserted events -------------------------------------------------------------------------


def _forged_arrangement(db: sqlite3.Connection, played: Played, chain: str) -> dict[str, Any]:
    """A second arrangement by the first player, as if made after the reveal."""
    _, _, state = row(db, played.originator_id, 2)
    _, _, revealed = row(db, played.originator_id, REVEALED)
    state["front"], state["back"][:3] = state["back"][:3], state["front"]
    state["at"] = state["timestamp"] = revealed["at"]
    if chain == "zeros":
        state[CHAIN] = "0" * 64
    elif chain == "copied from the head":
        state[CHAIN] = revealed[CHAIN]
    elif chain == "copied from the event it imitates":
        pass  # the arrangement's own chain, kept
    else:  # "recomputed": the link algorithm is public, so a forger can compute a valid one
        body = canonical(played.stream, REVEALED + 1, f"{ROUND}.Arranged", state)
        state[CHAIN] = link(revealed[CHAIN], body)
    return state


@modes
@pytest.mark.parametrize(
    "chain", ["zeros", "copied from the head", "copied from the event it imitates"]
)
def test_inserted_event_after_the_reveal_is_named(
    played: Played, data: Path, mode: str, chain: str
) -> None:
    with attacker(data) as db:
        state = _forged_arrangement(db, played, chain)
        db.execute(
            "INSERT INTO stored_events (originator_id, originator_version, topic, state) "
            "VALUES (?, ?, ?, ?)",
            (played.originator_id, REVEALED + 1, f"{ROUND}.Arranged", json.dumps(state).encode()),
        )
    position = position_of(data, played.originator_id, REVEALED + 1)
    name = event_name(played, mode, "Round.Arranged", REVEALED + 1, position)
    audit = audit_store(data, played, mode)
    assert_names(audit, "CHAIN", name)
    assert_names(audit, "R10.4", name)


@modes
def test_inserted_event_with_a_recomputed_link_is_named(
    played: Played, data: Path, mode: str
) -> None:
    """The chain is an unkeyed hash, so a forger can append a correctly linked event: the
    chain holds, and the rules (R10.4: nothing follows the reveal) and the receipt catch it."""
    with attacker(data) as db:
        state = _forged_arrangement(db, played, "recomputed")
        db.execute(
            "INSERT INTO stored_events (originator_id, originator_version, topic, state) "
            "VALUES (?, ?, ?, ?)",
            (played.originator_id, REVEALED + 1, f"{ROUND}.Arranged", json.dumps(state).encode()),
        )
    position = position_of(data, played.originator_id, REVEALED + 1)
    name = event_name(played, mode, "Round.Arranged", REVEALED + 1, position)
    assert_names(audit_store(data, played, mode), "R10.4", name)
    if mode == ONE:
        receipted = audit_store(data, played, mode, "--receipt", played.receipt)
        assert_names(receipted, "CHAIN", name)


@modes
def test_inserted_event_before_the_reveal_is_named(played: Played, data: Path, mode: str) -> None:
    """The Revealed event moved up to version 7 and a forged, correctly linked arrangement put
    at version 6: the reveal's link no longer holds. (The new row sits at the end of the log.)"""
    with attacker(data) as db:
        _, _, arranged = row(db, played.originator_id, 5)
        forged = dict(_forged_arrangement(db, played, "zeros"))
        forged["at"] = forged["timestamp"] = arranged["at"]
        body = canonical(played.stream, REVEALED, f"{ROUND}.Arranged", forged)
        forged[CHAIN] = link(arranged[CHAIN], body)
        db.execute(
            "UPDATE stored_events SET originator_version = ? "
            "WHERE originator_id = ? AND originator_version = ?",
            (REVEALED + 1, played.originator_id, REVEALED),
        )
        db.execute(
            "INSERT INTO stored_events (originator_id, originator_version, topic, state) "
            "VALUES (?, ?, ?, ?)",
            (played.originator_id, REVEALED, f"{ROUND}.Arranged", json.dumps(forged).encode()),
        )
    position = position_of(data, played.originator_id, REVEALED + 1)
    name = event_name(played, mode, "Round.Revealed", REVEALED + 1, position)
    assert_names(audit_store(data, played, mode), "CHAIN", name)


# (d) Reordered events ------------------------------------------------------------------------


@modes
def test_swapped_versions_are_named(played: Played, data: Path, mode: str) -> None:
    """Versions 3 and 4 exchanged: each row keeps its place in the log and its content."""
    with attacker(data) as db:
        for old, new in ((3, -1), (4, 3), (-1, 4)):
            db.execute(
                "UPDATE stored_events SET originator_version = ? "
                "WHERE originator_id = ? AND originator_version = ?",
                (new, played.originator_id, old),
            )
    name = event_name(played, mode, "Round.Arranged", 3, position_of(data, played.originator_id, 3))
    assert_names(audit_store(data, played, mode), "CHAIN", name)


@modes
def test_swapped_states_are_named(played: Played, data: Path, mode: str) -> None:
    """The contents of versions 3 and 4 exchanged, versions and positions kept."""
    with attacker(data) as db:
        _, _, third = row(db, played.originator_id, 3)
        _, _, fourth = row(db, played.originator_id, 4)
        write_state(db, played.originator_id, 3, fourth)
        write_state(db, played.originator_id, 4, third)
    audit = audit_store(data, played, mode)
    for version in (3, 4):
        position = position_of(data, played.originator_id, version)
        assert_names(audit, "CHAIN", event_name(played, mode, "Round.Arranged", version, position))


# Exported rounds, audited offline ------------------------------------------------------------


def test_export_is_canonical_json(played: Played) -> None:
    doc = played.document
    assert (
        json.dumps(json.loads(doc), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        == doc
    )


def _audit_document(tmp_path: Path, document: dict[str, Any] | str, *extra: str) -> Audit:
    path = tmp_path / "export.json"
    text = document if isinstance(document, str) else json.dumps(document, ensure_ascii=False)
    path.write_text(text, encoding="utf-8")
    return run_audit(["--file", str(path), "--json", *extra])


def test_export_audits_clean_offline(played: Played, tmp_path: Path) -> None:
    audit = _audit_document(tmp_path, played.document)
    assert audit.status == 0, audit.stdout + audit.stderr
    assert audit.report["ok"] is True
    receipted = _audit_document(tmp_path, played.document, "--receipt", played.receipt)
    assert receipted.status == 0, receipted.stdout + receipted.stderr


def _round_event(document: dict[str, Any], version: int) -> dict[str, Any]:
    found: dict[str, Any] = next(e for e in document["round_events"] if e["version"] == version)
    return found


def test_edited_card_in_an_export_is_named(played: Played, tmp_path: Path) -> None:
    document = json.loads(played.document)
    dealt = _round_event(document, 1)["state"]
    arranged = _round_event(document, 2)["state"]
    other = next(p for p in dealt["players"] if p != arranged["player_id"])
    arranged["front"][0] = dealt["hands"][other][0]
    audit = _audit_document(tmp_path, document)
    name = event_name(played, ONE, "Round.Arranged", 2, 0)
    assert_names(audit, "CHAIN", name)
    assert_names(audit, "R4.1", name)


def test_edited_coin_in_an_export_is_named(played: Played, tmp_path: Path) -> None:
    document = json.loads(played.document)
    coins = _round_event(document, REVEALED)["state"]["coins"]
    first, second = sorted(coins)[:2]
    coins[first] += 1
    coins[second] -= 1
    audit = _audit_document(tmp_path, document)
    name = event_name(played, ONE, "Round.Revealed", REVEALED, 0)
    assert_names(audit, "CHAIN", name)
    assert_names(audit, "R9", name)


def test_edited_wallet_settlement_in_an_export_is_named(played: Played, tmp_path: Path) -> None:
    document = json.loads(played.document)
    player = sorted(document["wallet_events"])[0]
    settled = document["wallet_events"][player][0]
    settled["state"]["amount"] += 1
    audit = _audit_document(tmp_path, document)
    kind = settled["topic"].rsplit(":", 1)[-1]
    assert settled["position"] == 0  # read by stream: named without a position
    name = f"{kind} event, version {settled['version']} of stream {settled['stream']}"
    assert_names(audit, "CHAIN", name)
    assert any(f["rule"] == "R9" for f in audit.failed())


def test_export_without_its_reveal_fails_against_the_receipt(
    played: Played, tmp_path: Path
) -> None:
    document = json.loads(played.document)
    document["round_events"] = [e for e in document["round_events"] if e["version"] < REVEALED]
    audit = _audit_document(tmp_path, document, "--receipt", played.receipt)
    assert_names(audit, "CHAIN", event_name(played, ONE, "Round.Arranged", 5, 0))


def test_an_edited_wallet_event_outside_any_round_is_named_by_audit_all(tmp_path: Path) -> None:
    """Chains are checked for every stream, not only rounds: a credit's amount edited."""
    source = tmp_path / "source"
    app = open_app(source, environ={"THIRTEEN_STORE": "sqlite"})
    app.credit("zed", 100, "credit-zed")
    app.close()
    data = tmp_path / "edited"
    shutil.copytree(source, data)
    with sqlite3.connect(data / "thirteen.sqlite") as db:
        db.execute("DROP TRIGGER stored_events_no_update")
        ((rowid, state),) = db.execute(
            "SELECT rowid, state FROM stored_events WHERE topic LIKE '%Wallet.Credited'"
        )
        db.execute(
            "UPDATE stored_events SET state = ? WHERE rowid = ?",
            (state.replace(b'"amount":100', b'"amount":900'), rowid),
        )
    done = subprocess.run(
        [str(SCRIPT), "audit", "--data", str(data), "--all"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "THIRTEEN_STORE": "sqlite"},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"event {rowid} (Wallet.Credited" in done.stdout
