"""Player seeds (R12.8) and the store written by the first version (``tests/fixtures/v1_store``,
copied, never changed; STYLE 14). Its ``Round.Dealt`` events have no ``player_seeds`` and no
class version: they decode through the upcast as deals without player seeds and still prove
fair from the client seed alone, their bytes and chain links untouched. On the same store a
new deal with player seeds stores class version 2, and the whole store audits clean."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent

from domain.fairness.proof import prove
from domain.ids import round_uuid
from domain.round import Round
from domain.rules.suggest import suggest
from service.evidence import Decoder, StoreReader, audit
from service.opening import open_app

FIXTURE = Path(__file__).parent.parent / "fixtures" / "v1_store"
DEALT = "domain.round:Round.Dealt"


def _v1_rounds() -> dict[UUID, list[StoredEvent]]:
    """Every round stream of the fixture, in version order."""
    store = FIXTURE / "thirteen.sqlite"
    with closing(sqlite3.connect(f"file:{store}?mode=ro&immutable=1", uri=True)) as db:
        rows = db.execute(
            "SELECT originator_id, originator_version, topic, state FROM stored_events "
            "WHERE originator_id IN (SELECT originator_id FROM stored_events WHERE topic = ?) "
            "ORDER BY originator_id, originator_version",
            (DEALT,),
        ).fetchall()
    streams: dict[UUID, list[StoredEvent]] = {}
    for stream, version, topic, state in rows:
        streams.setdefault(UUID(stream), []).append(
            StoredEvent(UUID(stream), version, topic, state)
        )
    return streams


def test_r12_8_first_version_deals_read_as_deals_without_player_seeds_and_prove_fair() -> None:
    streams = _v1_rounds()
    assert streams
    decoder = Decoder()
    ended = 0
    for stored in streams.values():
        first = json.loads(stored[0].state)
        assert "player_seeds" not in first and "class_version" not in first
        events: list[Any] = [decoder.mapper.to_domain_event(s) for s in stored]
        assert isinstance(events[0], Round.Dealt) and events[0].player_seeds == {}
        round_: Any = None
        for event in events:
            round_ = event.mutate(round_)
        assert isinstance(round_, Round)
        assert round_.player_seeds == {}
        if round_.server_seed is None:
            continue  # still in progress in the fixture
        ended += 1
        hands = [round_.hands[p] for p in round_.players]
        proof = prove(
            round_.server_seed,
            round_.commitment,
            round_.client_seed,
            round_.round_id,
            hands,
            round_.seat_seeds,
        )
        assert proof.fair, round_.round_id
    assert ended >= 3


def test_r12_8_a_seeded_deal_on_a_first_version_store_audits_clean_with_the_old_rounds(
    tmp_path: Path,
) -> None:
    """A table of the first version deals with player seeds once its open round is revealed:
    the new ``Dealt`` is class version 2 with the seeds, and every round, old and new, audits
    clean, every chain link included."""
    data = tmp_path / "data"
    shutil.copytree(FIXTURE, data)
    app = open_app(data, environ={"THIRTEEN_STORE": "sqlite"})
    try:
        open_round = app.table("t-fujian").current_round
        assert open_round is not None
        app.reveal(open_round)
        seeds = {"dan": "dan's phone", "eve": "eve's phone"}
        round_ = app.deal("t-fujian", "after v1", player_seeds=seeds)
        assert round_.player_seeds == {"eve": "eve's phone", "dan": "dan's phone"}  # seat order
        for player in round_.active:
            best = suggest(list(round_.hand(player)), round_.ruleset).arrangement
            app.arrange(round_.round_id, player, best.front, best.middle, best.back)
        app.reveal(round_.round_id)
        state = json.loads(app.recorder.select_events(round_uuid(round_.round_id))[0].state)
        assert state["class_version"] == 2
        assert state["player_seeds"] == {"eve": "eve's phone", "dan": "dan's phone"}
        reader = StoreReader(app, lambda _: None)
        decoder = Decoder()
        failed, rule_ids = [], set()
        for evidence, findings in reader.every_round():
            failed += [f for f in findings if not f.ok]
            if evidence is not None:
                checked = audit(evidence, decoder)
                failed += [f for f in checked if not f.ok]
                rule_ids |= {f.rule for f in checked}
        assert failed == []
        assert {"R12", "R12.8"} <= rule_ids  # old rounds as before, the new one with seeds
    finally:
        app.close()
