"""Group commit (issue 10): the writer runs the commands that wait together as one batch and
commits their events in one transaction. A refused command stores nothing and leaves the rest
of its batch alone, later commands see the batch's earlier ones, and a batch that loses a race
at commit is run again from fresh loads without the caller seeing it.

Commands are forced into one batch by holding the writer on a gate while they queue.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, wait
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from domain.errors import RuleError
from domain.findings import passed
from domain.ids import round_uuid, transfer_uuid, wallet_uuid
from domain.round import Round
from domain.rules.ruleset import STANDARD
from domain.rules.suggest import suggest
from domain.tlog.chain import verify_chain
from domain.wallet import InsufficientFunds, Wallet
from service.application import Thirteen
from service.caller import IN_PROCESS, Caller, acting_as
from service.errors import AlreadyExists, NotFound
from service.evidence import Decoder, StoreReader, audit, record_of
from service.opening import open_app
from tests.support.stores import store_environ

WAIT = 30  # seconds: a bound on a future that is never reached in a passing run
Call = tuple[Callable[..., Any], *tuple[Any, ...]]  # a command and its arguments, to queue


@pytest.fixture(params=["sqlite", "postgres"])
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Thirteen]:
    with store_environ(request.param, tmp_path) as environ:
        opened = open_app(tmp_path / "data", environ=environ)
        try:
            yield opened
        finally:
            opened.close()


def one_batch(app: Thirteen, *calls: Call, commits: int = 1) -> list[Future[Any]]:
    """Queue ``calls`` while the writer waits on a gate, release it, and check they ran as one
    batch, committed in ``commits`` transactions (one unless the batch lost a race)."""
    entered, gate = threading.Event(), threading.Event()

    def hold() -> None:
        entered.set()
        gate.wait(WAIT)

    held = app.submit(hold)
    assert entered.wait(WAIT)
    before = app.writer.batches
    futures = [app.submit(*call) for call in calls]
    gate.set()
    held.result(WAIT)
    wait(futures, WAIT)
    assert app.writer.batches - before == commits
    return futures


def error_of(future: Future[Any]) -> BaseException | None:
    return future.exception(WAIT)


def new_events(app: Thirteen, after: int) -> list[tuple[UUID | str, str]]:
    """The stream and event name of every event stored after position ``after``."""
    found = app.recorder.select_notifications(start=after + 1, limit=1000)
    return [(n.originator_id, n.topic.rsplit(".", 1)[-1]) for n in found]


def transfers_of(app: Thirteen, player_id: str) -> list[str]:
    """The transfer ids of a wallet's stored credits and debits, in order."""
    stored = [record_of(0, s) for s in app.recorder.select_events(wallet_uuid(player_id))]
    return [r.state["transfer_id"] for r in stored if "transfer_id" in r.state]


def chain_holds(app: Thirteen, stream: UUID) -> bool:
    records = [record_of(0, s) for s in app.recorder.select_events(stream)]
    return bool(records) and verify_chain(records) == []


PLAYERS = ["n", "e", "s", "w"]


def dealt_round(app: Thirteen) -> tuple[Round, list[Call]]:
    """A round dealt to four players at table "t", and each one's non-foul arrangement of it
    as a call to queue."""
    app.open_table("t", STANDARD)
    for p in PLAYERS:
        app.credit(p, 1000, f"in-{p}")
        app.sit_down("t", p)
    dealt = app.deal("t", "one batch")
    calls: list[Call] = []
    for p in PLAYERS:
        best = suggest(list(dealt.hand(p)), STANDARD).arrangement
        calls.append((app.arrange, dealt.round_id, p, best.front, best.middle, best.back))
    return dealt, calls


