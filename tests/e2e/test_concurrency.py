"""Concurrent calls from many client threads against the real server: optimistic concurrency
must lose nothing, double nothing and let exactly one of two conflicting commands win."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc

from domain.ids import deal_round_id
from service._generated.thirteen.v1 import table_pb2, wallet_pb2
from tests.e2e.helpers import (
    PHASE,
    Piles,
    Refusal,
    balance,
    credit,
    deal,
    events,
    foul_piles,
    get_round,
    get_table,
    good_piles,
    hands_of,
    of_type,
    open_table,
    seated_table,
    wait_for_phase,
)
from tests.support.clock import ManualClock
from tests.support.server import ServerThread


def _together(calls: Sequence[Callable[[], Any]]) -> list[Any]:
    """Run the calls on their own threads, released at once; each gives its reply or the
    grpc.RpcError it raised."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], Any]) -> Any:
        barrier.wait(timeout=10)
        try:
            return call()
        except grpc.RpcError as error:
            return error

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def _failures(results: list[Any]) -> list[Refusal]:
    return [Refusal.of(r) for r in results if isinstance(r, grpc.RpcError)]


def test_concurrent_arrangements_from_every_player_are_all_accepted_and_none_is_lost(
    server: ServerThread, clock: ManualClock
) -> None:
    """R4.3: each player submits eight arrangements at once (foul drafts and good ones),
    thirty-two calls on one round; every call succeeds, each is stored exactly once, and what
    counts at the showdown is one of the player's own submissions, foul exactly when that one
    is."""
    players = ["A", "B", "C", "D"]
    seated_table(server, "t", dict.fromkeys(players, 1000))
    dealt = deal(server, "t")
    hands = hands_of(dealt)
    tries, goods = {}, {}
    for p in players:
        good = good_piles(hands[p])
        goods[p] = [_rotated(good, k) for k in (1, 3, 5, 7)]  # the same piles, told apart
        tries[p] = [
            foul_piles(hands[p], seed=k) if k % 2 == 0 else _rotated(good, k) for k in range(8)
        ]
    calls = [
        functools.partial(
            server.tables.Arrange,
            table_pb2.ArrangeRequest(
                round_id=dealt.round_id,
                player_id=p,
                front=piles[0],
                middle=piles[1],
                back=piles[2],
            ),
        )
        for p in players
        for piles in tries[p]
    ]
    results = _together(calls)
    refused = _failures(results)
    assert not refused, (
        f"{len(refused)} of {len(calls)} concurrent arrangements refused: "
        f"{sorted({(r.code.name, r.message) for r in refused})}"
    )
    sent = [(p, piles) for p in players for piles in tries[p]]
    for reply, (player_id, piles) in zip(results, sent, strict=True):
        assert (reply.player_id, (list(reply.front), list(reply.middle), list(reply.back))) == (
            player_id,
            piles,
        )

    assert all(p.submitted for p in get_round(server, dealt.round_id).players)
    clock.advance(60)  # the latest may be a foul draft: let the sweeper reveal (R10.3)
    result = wait_for_phase(server, dealt.round_id, PHASE.ROUND_PHASE_REVEALED).result
    for player in result.players:
        kept = (list(player.front), list(player.middle), list(player.back))
        assert kept in tries[player.player_id]
        assert player.foul == (kept not in goods[player.player_id])
    assert sum(p.points for p in result.players) == 0
    stored = events(server, "t", of_type("RoundEnded"))
    for p in players:
        # An observer sees each only as submitted (R10.4).
        arranged = [e for e in stored if e.type == "HandSubmitted" and e.player_id == p]
        assert len(arranged) == len(tries[p]), f"{p}: {len(arranged)} arrangements stored"


def _rotated(piles: Piles, k: int) -> tuple[list[str], ...]:
    return tuple(pile[k % len(pile) :] + pile[: k % len(pile)] for pile in piles)


