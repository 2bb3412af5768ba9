"""A round's result is recorded once, by the reveal that decided it, and every reader copies it
(STYLE 12): serving a finished round scores nothing. Only the audit scores it again, on
purpose, and compares."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import domain.round
from domain.rules.hands import describe_against
from domain.rules.scoring import score_round
from service._generated.thirteen.v1 import results_pb2, table_pb2
from service.report import explain, replay
from tests.e2e.helpers import (
    arrange,
    arrange_well,
    deal,
    events,
    foul_piles,
    get_round,
    hands_of,
    of_type,
    reveal,
    seated_table,
)
from tests.support.server import ServerThread

PLAYERS = ["A", "B", "C", "D"]


@pytest.fixture
def scored(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Each showdown scored in this process (``score_round`` as rounds call it), by players."""
    calls: list[int] = []
    real = score_round  # as domain.round imports it

    def counting(seats: Any, ruleset: Any) -> Any:
        calls.append(len(seats))
        return real(seats, ruleset)

    monkeypatch.setattr(domain.round, "score_round", counting)
    yield calls


def _serve_everything(server: ServerThread, round_id: str) -> None:
    """Every way the service hands out a finished round."""
    server.results.GetRoundResult(results_pb2.GetRoundResultRequest(round_id=round_id))
    server.results.ListRoundResults(results_pb2.ListRoundResultsRequest(table_id="t"))
    server.tables.ListRounds(table_pb2.ListRoundsRequest(table_id="t"))
    for viewer in ["", "nobody", *PLAYERS]:
        get_round(server, round_id, viewer)
    for viewer in ["", "A"]:
        events(server, "t", of_type("RoundRevealed"), viewer=viewer)
    reveal(server, round_id)  # again: the result the reveal recorded
    replay.steps(replay.round_events(server.app, round_id))
    explain.load(server.app, round_id)


def test_r9_3_serving_a_finished_round_scores_nothing(
    server: ServerThread, scored: list[int]
) -> None:
    """The reveal scores the showdown once; GetRound, WatchTable, GetRoundResult, the
    projector, a repeated Reveal, replay and explain copy what it recorded."""
    seated_table(server, "t", dict.fromkeys(PLAYERS, 1000))
    dealt = deal(server, "t")
    arrange_well(server, dealt)
    first = reveal(server, dealt.round_id)
    assert scored == [4]
    _serve_everything(server, dealt.round_id)
    assert scored == [4], "a reader scored the finished round again"
    again = server.results.GetRoundResult(
        results_pb2.GetRoundResultRequest(round_id=dealt.round_id)
    )
    assert list(again.players) == list(first.players) and list(again.pairs) == list(first.pairs)


def test_r6_3_explain_words_each_pile_as_the_scorer_recorded_it(
    server: ServerThread, scored: list[int]
) -> None:
    """A foul pair and normal pairs: explain's per-pile results, worths and words are the
    scorer's, read from the Revealed event, not worked out again."""
    seated_table(server, "t", dict.fromkeys(PLAYERS, 1000))
    dealt = deal(server, "t")
    hands = hands_of(dealt)
    arrange_well(server, dealt, PLAYERS[1:])
    assert arrange(server, dealt.round_id, "A", foul_piles(hands["A"])).foul
    server.clock.advance(61)  # R10.3: a foul waits for the deadline
    reveal(server, dealt.round_id)
    round_ = server.app.round(dealt.round_id)
    recorded = round_.revealed_outcome()
    assert recorded is not None and scored == [4]
    report = explain.load(server.app, dealt.round_id)
    assert scored == [4]
    kinds = {(p.a, p.b): p.kind for p in report.pairs}
    assert kinds == {
        ("A", "B"): "foul",
        ("A", "C"): "foul",
        ("A", "D"): "foul",
        ("B", "C"): "normal",
        ("B", "D"): "normal",
        ("C", "D"): "normal",
    }
    for view, pair in zip(report.pairs, recorded.score.pairs, strict=True):
        assert [(p.result, p.worth, p.a_words, p.b_words) for p in view.piles] == [
            (s.result, s.worth, s.a_words, s.b_words) for s in pair.pile_scores
        ]
    # The words are those of R2 for the piles compared (R6.1), as the scorer gave them.
    b, c = (round_.play_of(p).arrangement for p in "BC")
    assert b is not None and c is not None
    b_and_c = next(p for p in report.pairs if (p.a, p.b) == ("B", "C"))
    for k, pile in enumerate(b_and_c.piles):
        vb, vc = b.values()[k], c.values()[k]
        front = pile.name == "front"
        assert pile.a_words == describe_against(vb, vc, front=front)
        assert pile.b_words == describe_against(vc, vb, front=front)