def test_a_refused_command_stores_nothing_and_its_batch_keeps_its_outcomes(app: Thirteen) -> None:
    """Issue 10, R10.6, R9.1: a debit above the balance in the middle of a batch is refused and
    stores nothing; the credits and debits around it are stored with exact balances, and so
    are the other refusals' (unknown player, amount zero) nothing."""
    app.credit("a", 100, "a0")
    app.credit("b", 50, "b0")
    start = app.max_position()
    futures = one_batch(
        app,
        (app.credit, "a", 10, "a1"),
        (app.debit, "b", 80, "b1"),  # above the balance: refused (R10.6)
        (app.debit, "a", 30, "a2"),
        (app.debit, "ghost", 1, "g1"),  # no wallet
        (app.credit, "b", 5, "b2"),
        (app.credit, "b", 0, "b3"),  # not an amount (R7.2)
    )
    a1, b1, a2, g1, b2, b3 = futures
    assert [f.result().balance for f in (a1, a2, b2)] == [110, 80, 55]
    assert isinstance(error_of(b1), InsufficientFunds)
    assert isinstance(error_of(g1), NotFound)
    assert type(error_of(b3)) is RuleError
    stored = new_events(app, start)
    assert len(stored) == 6  # a credit or a debit: the wallet's event and its transfer
    assert {stream for stream, _ in stored} == {
        wallet_uuid("a"),
        wallet_uuid("b"),
        *(transfer_uuid(t) for t in ("a1", "a2", "b2")),
    }
    for refused in ("b1", "g1", "b3"):
        assert app.recorder.select_events(transfer_uuid(refused)) == []
    assert app.recorder.select_events(wallet_uuid("ghost")) == []
    assert (app.wallet("a").balance, app.wallet("b").balance) == (80, 55)
    assert app.credit("b", 80, "b1").balance == 135  # the refused id was never taken
    assert chain_holds(app, wallet_uuid("a")) and chain_holds(app, wallet_uuid("b"))


def test_a_transfer_id_twice_in_one_batch_moves_coins_once(app: Thirteen) -> None:
    """Issue 10, R7.2: the same credit twice in one batch answers the same balance and is
    stored once; the same transfer id with another amount or kind is AlreadyExists."""
    app.credit("p", 100, "c0")
    start = app.max_position()
    futures = one_batch(
        app,
        (app.credit, "p", 10, "dup"),
        (app.credit, "p", 10, "dup"),
        (app.credit, "p", 20, "dup"),
        (app.debit, "p", 10, "dup"),
        (app.credit, "p", 1, "next"),
    )
    first, again, other_amount, other_kind, following = futures
    assert (first.result().balance, again.result().balance) == (110, 110)
    assert isinstance(error_of(other_amount), AlreadyExists)
    assert isinstance(error_of(other_kind), AlreadyExists)
    assert following.result().balance == 111
    assert len(new_events(app, start)) == 4  # "dup" once, "next" once
    assert len(app.recorder.select_events(transfer_uuid("dup"))) == 1
    assert app.wallet("p").balance == 111
    assert app.credit("p", 10, "dup").balance == 110  # and a retry later answers the same


def test_four_arrangements_and_the_reveal_in_one_batch_settle_the_round(app: Thirteen) -> None:
    """Issue 10, R10.3, R9, R7.2: the four arrangements of a round and its reveal, queued
    together, commit as one batch; the reveal sees every arrangement, settles to zero, hands out
    the round's chain head as its receipt, and the stored round audits clean."""
    dealt, calls = dealt_round(app)
    *arranged, revealed = one_batch(app, *calls, (app.reveal, dealt.round_id))
    assert [f.result().foul_reason for f in arranged] == [None] * 4
    reveal = revealed.result()
    coins = {p.player_id: p.coins for p in reveal.result.players}
    assert sorted(coins) == sorted(PLAYERS)
    assert sum(coins.values()) == 0  # R7.2, R9
    assert not any(p.foul for p in reveal.result.players)
    assert {p: app.wallet(p).balance for p in PLAYERS} == {p: 1000 + coins[p] for p in PLAYERS}
    stream = round_uuid(dealt.round_id)
    assert reveal.receipt == app.chain_head(stream)
    topics = [s.topic.rsplit(".", 1)[-1] for s in app.recorder.select_events(stream)]
    assert topics == ["Dealt", "Arranged", "Arranged", "Arranged", "Arranged", "Revealed"]
    assert chain_holds(app, stream)
    evidence = StoreReader(app, lambda _: None).evidence(dealt.round_id)
    evidence.receipt = reveal.receipt
    findings = audit(evidence, Decoder())
    assert passed(findings), [f for f in findings if not f.ok]


def test_a_reveal_twice_in_one_batch_answers_the_first_ones_result_and_receipt(
    app: Thirteen,
) -> None:
    """Issue 10, R10.4, R9.3: two clients reveal the same round at once and their calls share
    a batch. The second sees the round revealed by the first and answers its result and
    receipt, as a reveal repeated after the commit does; the round is settled once."""
    dealt, calls = dealt_round(app)
    *_, first, second = one_batch(
        app, *calls, (app.reveal, dealt.round_id), (app.reveal, dealt.round_id)
    )
    assert error_of(second) is None, f"the second reveal was refused: {error_of(second)!r}"
    assert second.result().result == first.result().result
    assert second.result().receipt == first.result().receipt
    assert app.reveal(dealt.round_id).receipt == first.result().receipt
    topics = [s.topic for s in app.recorder.select_events(round_uuid(dealt.round_id))]
    assert topics.count("domain.round:Round.Revealed") == 1