def test_a_deal_raced_from_many_threads_deals_exactly_one_round(server: ServerThread) -> None:
    """R10.1: one round at a time — of eight concurrent deals with different request ids one
    succeeds; the others are refused (FAILED_PRECONDITION) or lose the race (ABORTED), and
    nothing of theirs is stored."""
    players = ["A", "B", "C", "D"]
    seated_table(server, "t", dict.fromkeys(players, 1000))
    results = _together(
        [
            functools.partial(deal, server, "t", client_seed=f"s{k}", request_id=f"r{k}")
            for k in range(8)
        ]
    )
    won = [r for r in results if not isinstance(r, grpc.RpcError)]
    assert len(won) == 1
    for refused in _failures(results):
        assert refused.code in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.ABORTED)
    round_id = won[0].round_id
    table = get_table(server, "t")
    assert (table.round_count, table.current_round_id) == (1, round_id)
    listed = server.tables.ListRounds(table_pb2.ListRoundsRequest(table_id="t")).rounds
    assert [r.round_id for r in listed] == [round_id]
    for p in players:
        wallet = server.wallets.GetBalance(wallet_pb2.GetBalanceRequest(player_id=p))
        assert (wallet.balance, wallet.round_id) == (1000, round_id)
    for k in range(8):
        other = deal_round_id("t", f"r{k}")
        if other != round_id:
            try:
                get_round(server, other)
            except grpc.RpcError as error:
                assert error.code() == grpc.StatusCode.NOT_FOUND
            else:
                raise AssertionError(f"a losing deal stored round {other}")


def test_r10_6_a_player_sitting_at_two_tables_at_once_gets_exactly_one_seat(
    server: ServerThread,
) -> None:
    """R10.6: one table at a time, also when the two sit-downs race: of each player's two
    concurrent calls exactly one wins and the other is refused; six players race at once."""
    players = [f"P{k}" for k in range(6)]
    for p in players:
        credit(server, p, 1000, f"start-{p}")
    for table_id in ("left", "right"):
        open_table(server, table_id)
    calls = [functools.partial(_sit, server, t, p) for p in players for t in ("left", "right")]
    results = _together(calls)
    seats = {t: [s.player_id for s in get_table(server, t).seats] for t in ("left", "right")}
    for k, p in enumerate(players):
        tried = results[2 * k : 2 * k + 2]
        won = [r.table_id for r in tried if not isinstance(r, grpc.RpcError)]
        assert len(won) == 1, f"{p} won {won}: {tried}"
        assert [t for t in seats if p in seats[t]] == won
        wallet = server.wallets.GetBalance(wallet_pb2.GetBalanceRequest(player_id=p))
        assert wallet.table_id == won[0]
        (refused,) = _failures(tried)
        assert (refused.code, refused.reason) in [
            (grpc.StatusCode.FAILED_PRECONDITION, "SEAT_RULE"),
            (grpc.StatusCode.ABORTED, "CONCURRENT_UPDATE"),
        ], refused
    assert sorted(seats["left"] + seats["right"]) == players


def _sit(server: ServerThread, table_id: str, player_id: str) -> Any:
    return server.tables.SitDown(table_pb2.SitDownRequest(table_id=table_id, player_id=player_id))


def test_concurrent_credits_to_one_wallet_are_neither_lost_nor_doubled(
    server: ServerThread,
) -> None:
    """R7.2: forty credits at once — the balance is their sum; each answer is the balance right
    after that credit, so the answers order the credits one after another; a retry moves
    nothing."""
    amounts = list(range(1, 41))

    def send(amount: int) -> int:
        request = wallet_pb2.CreditRequest(player_id="W", amount=amount, transfer_id=f"c{amount}")
        for _ in range(5):  # a client retries a lost race with the same transfer id
            try:
                return server.wallets.Credit(request).balance
            except grpc.RpcError as error:
                if error.code() != grpc.StatusCode.ABORTED:
                    raise
        raise AssertionError(f"credit {amount} aborted five times")

    answers = _together([functools.partial(send, a) for a in amounts])
    assert balance(server, "W") == sum(amounts)
    order = sorted(zip(answers, amounts, strict=True))
    running = 0
    for answer, amount in order:
        running += amount
        assert answer == running, f"credit {amount} answered {answer}, expected {running}"
    again = _together([functools.partial(send, a) for a in amounts])
    assert again == answers
    assert balance(server, "W") == sum(amounts)
