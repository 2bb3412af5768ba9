"""R12.8 on the pure Round aggregate: a deal takes each player's seed, records them in its
``Dealt`` event (class version 2) and deals from the effective client seed; a ``Dealt`` stored
before player seeds existed (class version 1) reads as a deal without any."""

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from eventsourcing.persistence import (
    DatetimeAsISO,
    JSONTranscoder,
    Mapper,
    StoredEvent,
    UUIDAsHex,
)

from domain.dealing import deal_record
from domain.errors import RuleError
from domain.fairness.proof import prove
from domain.fairness.shuffle import commitment, deal
from domain.round import Round
from domain.rules.ruleset import STANDARD

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
SEATS = ["p0", "p1", "p2", "p3"]
R12_8 = [  # RULES.md R12.8's test vector
    "4h 9s 7h Tc Jd 7d 4s 6s 6d Kh Ad Ks Jc".split(),
    "9c Js 6h Ah 8d 2s 5h 5s Kc 8h 2c 3s 4d".split(),
    "6c 8c As 2h Qd 7s 9h 7c Jh Ts 8s 5d 3c".split(),
    "Td 5c 4c Kd 3d Qh Qs Th Ac 9d 2d Qc 3h".split(),
]


def dealt(player_seeds: dict[str, str] | None = None) -> Round:
    """The R12.7 inputs as a round: server seed of 32 zero bytes, client seed ``client``,
    round id ``r1``, four players p0 … p3."""
    return Round(
        **deal_record(
            round_id="r1",
            table_id="t1",
            number=1,
            balances=dict.fromkeys(SEATS, 1000),
            server_seed=bytes(32),
            client_seed="client",
            ruleset=STANDARD,
            at=T0,
            player_seeds=player_seeds,
        )
    )


def mapper() -> Mapper[Any]:
    transcoder = JSONTranscoder()
    for transcoding in (UUIDAsHex(), DatetimeAsISO()):
        transcoder.register(transcoding)
    return Mapper(transcoder=transcoder)


def test_r12_8_a_deal_with_player_seeds_deals_the_test_vector_and_records_them() -> None:
    round_ = dealt({"p3": "d", "p0": "a", "p1": "b"})
    assert [round_.hands[p] for p in SEATS] == R12_8
    assert round_.client_seed == "client"  # the caller's own; the effective one is derived
    assert round_.player_seeds == {"p0": "a", "p1": "b", "p3": "d"}  # seat order
    assert list(round_.player_seeds) == ["p0", "p1", "p3"]
    assert round_.seat_seeds == [("p0", "a"), ("p1", "b"), ("p2", ""), ("p3", "d")]
    [event] = round_.collect_events()
    assert isinstance(event, Round.Dealt)
    assert event.player_seeds == {"p0": "a", "p1": "b", "p3": "d"}
    assert Round.Dealt.class_version == 2


def test_r12_8_without_player_seeds_the_deal_is_r12_7s() -> None:
    plain, empty = dealt(), dealt({"p0": "", "p2": ""})  # an empty seed is none given
    expected = [list(map(str, hand)) for hand in deal(bytes(32), "client", "r1", 4)]
    assert [plain.hands[p] for p in SEATS] == expected
    assert [empty.hands[p] for p in SEATS] == expected
    assert plain.player_seeds == empty.player_seeds == {}


@pytest.mark.parametrize(
    ("seeds", "says"),
    [
        ({"p4": "x"}, "'p4' is not dealt into the round"),
        ({"p0": "a", "": "x"}, "'' is not dealt into the round"),
        ({"p1": "x" * 65}, "player_seeds['p1']: player_seed must be printable and at most 64"),
        ({"p2": "line\nbreak"}, "player_seeds['p2']"),
    ],
)
def test_r12_8_a_seed_from_anyone_not_dealt_in_or_a_bad_seed_refuses_the_deal(
    seeds: dict[str, str], says: str
) -> None:
    with pytest.raises(RuleError) as refused:
        dealt(seeds)
    assert refused.value.field == "player_seeds"
    assert says in refused.value.message


def test_r12_8_a_first_version_dealt_event_upcasts_to_a_deal_without_player_seeds() -> None:
    """STYLE 14: a ``Dealt`` stored before R12.8 (no ``player_seeds``, no class version)
    decodes with ``player_seeds`` empty, rebuilds the same round, and its deal still proves
    fair from the client seed alone."""
    round_ = dealt()
    [event] = round_.collect_events()
    stored = mapper().to_stored_event(event)
    state = json.loads(stored.state)
    del state["player_seeds"], state["class_version"]  # as the first version stored it
    old = StoredEvent(
        stored.originator_id, stored.originator_version, stored.topic, json.dumps(state).encode()
    )
    decoded = mapper().to_domain_event(old)
    assert isinstance(decoded, Round.Dealt)
    assert decoded.player_seeds == {}
    rebuilt = decoded.mutate(None)
    assert isinstance(rebuilt, Round)
    assert rebuilt.player_seeds == {} and rebuilt.hands == round_.hands
    hands = [rebuilt.hands[p] for p in rebuilt.players]
    proof = prove(bytes(32).hex(), commitment(bytes(32)), "client", "r1", hands, rebuilt.seat_seeds)
    assert proof.fair


def test_r12_8_a_new_dealt_event_stores_its_seeds_and_class_version_2() -> None:
    [event] = dealt({"p1": "b"}).collect_events()
    stored = mapper().to_stored_event(event)
    assert b'"player_seeds":{"p1":"b"}' in stored.state
    assert stored.state.endswith(b'"class_version":2}')
    restored = mapper().to_domain_event(stored)
    assert isinstance(restored, Round.Dealt)
    assert restored.player_seeds == {"p1": "b"}