def test_a_command_that_changes_an_aggregate_and_then_fails_is_undone_in_its_batch(
    app: Thirteen,
) -> None:
    """Issue 10: a command that credits a wallet the batch already credited and then raises
    (one before staging its events, one after) leaves nothing behind: the next command of the
    batch, and the one after the batch, see only the good credits, and only they are stored."""

    def fails_unsaved() -> None:
        app.wallet("p").credit("bad-1", 5)
        raise RuleError("no")

    def fails_saved() -> None:
        wallet = app.wallet("p")
        wallet.credit("bad-2", 7)
        app.save(wallet)
        raise RuleError("no, after saving")

    app.credit("p", 100, "c0")
    good1, bad1, bad2, good2 = one_batch(
        app,
        (app.credit, "p", 10, "g1"),
        (fails_unsaved,),
        (fails_saved,),
        (app.credit, "p", 1, "g2"),
    )
    assert (good1.result().balance, good2.result().balance) == (110, 111)
    assert str(error_of(bad1)) == "no" and str(error_of(bad2)) == "no, after saving"
    assert transfers_of(app, "p") == ["c0", "g1", "g2"]
    assert app.wallet("p").balance == 111
    assert app.credit("p", 1, "g3").balance == 112  # the writer's own copy is right, too
    assert transfers_of(app, "p") == ["c0", "g1", "g2", "g3"]
    assert chain_holds(app, wallet_uuid("p"))


def test_a_batch_that_loses_a_race_at_commit_is_run_again_unseen(tmp_path: Path) -> None:
    """Issue 10: a second application on the same SQLite file moves a wallet on behind the
    writer's back, so the writer's copy is stale and its commit fails on the stream's version.
    The batch is run again from fresh loads (one command at a time; a lone command queued
    again) and every caller gets the balance it would have had: no error reaches them."""
    environ = {"THIRTEEN_STORE": "sqlite"}
    first = open_app(tmp_path, environ=environ)
    second = open_app(tmp_path, environ=environ)
    try:
        assert first.credit("p", 100, "c0").balance == 100
        assert second.credit("p", 50, "behind-1").balance == 150
        stale = first.writer.live.get(wallet_uuid("p"))
        assert isinstance(stale, Wallet)
        assert (stale.balance, stale.version) == (100, 2)  # the race is set up
        mine1, mine2, other = one_batch(
            first,
            (first.credit, "p", 10, "mine-1"),
            (first.credit, "p", 1, "mine-2"),
            (first.credit, "q", 5, "q-1"),
            commits=3,  # lost, then each command again alone from fresh loads
        )
        assert [f.result().balance for f in (mine1, mine2, other)] == [160, 161, 5]
        assert second.credit("p", 50, "behind-2").balance == 211  # the second was stale too
        assert first.credit("p", 1, "alone").balance == 212  # a lone loser, queued again
        assert transfers_of(first, "p") == [
            "c0",
            "behind-1",
            "mine-1",
            "mine-2",
            "behind-2",
            "alone",
        ]
        assert first.wallet("p").balance == second.wallet("p").balance == 212
        assert chain_holds(first, wallet_uuid("p"))
    finally:
        second.close()
        first.close()


def test_a_refusal_read_across_another_replicas_commit_is_checked_and_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 10, R10.4, R12.6: two replicas on one PostgreSQL schema. Replica B holds the round
    from before A revealed it, and the reveal lands after B's look at the log (its catch-up is
    held back here), so B's reveal reads a stale round and a fresh table: the seeds disagree
    and the command is refused. That refusal came from a torn read, so B checks what it read,
    finds the round moved on, and runs the reveal again: it answers A's stored receipt."""
    with store_environ("postgres", tmp_path) as environ:
        shared = tmp_path / "seed.key"  # replicas of one store share the seed key file
        a = open_app(tmp_path / "a", environ=environ, seed_key=shared)
        b = open_app(tmp_path / "b", environ=environ, seed_key=shared)
        try:
            dealt, arrangements = dealt_round(a)
            for command, *args in arrangements[:3]:
                command(*args)
            _, *args = arrangements[3]
            b.arrange(*args)  # B holds the round, not yet revealed
            held = b.writer.live.get(round_uuid(dealt.round_id))
            assert isinstance(held, Round) and not held.revealed
            revealed = a.reveal(dealt.round_id)
            monkeypatch.setattr(b.writer, "_catch_up", lambda: None)  # the commit lands late
            again = b.reveal(dealt.round_id)
            assert again.receipt == revealed.receipt
            assert again.result == revealed.result
        finally:
            b.close()
            a.close()


