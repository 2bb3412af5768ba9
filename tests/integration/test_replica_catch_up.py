"""Issue 21, a misrouted command reloads what changed in one query: two replicas on one
PostgreSQL schema, commands alternating between them. Each writer's catch-up reads the events
the other stored (one query a batch) and brings the aggregates and chain heads it holds up to
date from them: a command on aggregates the other replica changed reads none of them again, and
every invariant holds (R7.2/R9 zero-sum rounds, R10.3 one settlement a round, ledger = wallets,
every chain link)."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from domain.ids import wallet_uuid
from domain.round import Round
from domain.rules.ruleset import STANDARD
from domain.rules.suggest import suggest
from domain.tlog.chain import StoredRecord, verify_chain
from service.application import Thirteen
from service.opening import open_app
from tests.support.stores import store_environ

PLAYERS = ("a", "b", "c")


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[tuple[Thirteen, Thirteen]]:
    with store_environ("postgres", tmp_path) as environ:
        shared = tmp_path / "seed.key"  # replicas of one store share the seed key file
        first = open_app(tmp_path / "a", environ=environ, seed_key=shared)
        second = open_app(tmp_path / "b", environ=environ, seed_key=shared)
        try:
            yield first, second
        finally:
            second.close()
            first.close()


def _arrange_well(app: Thirteen, round_: Round, player: str) -> None:
    best = suggest(list(round_.hand(player)), STANDARD).arrangement
    app.arrange(round_.round_id, player, best.front, best.middle, best.back)


def _reads_of(app: Thirteen, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the store is asked from now on: each stream read, and each query of the service's
    own (``changed_since``, ``stored_versions`` …), by its SQL."""
    asked: list[str] = []
    select, query = app.recorder.select_events, app.database._events_query  # type: ignore[attr-defined]

    def selecting(originator_id: UUID, *args: Any, **kwargs: Any) -> Any:
        asked.append(f"stream {originator_id}")
        return select(originator_id, *args, **kwargs)

    def querying(sql: str, params: tuple[Any, ...]) -> Any:
        asked.append(sql)
        return query(sql, params)

    monkeypatch.setattr(app.recorder, "select_events", selecting)
    monkeypatch.setattr(app.database, "_events_query", querying)
    return asked


def test_commands_alternating_between_two_replicas_keep_every_invariant(
    replicas: tuple[Thirteen, Thirteen],
) -> None:
    turn = itertools.cycle(replicas)
    next(turn).open_table("t", STANDARD)
    credited = 0
    for player in PLAYERS:
        next(turn).credit(player, 1000, f"in-{player}")
        credited += 1000
        next(turn).sit_down("t", player)
    rounds = []
    for k in range(6):
        dealt = next(turn).deal("t", f"seed-{k}", f"deal-{k}")
        for player in dealt.players:
            _arrange_well(next(turn), dealt, player)
        next(turn).reveal(dealt.round_id)
        rounds.append(dealt.round_id)
        next(turn).credit(PLAYERS[k % 3], 10, f"top-{k}")
        next(turn).debit(PLAYERS[(k + 1) % 3], 5, f"out-{k}")
        credited += 5
    for app in replicas:
        balances = {p: app.wallet(p).balance for p in PLAYERS}
        assert sum(balances.values()) == credited  # every round summed to zero (R7.2, R9)
        for round_id in rounds:
            round_ = app.round(round_id)
            assert round_.revealed and sum(round_.coins.values()) == 0
        assert app.table("t").round_ids == rounds
    stored = replicas[0].recorder.select_notifications(start=1, limit=10_000)
    settled = Counter(n.originator_id for n in stored if n.topic.endswith(".RoundSettled"))
    assert settled == {wallet_uuid(p): len(rounds) for p in PLAYERS}  # once a round (R10.3)
    moved: Counter[UUID | str] = Counter()  # ledger = wallets: credits, debits and settlements
    for n in stored:
        state = json.loads(n.state)
        if n.topic.endswith((".Credited", ".RoundSettled")):
            moved[n.originator_id] += state.get("amount", state.get("coins", 0))
        elif n.topic.endswith(".Debited"):
            moved[n.originator_id] -= state["amount"]
    for player in PLAYERS:
        assert moved[wallet_uuid(player)] == replicas[1].wallet(player).balance
    streams: dict[str, list[StoredRecord]] = {}
    for n in stored:
        record = StoredRecord(
            n.id, str(n.originator_id), n.originator_version, n.topic, json.loads(n.state)
        )
        streams.setdefault(record.stream, []).append(record)
    assert all(verify_chain(records) == [] for records in streams.values())


def test_a_misrouted_reveal_reads_only_the_other_replicas_new_events_in_one_query(
    replicas: tuple[Thirteen, Thirteen], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replica B dealt the round (it holds the round, the table, the wallets and their chain
    heads); replica A took every arrangement; B's reveal then reads nothing but the one query
    of its catch-up, which brings the round and its chain head up to date."""
    first, second = replicas
    first.open_table("t", STANDARD)
    for player in PLAYERS:
        first.credit(player, 1000, f"in-{player}")
        first.sit_down("t", player)
    dealt = second.deal("t", "seed", "deal-1")
    for player in dealt.players:
        _arrange_well(first, dealt, player)
    asked = _reads_of(second, monkeypatch)
    revealed = second.reveal(dealt.round_id)
    assert len(asked) == 1 and "notification_id > %s" in asked[0], asked
    assert revealed.receipt == first.chain_head(revealed.round.id)
    assert first.round(dealt.round_id).revealed
    assert sum(first.round(dealt.round_id).coins.values()) == 0
