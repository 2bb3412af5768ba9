"""Existing tables move to the seed key scheme at their next round (issue 11, STYLE 14). The
first version stored each table's next server seed in clear in ``Table.Opened`` and
``Table.RoundEnded`` (``tests/fixtures/v1_store``, copied, never changed): such a table deals and
reveals that seed, and at the round's end commits with a key id and nonce and no seed. Old and
new events decode, and the whole store still audits clean, every chain link included."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from eventsourcing.persistence import StoredEvent

from domain.fairness.seeds import derive_seed
from domain.fairness.shuffle import commitment
from domain.ids import table_uuid
from domain.rules.ruleset import FUJIAN
from domain.rules.suggest import suggest
from service.application import Thirteen
from service.evidence import Decoder, StoreReader, audit
from service.opening import open_app

FIXTURE = Path(__file__).parent.parent / "fixtures" / "v1_store"
SQLITE = {"THIRTEEN_STORE": "sqlite"}


def _table_states(app: Thirteen, table_id: str) -> list[tuple[str, dict[str, Any]]]:
    """The table's events as stored: topic and JSON state."""
    return [
        (s.topic.rsplit(".", 1)[-1], json.loads(s.state))
        for s in app.recorder.select_events(table_uuid(table_id))
    ]


def _audit_everything(app: Thirteen) -> list[Any]:
    """Every failed finding of the whole store: every round, every stream's chain."""
    reader = StoreReader(app, lambda _: None)
    decoder = Decoder()
    failed = []
    for evidence, findings in reader.every_round():
        failed += [f for f in findings if not f.ok]
        if evidence is not None:
            failed += [f for f in audit(evidence, decoder) if not f.ok]
    return failed


def _arrange_all(app: Thirteen, round_id: str) -> None:
    round_ = app.round(round_id)
    for player in round_.active:
        best = suggest(list(round_.hand(player)), round_.ruleset).arrangement
        app.arrange(round_id, player, best.front, best.middle, best.back)


def test_a_first_version_table_reveals_its_clear_seed_then_commits_under_the_key(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    shutil.copytree(FIXTURE, data)
    app = open_app(data, environ=SQLITE)
    try:
        assert app.table("t-standard").dealer == ""  # opened before dealers were recorded
        last_v1 = [s for k, s in _table_states(app, "t-fujian") if k == "RoundEnded"][-1]
        assert "class_version" not in last_v1
        clear = last_v1["server_seed"]  # what the first version left at rest
        open_round = app.table("t-fujian").current_round
        assert open_round is not None
        revealed = app.reveal(open_round).round
        assert revealed.server_seed == clear and revealed.commitment == last_v1["commitment"]
        kind, ended = _table_states(app, "t-fujian")[-1]
        assert kind == "RoundEnded" and ended["class_version"] == 2
        assert ended["server_seed"] == "" and ended["seed_key"] == app.seed_keys.current
        key = app.seed_keys.key(ended["seed_key"])
        table = app.table("t-fujian")
        seed = derive_seed(
            key, "t-fujian", table.committed_number, bytes.fromhex(ended["seed_nonce"])
        )
        assert ended["commitment"] == commitment(seed)
        dealt = app.deal("t-fujian", "after")
        _arrange_all(app, dealt.round_id)
        assert app.reveal(dealt.round_id).round.server_seed == seed.hex()
        assert _audit_everything(app) == []
    finally:
        app.close()


def _first_version_opening(table_id: str) -> StoredEvent:
    """The fixture's ``Table.Opened`` of ``table_id``: the first event of its stream, exactly
    as the first version stored it (its next seed in clear)."""
    store = FIXTURE / "thirteen.sqlite"
    with closing(sqlite3.connect(f"file:{store}?mode=ro&immutable=1", uri=True)) as db:
        (state,) = db.execute(
            "SELECT state FROM stored_events WHERE originator_id = ? AND originator_version = 1",
            (table_uuid(table_id).hex,),
        ).fetchone()
    return StoredEvent(table_uuid(table_id), 1, "domain.table:Table.Opened", state)


def test_a_table_opened_by_the_first_version_deals_its_clear_seed_then_moves_on(
    tmp_path: Path,
) -> None:
    """A store holding only a first-version opening (a table that never dealt): its first
    round is dealt from the seed in clear, and from that round's end on the table publishes
    a key id and a nonce, never a seed, and deals from the derived seed."""
    opened = _first_version_opening("t-fujian")
    state = json.loads(opened.state)
    assert "class_version" not in state and "seed_key" not in state
    clear = bytes.fromhex(state["server_seed"])
    app = open_app(tmp_path / "data", environ=SQLITE)
    try:
        app.recorder.insert_events([opened])
        for player in ("ann", "bob"):
            app.credit(player, 10_000, f"in-{player}")
            app.sit_down("t-fujian", player)
        assert app.table("t-fujian").ruleset == FUJIAN
        first = app.deal("t-fujian", "c1")
        assert first.commitment == state["commitment"] == commitment(clear)
        _arrange_all(app, first.round_id)
        assert app.reveal(first.round_id).round.server_seed == clear.hex()
        kind, ended = _table_states(app, "t-fujian")[-1]
        assert kind == "RoundEnded" and ended["server_seed"] == ""
        assert (ended["class_version"], ended["seed_key"]) == (2, app.seed_keys.current)
        nonce = bytes.fromhex(ended["seed_nonce"])
        assert len(nonce) == 16
        seed = derive_seed(app.seed_keys.key(ended["seed_key"]), "t-fujian", 2, nonce)
        stored = b"".join(s.state for s in app.recorder.select_notifications(start=1, limit=1000))
        assert seed.hex().encode() not in stored and seed not in stored
        second = app.deal("t-fujian", "c2")
        assert second.commitment == ended["commitment"] == commitment(seed)
        app.stand_up("t-fujian", "ann")  # an escape leaving one player: ends the round (R11.3)
        assert app.round(second.round_id).server_seed == seed.hex()
        assert _audit_everything(app) == []
    finally:
        app.close()
