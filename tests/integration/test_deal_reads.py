"""Issue 21, no lookups that cannot find anything: a Deal with a request id looks for the round
that request dealt only when its table lists that round (``Table.has_round``, R10.1: every round
starts at its table); a retry still answers the round it dealt (R12.2), on SQLite and on
PostgreSQL, also from a replica whose table missed the deal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from domain.ids import deal_round_id, round_uuid
from domain.rules.ruleset import STANDARD
from service.application import Thirteen
from service.errors import AlreadyExists
from service.opening import open_app
from tests.support.stores import store_environ


@pytest.fixture(params=["sqlite", "postgres"])
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Thirteen]:
    with store_environ(request.param, tmp_path) as environ:
        opened = open_app(tmp_path / "data", environ=environ)
        try:
            yield opened
        finally:
            opened.close()


def _seated(app: Thirteen, table_id: str = "t") -> None:
    app.open_table(table_id, STANDARD)
    for player in ("a", "b", "c"):
        app.credit(player, 1000, f"in-{player}-{table_id}")
        app.sit_down(table_id, player)


def _reads_of(app: Thirteen, monkeypatch: pytest.MonkeyPatch) -> list[UUID]:
    """The streams the store is asked for, from now on."""
    streams: list[UUID] = []
    select = app.recorder.select_events

    def counting(originator_id: UUID, *args: Any, **kwargs: Any) -> Any:
        streams.append(originator_id)
        return select(originator_id, *args, **kwargs)

    monkeypatch.setattr(app.recorder, "select_events", counting)
    return streams


def test_r10_1_a_new_deal_does_not_read_the_rounds_stream(
    app: Thirteen, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seated(app)
    reads = _reads_of(app, monkeypatch)
    dealt = app.deal("t", "seed", "r1")
    assert round_uuid(dealt.round_id) not in reads
    assert dealt.round_id == deal_round_id("t", "r1")


def test_r12_2_a_retried_deal_reads_its_round_and_answers_it(app: Thirteen, tmp_path: Path) -> None:
    _seated(app)
    dealt = app.deal("t", "seed", "r1")
    mark = app.max_position()
    again = app.deal("t", "seed", "r1")
    assert (again.round_id, again.hands) == (dealt.round_id, dealt.hands)
    with pytest.raises(AlreadyExists):
        app.deal("t", "other seed", "r1")
    assert app.max_position() == mark


def test_r12_2_a_retried_deal_after_a_restart_answers_the_round_it_dealt(tmp_path: Path) -> None:
    environ = {"THIRTEEN_STORE": "sqlite"}
    app = open_app(tmp_path, environ=environ)
    _seated(app)
    dealt = app.deal("t", "seed", "r1")
    app.close()
    app = open_app(tmp_path, environ=environ)  # nothing held: the table is read from the store
    try:
        again = app.deal("t", "seed", "r1")
        assert (again.round_id, again.hands) == (dealt.round_id, dealt.hands)
        assert app.table("t").round_ids == [dealt.round_id]
    finally:
        app.close()


def test_r12_2_a_replica_whose_table_missed_the_deal_answers_the_round_dealt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replica B holds the table from before A dealt the request, and does not look at the log
    before its batch (its catch-up is held back): its table does not list the round, so it
    deals it again, and that commit fails on the streams' versions; run again from fresh loads,
    the deal finds A's round and answers it. Nothing is dealt twice."""
    with store_environ("postgres", tmp_path) as environ:
        shared = tmp_path / "seed.key"  # replicas of one store share the seed key file
        a = open_app(tmp_path / "a", environ=environ, seed_key=shared)
        b = open_app(tmp_path / "b", environ=environ, seed_key=shared)
        try:
            _seated(a)
            b.sit_down("t", "a")  # B holds the table now (a seated player: nothing changes)
            dealt = a.deal("t", "seed", "r1")
            monkeypatch.setattr(b.writer, "_catch_up", lambda: None)
            again = b.deal("t", "seed", "r1")
            assert (again.round_id, again.hands) == (dealt.round_id, dealt.hands)
            assert b.table("t").round_ids == a.table("t").round_ids == [dealt.round_id]
            assert len(a.recorder.select_events(round_uuid(dealt.round_id))) == 1
        finally:
            b.close()
            a.close()
