"""A round's result is recorded once, with the ``Revealed`` event that decided it (STYLE 12),
and read back unchanged; a ``Revealed`` event of class version 1, which recorded no
showdown, is upcast and scored from the round's own events (R9.3, STYLE 14)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from eventsourcing.application import project_aggregate
from eventsourcing.persistence import (
    DatetimeAsISO,
    JSONTranscoder,
    Mapper,
    StoredEvent,
    UUIDAsHex,
)

import domain.round
from domain.dealing import deal_record
from domain.recorded import record, recorded_score
from domain.results import round_result
from domain.round import Round
from domain.rules.play import NO_ARRANGEMENT, declare
from domain.rules.ruleset import FUJIAN, STANDARD, Ruleset
from domain.rules.scoring import PileScore, RoundScore, Seat, score_round
from domain.rules.suggest import suggest

from .helpers import cards, seat

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
SEED = bytes(range(32))
A3 = "Ks Kh 2c | 9s 9c 9d 5h 5d | 4c 5c 6c 7c 8c"
B3 = "2d 3h 4h | 5s 6d 6h 7h 8s | Tc Js Qd Kd As"
C3 = "4d 6s 7d | 8d 8h Td Ts Jd | Jh Qh Qs Ad Ah"
D3 = "2h 2s 3c | 3d 3s 4s 7s 9h | Th Jc Qc Kc Ac"
D4 = "3d 3s 3c | 2h 2s 4s 7s 9h | Th Jc Qc Kc Ac"
SIX_PAIRS = "2d 2h 3h 3d 4h 4d 6d 6h 8s 8h Td Ts As"
THREE_FLUSHES = "Js Qs 5s 2s 3s 4s 6s 7s Jh Qh Ah 7h Th"


def _mapper() -> Mapper[Any]:
    transcoder = JSONTranscoder()
    for transcoding in (UUIDAsHex(), DatetimeAsISO()):
        transcoder.register(transcoding)
    return Mapper(transcoder=transcoder)


def _played(players: str = "ABCD") -> tuple[Round, list[Any]]:
    """A round dealt from ``SEED``: A arranges foul, B declares what its cards hold (or
    arranges), C arranges well, D never arranges; revealed after the deadline."""
    round_ = Round(
        **deal_record(
            round_id="r1",
            table_id="t1",
            number=1,
            balances={"A": 1000, "B": 600, "C": 90, "D": 2000},
            server_seed=SEED,
            client_seed="c",
            ruleset=STANDARD,
            at=T0,
        )
    )
    foul = suggest(round_.hand("A"), STANDARD).arrangement
    round_.arrange("A", list(foul.front), list(foul.back), list(foul.middle), T0)
    for player in "BC":
        best = suggest(round_.hand(player), STANDARD).arrangement
        round_.arrange(player, list(best.front), list(best.middle), list(best.back), T0)
    round_.reveal(SEED, T0 + timedelta(minutes=5))
    return round_, list(round_.collect_events())


def _refuse(seats: Any, ruleset: Any) -> Any:
    raise AssertionError("the showdown was scored again")


def test_r6_the_reveal_records_the_scored_showdown_with_its_event() -> None:
    round_, events = _played()
    revealed = events[-1]
    outcome = round_.revealed_outcome()
    assert isinstance(revealed, Round.Revealed) and outcome is not None
    assert revealed.result == record(outcome.score)
    assert revealed.points == {p.player_id: p.points for p in outcome.score.players}
    assert revealed.coins == outcome.coins
    fouls = {p["player_id"]: p["foul_reason"] for p in revealed.result["players"]}
    assert fouls["A"] and fouls["D"] == "no arrangement" and fouls["C"] is None
    pair = revealed.result["pairs"][-1]  # C and D: D has no arrangement (R4.3, R6.3)
    assert [(p["result"], p["b"]) for p in pair["piles"]] == [(1, "foul")] * 3


def test_r9_3_a_round_folded_from_its_events_copies_the_result_it_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """STYLE 12: reading a revealed round scores nothing."""
    round_, events = _played()
    monkeypatch.setattr(domain.round, "score_round", _refuse)
    again = project_aggregate(None, events)  # as the library's repository folds a stream
    assert isinstance(again, Round)
    assert again.revealed_outcome() == round_.revealed_outcome()
    assert round_result(again) == round_result(round_)


def test_r6_the_stored_event_is_of_class_version_2_and_decodes_to_itself() -> None:
    _, events = _played()
    mapper = _mapper()
    stored = mapper.to_stored_event(events[-1])
    state = json.loads(stored.state)
    assert state["class_version"] == 2 and state["result"] == events[-1].result
    decoded = mapper.to_domain_event(stored)
    assert isinstance(decoded, Round.Revealed) and decoded.result == events[-1].result


def _as_version_1(stored: StoredEvent) -> StoredEvent:
    """The event as the first version stored it: no ``result``, no ``class_version``."""
    state = json.loads(stored.state)
    del state["result"], state["class_version"]
    return StoredEvent(
        originator_id=stored.originator_id,
        originator_version=stored.originator_version,
        topic=stored.topic,
        state=json.dumps(state).encode(),
    )


def test_r9_3_a_version_1_revealed_event_is_upcast_and_scored_from_the_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """STYLE 14: the upcast gives ``result=None``; the round then scores its showdown once
    from its own events, and comes out as the reveal recorded it."""
    round_, events = _played()
    mapper = _mapper()
    old = mapper.to_domain_event(_as_version_1(mapper.to_stored_event(events[-1])))
    assert isinstance(old, Round.Revealed) and old.result is None
    assert (old.server_seed, old.points, old.coins, old.at) == (
        events[-1].server_seed,
        events[-1].points,
        events[-1].coins,
        events[-1].at,
    )
    calls: list[int] = []

    def counted(*args: Any) -> RoundScore:
        calls.append(1)
        return score_round(*args)

    monkeypatch.setattr(domain.round, "score_round", counted)
    folded = project_aggregate(None, [*events[:-1], old])
    assert isinstance(folded, Round)
    assert folded.revealed_outcome() == round_.revealed_outcome()
    assert round_result(folded) == round_result(round_)
    assert calls == [1]  # scored once, then kept


SCORES = {
    "worked example 3, a home run": ([seat("A", A3), seat("B", B3), seat("C", C3), seat("D", D3)]),
    "worked example 4, a foul": ([seat("A", A3), seat("B", B3), seat("C", C3), seat("D", D4)]),
    "worked example 5, specials": [
        seat("A", A3),
        Seat("B", declare(cards(SIX_PAIRS), "six_pairs", STANDARD)),
        Seat("C", declare(cards(THREE_FLUSHES), "three_flushes", STANDARD)),
    ],
    "both foul, no arrangement": [seat("D", D4), Seat("E", NO_ARRANGEMENT)],
}


@pytest.mark.parametrize("ruleset", [STANDARD, FUJIAN], ids=["standard", "fujian"])
@pytest.mark.parametrize("seats", SCORES.values(), ids=SCORES.keys())
def test_r6_a_recorded_showdown_reads_back_as_the_score_it_was_written_from(
    seats: list[Seat], ruleset: Ruleset
) -> None:
    score = score_round(seats, ruleset)
    data = json.loads(json.dumps(record(score)))  # as stored: JSON
    points = {p.player_id: p.points for p in score.players}
    assert recorded_score(data, points) == score


def test_r6_1_each_pile_records_its_result_worth_and_words() -> None:
    """Worked example 4 under fujian: A's piles are worth 1, 2 and 5 against foul D."""
    score = score_round([seat("A", A3), seat("B", B3), seat("C", C3), seat("D", D4)], FUJIAN)
    a_d = next(p for p in score.pairs if (p.a, p.b) == ("A", "D"))
    assert [(s.result, s.worth, s.b_words) for s in a_d.pile_scores] == [
        (1, 1, "foul"),
        (1, 2, "foul"),
        (1, 5, "foul"),
    ]
    a_b = next(p for p in score.pairs if (p.a, p.b) == ("A", "B"))
    assert a_b.pile_scores[0] == PileScore(1, 1, "pair, Ks", "high card, 4-high")
    assert a_b.piles == (1, 1, 1)
