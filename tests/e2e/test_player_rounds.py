"""Game recall (issue 13): ``ResultsService.ListPlayerRounds`` through the real server on both
stores. A player's rounds that are over, newest first, each checked against what Deal, Arrange,
StandUp, Reveal, GetBalance and the ledger answered when it was played; AIP-158 paging; a round
still in play never shows (R10.4: its hands stay hidden until it is over)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import grpc

from domain.rules.specials import SPLIT_PATTERNS, Special, qualifies
from service._generated.thirteen.v1 import results_pb2
from tests.e2e.helpers import (
    PHASE,
    arrange,
    assert_refused,
    balance,
    client_seed_for,
    credit,
    deal,
    foul_piles,
    good_piles,
    hands_of,
    head,
    open_table,
    reveal,
    sit,
    stand,
    wait_for_phase,
)
from tests.e2e.test_limits import EMOJI, LONG, _bad_tokens, assert_refused_briefly
from tests.support.clock import ManualClock
from tests.support.server import ServerThread

_DECLARABLE = [s for s in Special if s not in SPLIT_PATTERNS]


def recall(
    server: ServerThread, player: str, page_size: int = 0, token: str = ""
) -> results_pb2.ListPlayerRoundsResponse:
    return server.results.ListPlayerRounds(
        results_pb2.ListPlayerRoundsRequest(player_id=player, page_size=page_size, page_token=token)
    )


def every_page(server: ServerThread, player: str, page_size: int) -> list[list[Any]]:
    """The listing page by page, following next_page_token to the end."""
    pages, token = [], ""
    while True:
        page = recall(server, player, page_size, token)
        pages.append(list(page.rounds))
        token = page.next_page_token
        if not token:
            return pages


def caught_up(server: ServerThread) -> None:
    assert server.running.projector.wait(server.app.max_position(), timeout=10)


@dataclass
class Played:
    """What the API answered while a round was played: the independent record the recall is
    checked against."""

    round_id: str
    table_id: str
    dealt: Any
    outcome: str
    ended_at: Any = None
    arranged: dict[str, Any] = field(default_factory=dict)
    penalties: dict[str, int] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)
    before: dict[str, int] = field(default_factory=dict)
    after: dict[str, int] = field(default_factory=dict)


def _balances(server: ServerThread, dealt: Any) -> dict[str, int]:
    return {p.player_id: balance(server, p.player_id) for p in dealt.players}


def _revealed(server: ServerThread, played: Played) -> None:
    answer = reveal(server, played.round_id)  # a repeated Reveal answers the same result
    played.result = {p.player_id: p for p in answer.players}
    played.ended_at = answer.revealed_at
    played.after = _balances(server, played.dealt)


def play_five_rounds(server: ServerThread, clock: Any) -> list[Played]:
    """A, B and C at table t1, then A and D at table t2:

    1. t1 #1 revealed after the deadline: B's latest arrangement is a foul (R4.3);
    2. t1 #2 revealed: A declares the special its cards hold (R5.4);
    3. t1 #3 revealed: C escapes (R11) and A is credited while seated, before the reveal;
    4. t2 #1 abandoned: D escapes and A alone remains (R11.3);
    5. t2 #2 dealt and arranged, not revealed (returned last, still in play).
    """
    for player in "ABCD":
        credit(server, player, 10_000, f"start-{player}")
    open_table(server, "t1")
    for player in "ABC":
        sit(server, "t1", player)
    played = []

    # 1: a foul stands at the deadline.
    round_ = _deal(server, "t1", "r1")
    hands = hands_of(round_.dealt)
    round_.arranged["A"] = arrange(server, round_.round_id, "A", good_piles(hands["A"]))
    round_.arranged["B"] = arrange(server, round_.round_id, "B", foul_piles(hands["B"]))
    round_.arranged["C"] = arrange(server, round_.round_id, "C", good_piles(hands["C"]))
    assert round_.arranged["B"].foul
    clock.advance(120)
    wait_for_phase(server, round_.round_id, PHASE.ROUND_PHASE_REVEALED)  # the sweeper's reveal
    _revealed(server, round_)
    played.append(round_)

    # 2: A declares a special hand.
    seed = client_seed_for(
        server, "t1", "r2", 3, lambda h: any(qualifies(s, h[0]) for s in _DECLARABLE)
    )
    round_ = _deal(server, "t1", "r2", seed)
    hands = hands_of(round_.dealt)
    round_.arranged["A"] = arrange(server, round_.round_id, "A", special="any")
    assert round_.arranged["A"].special
    for player in "BC":
        round_.arranged[player] = arrange(
            server, round_.round_id, player, good_piles(hands[player])
        )
    _revealed(server, round_)
    played.append(round_)

    # 3: C escapes; A is topped up while seated; A and B play on.
    round_ = _deal(server, "t1", "r3")
    hands = hands_of(round_.dealt)
    left = stand(server, "t1", "C")
    assert left.escaped
    round_.penalties = dict(left.penalty_transfers)
    credit(server, "A", 77, "top-up-A")
    for player in "AB":
        round_.arranged[player] = arrange(
            server, round_.round_id, player, good_piles(hands[player])
        )
    _revealed(server, round_)
    played.append(round_)

    # 4: A moves to t2; D escapes and the round is abandoned.
    stand(server, "t1", "A")
    open_table(server, "t2")
    sit(server, "t2", "A")
    sit(server, "t2", "D")
    round_ = _deal(server, "t2", "r4", outcome="abandoned")
    round_.arranged["A"] = arrange(
        server, round_.round_id, "A", good_piles(hands_of(round_.dealt)["A"])
    )
    left = stand(server, "t2", "D")
    assert left.escaped
    round_.penalties = dict(left.penalty_transfers)
    wait_for_phase(server, round_.round_id, PHASE.ROUND_PHASE_ABANDONED)
    caught_up(server)
    history = server.results.ListRoundResults(results_pb2.ListRoundResultsRequest(table_id="t2"))
    (ended,) = [r for r in history.rounds if r.round_id == round_.round_id]
    round_.ended_at = ended.ended_at
    round_.after = _balances(server, round_.dealt)
    played.append(round_)

    # 5: still in play.
    sit(server, "t2", "D")
    round_ = _deal(server, "t2", "r5", outcome="")
    for player in "AD":
        hand = hands_of(round_.dealt)[player]
        round_.arranged[player] = arrange(server, round_.round_id, player, good_piles(hand))
    played.append(round_)
    return played


def _deal(
    server: ServerThread, table_id: str, request_id: str, seed: str = "", outcome: str = "revealed"
) -> Played:
    before = {p: balance(server, p) for p in "ABCD"}
    dealt = deal(server, table_id, client_seed=seed, request_id=request_id)
    return Played(dealt.round_id, table_id, dealt, outcome, before=before)


def expected_rows(played: list[Played], player: str) -> list[dict[str, Any]]:
    """The recall of ``player`` as the answers of the time say it must be, newest first."""
    rows = []
    for round_ in reversed(played):
        seats = {p.player_id: p.seat for p in round_.dealt.players}
        if not round_.outcome or player not in seats:
            continue
        shown = round_.result.get(player)
        submitted = round_.arranged.get(player)
        row = {
            "round_id": round_.round_id,
            "table_id": round_.table_id,
            "number": round_.dealt.number,
            "seat": seats[player],
            "dealt_at": round_.dealt.dealt_at,
            "ended_at": round_.ended_at,
            "outcome": round_.outcome,
            "base_stake": round_.dealt.base_stake,
            "cards": hands_of(round_.dealt)[player],
            "escaped": player in round_.penalties and round_.penalties[player] < 0,
            "balance_before": round_.before[player],
            "balance_after": round_.after[player],
        }
        if shown is not None:  # at the showdown: what Reveal answered
            row |= {
                "front": list(shown.front),
                "middle": list(shown.middle),
                "back": list(shown.back),
                "special": shown.special,
                "foul": shown.foul,
                "foul_reason": shown.foul_reason,
                "points": shown.points,
                "coins": shown.coins + round_.penalties.get(player, 0),
            }
        else:  # escaped or abandoned: what the player had submitted, no showdown
            row |= {
                "front": list(submitted.front) if submitted else [],
                "middle": list(submitted.middle) if submitted else [],
                "back": list(submitted.back) if submitted else [],
                "special": submitted.special if submitted else "",
                "foul": False,
                "foul_reason": "",
                "points": 0,
                "coins": round_.penalties.get(player, 0),
            }
        rows.append(row)
    return rows


def as_row(message: results_pb2.PlayerRound) -> dict[str, Any]:
    return {
        "round_id": message.round_id,
        "table_id": message.table_id,
        "number": message.number,
        "seat": message.seat,
        "dealt_at": message.dealt_at,
        "ended_at": message.ended_at,
        "outcome": message.outcome,
        "base_stake": message.base_stake,
        "cards": list(message.cards),
        "escaped": message.escaped,
        "balance_before": message.balance_before,
        "balance_after": message.balance_after,
        "front": list(message.front),
        "middle": list(message.middle),
        "back": list(message.back),
        "special": message.special,
        "foul": message.foul,
        "foul_reason": message.foul_reason,
        "points": message.points,
        "coins": message.coins,
    }


def test_recall_lists_each_players_ended_rounds_newest_first_as_they_were_played(
    server: ServerThread, clock: ManualClock
) -> None:
    played = play_five_rounds(server, clock)
    caught_up(server)
    for player in "ABCD":
        expected = expected_rows(played, player)
        for size in (1, 2, 0):
            pages = every_page(server, player, size)
            assert [as_row(r) for page in pages for r in page] == expected, (player, size)
            if size:
                assert [len(p) for p in pages[:-1]] == [size] * (len(pages) - 1)
    a = {r["round_id"]: r for r in expected_rows(played, "A")}
    assert [r["outcome"] for r in a.values()] == ["abandoned", "revealed", "revealed", "revealed"]
    foul, special, escape, abandoned = (played[i].round_id for i in range(4))
    # R4.3: B's foul as Arrange judged it; R5.4: A's declaration as Arrange resolved it.
    (b_foul,) = [r for r in expected_rows(played, "B") if r["round_id"] == foul]
    assert b_foul["foul"] and b_foul["foul_reason"] == played[0].arranged["B"].foul_reason
    assert a[special]["special"] == played[1].arranged["A"].special
    # R11: the escapee pays, the others share; the top-up while seated is in the balances.
    (c_escape,) = [r for r in expected_rows(played, "C") if r["round_id"] == escape]
    assert c_escape["escaped"] and c_escape["coins"] < 0 and c_escape["points"] == 0
    assert a[escape]["balance_after"] - a[escape]["balance_before"] == a[escape]["coins"] + 77
    # R11.3: no showdown, the escape penalty is all that moved.
    assert a[abandoned]["coins"] == -played[3].penalties["D"] > 0
    assert a[abandoned]["balance_after"] == balance(server, "A")


def test_recall_balances_are_the_ledgers_around_the_rounds_coin_movements(
    server: ServerThread, clock: ManualClock
) -> None:
    """balance_before is the ledger's balance just before the round's first movement for the
    player, balance_after the one just after its last; coins is what those movements add."""
    play_five_rounds(server, clock)
    caught_up(server)
    for player in "ABCD":
        ledger = list(
            server.results.ListLedgerEntries(
                results_pb2.ListLedgerEntriesRequest(player_id=player, page_size=1000)
            ).entries
        )
        for row in recall(server, player).rounds:
            moved = [i for i, e in enumerate(ledger) if e.round_id == row.round_id]
            assert moved, (player, row.round_id)
            first, last = ledger[moved[0]], ledger[moved[-1]]
            assert row.balance_before == first.balance_after - first.amount
            assert row.balance_after == last.balance_after
            assert row.coins == sum(ledger[i].amount for i in moved)


def test_a_round_in_play_is_not_recalled_until_it_is_over(
    server: ServerThread, clock: ManualClock
) -> None:
    """R10.4, R12.6: no hand shows before the round is over; once revealed it is the newest."""
    played = play_five_rounds(server, clock)
    caught_up(server)
    open_round = played[-1].round_id
    for player in "AD":
        assert open_round not in [r.round_id for r in recall(server, player).rounds]
    _revealed(server, played[-1])
    caught_up(server)
    newest = recall(server, "A", 1).rounds[0]
    assert newest.round_id == open_round
    assert list(newest.cards) == hands_of(played[-1].dealt)["A"]
    assert newest.points == played[-1].result["A"].points


def test_recall_refuses_bad_requests_and_misused_page_tokens(
    server: ServerThread, clock: ManualClock
) -> None:
    """AIP-158: a negative page size, a token of another player's listing or of the ledger's,
    or one not from us, is INVALID_ARGUMENT naming the field; a missing player id too; a player
    without a wallet is NOT_FOUND as in ListLedgerEntries; one who has played nothing gets an
    empty list."""
    play_five_rounds(server, clock)
    caught_up(server)
    call = server.results.ListPlayerRounds
    request = results_pb2.ListPlayerRoundsRequest
    bad = grpc.StatusCode.INVALID_ARGUMENT
    b_token = recall(server, "B", 1).next_page_token
    a_token = recall(server, "A", 1).next_page_token
    ledger_token = server.results.ListLedgerEntries(
        results_pb2.ListLedgerEntriesRequest(player_id="A", page_size=1)
    ).next_page_token
    assert b_token and a_token and ledger_token
    for token in (b_token, ledger_token, "not-a-token", a_token[:-4]):
        assert_refused(
            call,
            request(player_id="A", page_token=token),
            bad,
            "INVALID_ARGUMENT",
            field="page_token",
        )
    assert_refused(
        call, request(player_id="A", page_size=-1), bad, "INVALID_ARGUMENT", field="page_size"
    )
    assert_refused(call, request(player_id=""), bad, "INVALID_ARGUMENT", field="player_id")
    assert_refused(
        call, request(player_id="nobody"), grpc.StatusCode.NOT_FOUND, "NOT_FOUND", says="nobody"
    )
    credit(server, "idle", 5, "start-idle")
    assert recall(server, "idle") == results_pb2.ListPlayerRoundsResponse()
    # A token is bound to the player, not to the page size: a page of 2 after a page of 1.
    second = recall(server, "A", 2, a_token)
    assert [r.round_id for r in second.rounds] == [
        r.round_id for r in recall(server, "A", 3).rounds[1:3]
    ]


def test_recall_refuses_hostile_input_briefly_and_stores_nothing(server: ServerThread) -> None:
    """As every other RPC (tests/e2e/test_limits.py): ids no store can hold and page tokens
    that are not ours are refused with a short message before the views are read."""
    credit(server, "A", 100, "start-A")
    request = results_pb2.ListPlayerRoundsRequest
    cases = [request(player_id=LONG), request(player_id="\x00"), request(player_id=EMOJI)]
    cases += [request(player_id="A", page_token=bad) for _, bad in _bad_tokens("recall:A")]
    mark = head(server)
    for case in cases:
        assert_refused_briefly(server.results.ListPlayerRounds, case)
    assert head(server) == mark
