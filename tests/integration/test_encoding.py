"""Each event is encoded once, with its chain link, into the bytes the library itself writes
(issue: layout — one encoding per event; STYLE 12)."""

from __future__ import annotations

import json
from pathlib import Path
from uuid import UUID

from eventsourcing.persistence import Mapper

from domain.rules.ruleset import STANDARD
from domain.rules.suggest import suggest
from domain.tlog.chain import StoredRecord, verify_chain
from service.application import Thirteen
from service.eventstore.chaining import ChainingMapper
from service.opening import open_app


def _arranged_round(app: Thirteen) -> str:
    app.open_table("t", STANDARD)
    for player in ("a", "b", "c"):
        app.credit(player, 1000, f"in-{player}")
        app.sit_down("t", player)
    dealt = app.deal("t", "seed")
    for player in dealt.players:
        best = suggest(list(dealt.hand(player)), STANDARD).arrangement
        app.arrange(dealt.round_id, player, best.front, best.middle, best.back)
    return dealt.round_id


def test_a_reveal_encodes_each_new_event_once(tmp_path: Path) -> None:
    app = open_app(tmp_path, environ={"THIRTEEN_STORE": "sqlite"})
    round_id = _arranged_round(app)
    mapper = app.mapper
    assert isinstance(mapper, ChainingMapper)
    before, position = mapper.encoded, app.max_position()
    app.reveal(round_id)
    stored = app.max_position() - position
    assert stored == 1 + 1 + 3  # the round, the table, three wallets
    assert mapper.encoded - before == stored
    app.close()


def test_stored_bytes_are_what_the_library_writes_and_every_link_holds(tmp_path: Path) -> None:
    app = open_app(tmp_path, environ={"THIRTEEN_STORE": "sqlite"})
    app.reveal(_arranged_round(app))
    plain: Mapper[UUID] = Mapper(transcoder=app.mapper.transcoder)
    streams: dict[str, list[StoredRecord]] = {}
    for notification in app.recorder.select_notifications(start=1, limit=1000):
        again = plain.to_stored_event(app.mapper.to_domain_event(notification))
        assert again.state == notification.state, notification.topic
        streams.setdefault(str(notification.originator_id), []).append(
            StoredRecord(
                notification.id,
                str(notification.originator_id),
                notification.originator_version,
                notification.topic,
                json.loads(notification.state),
            )
        )
    assert streams
    for records in streams.values():
        assert verify_chain(records) == []
    app.close()
