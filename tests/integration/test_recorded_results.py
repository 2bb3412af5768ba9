"""Stored events are forever (STYLE 14): the ``Revealed`` events the first version stored
(``tests/fixtures/v1_store``, read only here) carry no recorded showdown and no class version.
They decode through the upcast, and their rounds give, scored from their own events (R9.3), the
points and coins they recorded. A new reveal stores class version 2 with its showdown, and
every chain link still holds."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent

from domain.ids import round_uuid
from domain.recorded import record
from domain.results import round_result
from domain.round import Round
from domain.rules.ruleset import STANDARD
from domain.rules.suggest import suggest
from domain.tlog.chain import StoredRecord, verify_chain
from service.evidence import Decoder
from service.opening import open_app

FIXTURE = Path(__file__).parent.parent / "fixtures" / "v1_store" / "thirteen.sqlite"


def _v1_streams() -> dict[UUID, list[StoredEvent]]:
    """Every stream of the fixture that holds a ``Revealed`` event, in version order."""
    # immutable: SQLite then writes nothing beside the fixture, not even its -wal and -shm
    with closing(sqlite3.connect(f"file:{FIXTURE}?mode=ro&immutable=1", uri=True)) as db:
        rows = db.execute(
            "SELECT originator_id, originator_version, topic, state FROM stored_events "
            "WHERE originator_id IN (SELECT originator_id FROM stored_events "
            "WHERE topic = 'domain.round:Round.Revealed') ORDER BY originator_id, "
            "originator_version"
        ).fetchall()
    streams: dict[UUID, list[StoredEvent]] = {}
    for stream, version, topic, state in rows:
        streams.setdefault(UUID(stream), []).append(
            StoredEvent(UUID(stream), version, topic, state)
        )
    return streams


def test_first_version_revealed_events_are_upcast_and_score_as_they_recorded() -> None:
    streams = _v1_streams()
    assert len(streams) == 3  # a foul, a plain showdown, one after an escape
    decoder = Decoder()
    for stored in streams.values():
        assert "class_version" not in json.loads(stored[-1].state)
        events: list[Any] = [decoder.mapper.to_domain_event(s) for s in stored]
        revealed = events[-1]
        assert isinstance(revealed, Round.Revealed) and revealed.result is None
        round_: Any = None
        for event in events:
            round_ = event.mutate(round_)
        assert isinstance(round_, Round)
        outcome = round_.revealed_outcome()
        assert outcome is not None
        assert {p.player_id: p.points for p in outcome.score.players} == revealed.points
        assert outcome.coins == revealed.coins
        assert round_result(round_).players == round_result(round_, round_.outcome()).players


def _reveal_a_round(app: Any) -> str:
    app.open_table("t", STANDARD)
    for player in ("a", "b", "c"):
        app.credit(player, 1000, f"in-{player}")
        app.sit_down("t", player)
    dealt = app.deal("t", "seed")
    for player in dealt.players:
        best = suggest(list(dealt.hand(player)), STANDARD).arrangement
        app.arrange(dealt.round_id, player, best.front, best.middle, best.back)
    app.reveal(dealt.round_id)
    return str(dealt.round_id)


def test_a_new_reveal_stores_its_showdown_as_class_version_2_inside_the_chain(
    tmp_path: Path,
) -> None:
    app = open_app(tmp_path, environ={"THIRTEEN_STORE": "sqlite"})
    try:
        round_id = _reveal_a_round(app)
        stored = app.recorder.select_events(round_uuid(round_id))
        state = json.loads(stored[-1].state)
        assert stored[-1].topic == "domain.round:Round.Revealed"
        assert state["class_version"] == 2
        outcome = app.round(round_id).revealed_outcome()
        assert outcome is not None and state["result"] == record(outcome.score)
        records = [
            StoredRecord(
                0, str(s.originator_id), s.originator_version, s.topic, json.loads(s.state)
            )
            for s in stored
        ]
        assert verify_chain(records) == []
    finally:
        app.close()