def test_each_command_records_its_own_caller_in_a_batch_and_after_a_lost_race(
    tmp_path: Path,
) -> None:
    """Issue 11: the caller travels with each queued command (not with its batch), and a command
    run again after its batch lost a race, or queued again alone, is still its caller's."""
    environ = {"THIRTEEN_STORE": "sqlite"}
    first = open_app(tmp_path, environ=environ)
    second = open_app(tmp_path, environ=environ)
    cashiers = [Caller(f"cashier-{n}", frozenset({"cashier"})) for n in range(3)]
    try:
        first.credit("p", 100, "c0")
        second.credit("p", 50, "behind-1")  # the writer's copy of p is stale now
        entered, gate = threading.Event(), threading.Event()

        def hold() -> None:
            entered.set()
            gate.wait(WAIT)

        held = first.submit(hold)
        assert entered.wait(WAIT)
        futures = []
        for cashier, (player, transfer) in zip(
            cashiers, [("p", "mine-1"), ("q", "q-1"), ("p", "mine-2")], strict=True
        ):
            with acting_as(cashier):
                futures.append(first.submit(first.credit, player, 1, transfer))
        gate.set()
        held.result(WAIT)
        wait(futures, WAIT)
        second.credit("p", 50, "behind-2")
        with acting_as(Caller("late", frozenset({"cashier"}))):
            first.credit("p", 1, "alone")  # loses alone, queued again after a pause
        recorded = {}
        for player in ("p", "q"):
            for stored in first.recorder.select_events(wallet_uuid(player)):
                state = json.loads(stored.state)
                recorded[state.get("transfer_id", f"{player} created")] = state["caller"]
        assert recorded == {
            "p created": IN_PROCESS.identity,
            "c0": IN_PROCESS.identity,
            "behind-1": IN_PROCESS.identity,
            "mine-1": "cashier-0",
            "q-1": "cashier-1",
            "mine-2": "cashier-2",
            "behind-2": IN_PROCESS.identity,
            "alone": "late",
            "q created": "cashier-1",
        }
        transfers = first.recorder.select_events(transfer_uuid("mine-2"))
        assert json.loads(transfers[0].state)["caller"] == "cashier-2"
    finally:
        second.close()
        first.close()


def test_a_poisoned_commit_fails_only_its_culprit(
    app: Thirteen, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22, finding 5: one command of a batch whose events the store cannot take (a fault
    injected into the encoding of one transfer) fails the commit; the batch is run again command
    by command, so only that command fails and every other is stored once, with its balance."""
    mapper = app.events.mapper
    encode = mapper.to_stored_event

    def poisoned(event: Any) -> Any:
        if getattr(event, "transfer_id", None) == "poison":
            raise ValueError("this event cannot be encoded")
        return encode(event)

    monkeypatch.setattr(mapper, "to_stored_event", poisoned)
    app.credit("a", 100, "a0")
    start = app.max_position()
    calls: list[Call] = [(app.credit, "a", n, f"a{n}") for n in range(1, 6)]
    calls.insert(2, (app.credit, "a", 1000, "poison"))
    futures = one_batch(app, *calls, commits=5)  # the failed one, then each good one alone
    failed = [type(error_of(f)).__name__ for f in futures]
    assert failed == ["NoneType", "NoneType", "ValueError", "NoneType", "NoneType", "NoneType"]
    assert sorted(f.result().balance for f in futures if f.exception(WAIT) is None) == [
        101,
        103,
        106,
        110,
        115,
    ]
    assert app.wallet("a").balance == 115
    assert transfers_of(app, "a") == ["a0", "a1", "a2", "a3", "a4", "a5"]
    assert len(new_events(app, start)) == 10  # five credits: a wallet event and a transfer each
    assert chain_holds(app, wallet_uuid("a"))
