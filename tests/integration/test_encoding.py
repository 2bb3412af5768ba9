"""Each event is encoded once, with its chain link, into the bytes the library itself writes
(issue: layout — one encoding per event; STYLE 12)."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from datetime import UTC, timedelta
from enum import IntEnum, StrEnum
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.persistence import (
    DatetimeAsISO,
    DecimalAsStr,
    JSONTranscoder,
    Mapper,
    StoredEvent,
    UUIDAsHex,
)
from hypothesis import given
from hypothesis import strategies as st

from domain.fairness.seeds import KeyRing
from domain.rules.ruleset import FUJIAN, STANDARD
from domain.rules.suggest import suggest
from domain.tlog.chain import StoredRecord, verify_chain
from service.application import Thirteen
from service.eventstore.chaining import ChainingMapper
from service.eventstore.encoding import FastJSONTranscoder
from service.opening import open_app
from tests.fixtures.make_v1_store import StepClock, arrange_all, seeds


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


# orjson underneath (``service.eventstore.encoding``): the same bytes, the same events ----------

FIXTURE = Path(__file__).parent.parent / "fixtures" / "v1_store" / "thirteen.sqlite"


def _transcoders() -> tuple[JSONTranscoder, FastJSONTranscoder]:
    """The library's transcoder with the application's transcodings, and the fast one."""
    old = JSONTranscoder()
    for transcoding in (UUIDAsHex(), DecimalAsStr(), DatetimeAsISO()):  # as the app's
        old.register(transcoding)
    return old, FastJSONTranscoder.like(old)


def _fixture_events() -> list[StoredEvent]:
    # immutable: SQLite then writes nothing beside the fixture, not even its -wal and -shm
    with closing(sqlite3.connect(f"file:{FIXTURE}?mode=ro&immutable=1", uri=True)) as db:
        rows = db.execute(
            "SELECT originator_id, originator_version, topic, state FROM stored_events "
            "ORDER BY rowid"
        ).fetchall()
    return [StoredEvent(UUID(s), v, t, state) for s, v, t, state in rows]


def _long_game(tmp_path: Path) -> list[StoredEvent]:
    """A store of many rounds on two rulesets: fouls, specials declared, escapes, abandoned
    rounds, top-ups and debits; deterministic seeds, so it is the same store every run."""
    clock = StepClock()
    app = open_app(tmp_path, clock=clock, environ={"THIRTEEN_STORE": "sqlite"})
    app._seed_keys = KeyRing.of([bytes(32)])
    app.nonces = seeds()
    players = ["ann", "bob", "cat", "dan", "eve", "fay"]
    for i, player in enumerate(players):
        app.credit(player, 100_000 + i, f"in-{player}")
    app.open_table("t-standard", STANDARD, "open-1")
    app.open_table("t-fujian", FUJIAN, "open-2")
    tables = {"t-standard": players[:4], "t-fujian": players[4:]}
    for table_id, seated in tables.items():
        for player in seated:
            app.sit_down(table_id, player)
    for n in range(24):
        table_id = "t-standard" if n % 3 else "t-fujian"
        dealt = app.deal(table_id, f"client-{n}", f"deal-{n}")
        if n % 5 == 4:  # an escape (R11); at the two-player table the round is abandoned
            app.stand_up(table_id, dealt.players[-1])
        round_ = app.round(dealt.round_id)
        if not round_.ended:
            for player in round_.active:
                hint = suggest(list(round_.hand(player)), round_.ruleset)
                if hint.specials:
                    app.arrange(round_.round_id, player, [], [], [], special="any")
            arrange_all(app, app.round(round_.round_id), foul_player=dealt.players[n % 2])
            clock.at += timedelta(seconds=600)  # past the deadline: fouls stand (R4.3)
            app.reveal(round_.round_id)
        if n % 5 == 4:
            app.sit_down(table_id, dealt.players[-1])
        app.credit(players[n % 6], 7, f"top-{n}")
        app.debit(players[(n + 1) % 6], 3, f"out-{n}")
    stored = app.recorder.select_notifications(start=1, limit=100_000)
    app.close()
    return list(stored)


def _assert_same_both_ways(stored: list[StoredEvent]) -> None:
    """Each stored state decodes alike with either transcoder and encodes again to exactly the
    stored bytes; each event (upcast, if its class has moved on) decodes alike and re-encodes to
    the same bytes."""
    old, new = _transcoders()
    old_mapper: Mapper[UUID] = Mapper(transcoder=old)
    new_mapper: Mapper[UUID] = Mapper(transcoder=new)
    for record in stored:
        state = old.decode(record.state)
        assert repr(new.decode(record.state)) == repr(state)
        assert new.encode(state) == old.encode(state) == record.state, record.topic
        event = old_mapper.to_domain_event(record)
        assert vars(new_mapper.to_domain_event(record)) == vars(event)
        again = old_mapper.to_stored_event(event).state
        assert new_mapper.to_stored_event(event).state == again, record.topic


def _assert_chained_alike(stored: list[StoredEvent]) -> None:
    """Linked into its stream as the writer does it, each event gives orjson's and json's
    paths the same bytes, chain hash and leaf hash."""
    old, _ = _transcoders()
    fast, slow = ChainingMapper(old), ChainingMapper(old)
    heads: dict[UUID, str] = {}
    for record in stored:
        event = fast.to_domain_event(record)
        stream = UUID(str(record.originator_id))
        for mapper in (fast, slow):
            mapper.previous = {stream: heads.get(stream, "")}
            mapper.leaves = {}
        quick = fast.encode(event, fast=True)
        plain = slow.encode(event, fast=False)
        assert quick.state == plain.state, record.topic
        assert fast.previous == slow.previous and fast.leaves == slow.leaves
        assert fast.previous is not None
        heads[stream] = fast.previous[stream]


def test_every_event_of_the_first_versions_store_encodes_alike_with_orjson() -> None:
    stored = _fixture_events()
    assert len(stored) > 50
    _assert_same_both_ways(stored)
    _assert_chained_alike(stored)


def test_every_event_of_a_long_game_encodes_alike_with_orjson(tmp_path: Path) -> None:
    stored = _long_game(tmp_path)
    topics = {record.topic.rsplit(".", 1)[-1] for record in stored}
    expected = {"SpecialDeclared", "PlayerEscaped", "Abandoned", "Revealed", "Debited"}
    assert expected <= topics, topics
    _assert_same_both_ways(stored)
    _assert_chained_alike(stored)


class _Event:
    """Just what the mapper reads of an event: a stream, a version and some state."""

    def __init__(self, value: Any) -> None:
        self.originator_id = UUID(int=1)
        self.originator_version = 1
        self.value = value


class _Suit(StrEnum):  # subclasses of str and int: written as their base type, not walked past
    SPADES = "s"
    HEARTS = "h"


class _Rank(IntEnum):
    ACE = 14


_KEYS = st.one_of(
    st.text(max_size=4),
    st.integers(),
    st.booleans(),
    st.floats(),
    st.none(),
    st.sampled_from(_Suit),
    st.just(_Rank.ACE),
)
_LEAVES = st.one_of(
    st.none(),
    st.sampled_from(_Suit),
    st.just(_Rank.ACE),
    st.booleans(),
    st.integers(),  # beyond 64 bits too: orjson refuses those, json writes them
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),  # nan, inf, -0.0, 1e+16: json's text, not orjson's
    st.text(),  # any code point, control characters, U+2028, astral planes
    st.uuids(),
    st.decimals(allow_nan=False),
    st.datetimes(timezones=st.just(UTC)),
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(_KEYS, inner, max_size=4),
    ),
    max_leaves=20,
)


@given(_VALUES)
def test_awkward_values_encode_and_decode_as_json_does(value: Any) -> None:
    old, new = _transcoders()
    try:
        expected = old.encode(value)
    except (TypeError, ValueError) as refused:  # a None key the library itself refuses …
        with pytest.raises(type(refused)):
            new.encode(value)
    else:
        assert new.encode(value) == expected
        assert repr(new.decode(expected)) == repr(old.decode(expected))
    fast, slow = ChainingMapper(new), ChainingMapper(old)
    for mapper in (fast, slow):
        mapper.previous, mapper.leaves = {UUID(int=1): ""}, {}
    assert fast.to_stored_event(_Event(value)).state == slow.encode(_Event(value), fast=False).state
    assert fast.previous == slow.previous and fast.leaves == slow.leaves


def test_deeper_than_orjson_goes_is_written_and_read_by_json() -> None:
    old, new = _transcoders()
    deep: Any = 1
    for _ in range(300):
        deep = [deep]
    assert new.encode(deep) == old.encode(deep)
    assert new.decode(old.encode(deep)) == deep
