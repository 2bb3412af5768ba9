"""Issue 10 attacked in process: the log's readers fed from this process's memory, and the views
written in batches (``ViewStore.write``). What a reader gets must be exactly what the log holds
after its position (never an event skipped, repeated or out of order), whatever the store
skips, whoever committed, however the reader's calls fall between commits; and the views a
live projector writes batch by batch must equal a rebuild from the log.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.rules.ruleset import STANDARD
from domain.rules.suggest import suggest
from domain.tlog.note import Signer
from projections.folds import Journal, Leg, OpenRound, RecallLine, RoundRecord, ViewFold
from projections.projector import Projector, rebuild
from projections.store import ViewStore
from service.application import Thirteen
from service.eventstore.eventlog import RECENT, EventLogApplication, from_memory
from service.opening import open_app
from service.transparency.log import TransparencyLog
from tests.support.stores import store_environ

KEY = Signer.from_seed("thirteen.test/attack-log-feed", bytes(range(32)))


# The feed against a model of the log ----------------------------------------------------------


@dataclass(frozen=True)
class Mine:
    """An event this process committed."""

    position: int


@dataclass(frozen=True)
class Theirs:
    """An event another replica committed."""

    position: int


class FakeLog:
    """A log whose positions skip numbers; it counts what it decodes."""

    def __init__(self, events: list[Any]) -> None:
        self.events = events
        self.decoded = 0

    def select_notifications(self, start: int, limit: int) -> list[Any]:
        assert limit > 0, f"the log was asked for {limit} events"
        found = [e for e in self.events if e.position >= start][:limit]
        return [SimpleNamespace(id=e.position, topic=topic_of(e), event=e) for e in found]

    def to_domain_event(self, notification: Any) -> Any:
        self.decoded += 1
        return notification.event


def topic_of(event: Any) -> str:
    from eventsourcing.utils import get_topic

    return get_topic(type(event))


def fake_app(log: FakeLog, recent: list[Any], *, only_writer: bool) -> Any:
    return SimpleNamespace(
        recent=deque(((e.position, e) for e in recent), maxlen=RECENT),
        writer=SimpleNamespace(fastforward=not only_writer),
        recorder=log,
        mapper=log,
    )


@st.composite
def logs(draw: Any) -> tuple[list[Any], list[Any], bool]:
    """A log (positions with gaps), this process's latest commits in memory (possibly missing
    the newest, committed but not yet remembered), and whether it is the store's only writer."""
    only_writer = draw(st.booleans())
    size = draw(st.integers(0, 40))
    steps = draw(st.lists(st.integers(1, 3), min_size=size, max_size=size))
    positions, at = [], 0
    for step in steps:
        at += step
        positions.append(at)
    if only_writer:  # a sole writer: every event from where memory begins is its own
        first = draw(st.integers(0, len(positions)))
        events: list[Any] = [Theirs(p) for p in positions[:first]]
        events += [Mine(p) for p in positions[first:]]
    else:
        events = [draw(st.sampled_from([Mine, Theirs]))(p) for p in positions]
    mine = [e for e in events if isinstance(e, Mine)]
    lag = draw(st.integers(0, min(2, len(mine))))  # stored, not yet in memory
    forgotten = draw(st.integers(0, len(mine) - lag))  # fell out of the deque
    return events, mine[forgotten : len(mine) - lag], only_writer


@given(logs(), st.integers(-2, 130), st.integers(1, 8), st.booleans())
def test_what_a_reader_is_fed_is_what_the_log_holds_after_its_position(
    drawn: tuple[list[Any], list[Any], bool], after: int, limit: int, filtered: bool
) -> None:
    """The real ``events_after`` over a log of this process's events and another replica's,
    any reader position (before the first event, in a skipped number, at the newest, beyond
    it) and any limit: a prefix of the log after the position, never longer than the limit;
    all of it up to the limit unless a sole writer's memory had not yet caught up with its own
    newest commit; events of other topics as None; this process's events never decoded."""
    events, recent, only_writer = drawn
    log = FakeLog(events)
    app = fake_app(log, recent, only_writer=only_writer)
    topics = {topic_of(Theirs(0))} if filtered else None
    fed = EventLogApplication.events_after(app, after, limit, topics)
    expected = [e for e in events if e.position > after][:limit]
    assert [p for p, _ in fed] == [e.position for e in expected[: len(fed)]]
    for (_, got), event in zip(fed, expected, strict=False):
        assert got == (None if filtered and isinstance(event, Mine) else event)
    lagging = (
        only_writer
        and recent
        and any(isinstance(e, Mine) and e.position > recent[-1].position for e in events)
    )
    if not lagging:
        assert len(fed) == len(expected)
    remembered = {e.position for e in recent}
    assert log.decoded == sum(1 for p, e in fed if e is not None and p not in remembered)


@pytest.mark.parametrize("only_writer", [True, False])
@pytest.mark.parametrize("limit", [0, -1])
def test_a_limit_of_nothing_feeds_nothing(only_writer: bool, limit: int) -> None:
    """Absurd limits: a reader that asks for no event gets none (from memory or the log), not
    the one after its position, nor on SQLite the whole log (``LIMIT -1``), nor on PostgreSQL
    an error (``LIMIT must not be negative``)."""
    events: list[Any] = [Mine(1), Mine(2), Theirs(3), Mine(4)]
    app = fake_app(FakeLog(events), [e for e in events if isinstance(e, Mine)], only_writer=False)
    app.writer.fastforward = not only_writer
    assert EventLogApplication.events_after(app, 0, limit) == []
    assert from_memory([(1, "a"), (2, "b")], 0, limit, only_writer=only_writer)[0] == []


# Two replicas on one PostgreSQL schema ---------------------------------------------------------


@contextmanager
def replicas(tmp_path: Path, count: int = 2) -> Iterator[tuple[list[Thirteen], dict[str, str]]]:
    with store_environ("postgres", tmp_path) as environ:
        key = tmp_path / "seed.key"
        apps: list[Thirteen] = []
        try:
            for k in range(count):
                apps.append(open_app(tmp_path / f"r{k}", environ=environ, seed_key=key))
            yield apps, environ
        finally:
            for app in apps:
                app.close()


def stored(app: Thirteen, after: int = 0) -> list[tuple[int, Any, int]]:
    return [
        (n.id, n.originator_id, n.originator_version)
        for n in app.recorder.select_notifications(start=after + 1, limit=10**6)
    ]


class Reader:
    """A follower with a random limit on every call, reading while the replicas commit."""

    def __init__(self, app: Thirteen, seed: int, topics: Any = None) -> None:
        self.app, self.topics = app, topics
        self.rng = random.Random(seed)
        self.got: list[tuple[int, Any]] = []
        self.position = 0

    def read_once(self) -> int:
        batch = self.app.events_after(
            self.position, self.rng.choice([1, 2, 3, 5, 64, 2000]), self.topics
        )
        for position, event in batch:
            assert position > self.position, (position, self.position)
            self.got.append(
                (
                    position,
                    None if event is None else (event.originator_id, event.originator_version),
                )
            )
            self.position = position
        return len(batch)


def run_together(
    seconds: float, load: list[Any], readers: list[Any], until: Any = None
) -> list[str]:
    """``load`` (callables, each run again and again) for ``seconds`` (and ``until()`` holds)
    while ``readers`` (each a callable returning how many it read) follow; after the load, the
    readers drain."""
    stop, drained = threading.Event(), threading.Event()
    errors: list[str] = []

    def loop(step: Any) -> None:
        while not stop.is_set():
            try:
                step()
            except Exception as error:
                errors.append(repr(error))

    def follow(read: Any) -> None:
        try:
            while True:
                done = drained.is_set()
                if read() == 0 and done:
                    return
        except Exception as error:
            errors.append(repr(error))

    writers = [threading.Thread(target=loop, args=(s,)) for s in load]
    followers = [threading.Thread(target=follow, args=(r,)) for r in readers]
    for thread in writers + followers:
        thread.start()
    time.sleep(seconds)
    while until is not None and not until() and not errors:
        time.sleep(0.05)
    stop.set()
    for thread in writers:
        thread.join()
    drained.set()
    for thread in followers:
        thread.join()
    return errors


def test_replicas_crediting_the_same_wallets_at_once_feed_every_reader_the_log(
    tmp_path: Path,
) -> None:
    """Two replicas credit the same wallets from several threads each, so their commits
    interleave and many lose a race and roll back (the log's positions skip those numbers);
    followers on both, with random limits and with and without a topic filter, read meanwhile,
    and the transparency log appends meanwhile on one of them. Every follower ends with every
    stored event, in order, once; every stored event is the tree's leaf, in order."""
    with replicas(tmp_path) as (apps, _):
        a = apps[0]
        counters = [0] * 8

        def credit(app: Thirteen, k: int) -> Any:
            def step() -> None:
                counters[k] += 1
                app.credit(f"p{counters[k] % 3}", 1, f"c{k}-{counters[k]}")

            return step

        log = TransparencyLog(a, KEY, checkpoint_interval=0.0)
        log.create()
        followers = [
            Reader(app, seed, topics)
            for seed, app in enumerate(apps)
            for topics in (None, ViewFold.TOPICS)
        ]
        errors = run_together(
            4.0,
            [credit(apps[k % 2], k) for k in range(8)],
            [f.read_once for f in followers] + [log.append_once],
        )
        assert errors == []
        log_events = stored(a)
        assert log_events[-1][0] > len(log_events), "no commit lost a race: nothing was skipped"
        for follower in followers:
            assert [p for p, _ in follower.got] == [p for p, _, _ in log_events]
            assert all(
                e is None or e == (s, v)
                for (_, e), (_, s, v) in zip(follower.got, log_events, strict=True)
            )
        assert_every_event_is_its_leaf(a, log)
        # Absurd positions, on both: before 0, 0, far behind memory, a skipped number, the
        # newest, beyond it.
        top = log_events[-1][0]
        skipped = next(p for p in range(1, top) if p not in {q for q, _, _ in log_events})
        for app in apps:
            for after in (-1, 0, top // 3, skipped - 1, skipped, top - 1, top, top + 5):
                fed = app.events_after(after, 10**6)
                assert [(p, e.originator_id, e.originator_version) for p, e in fed] == stored(
                    app, after
                ), after


def assert_every_event_is_its_leaf(app: Thirteen, log: TransparencyLog) -> None:
    log.append_once()
    assert leaves_are_events(app, log.store) == len(stored(app))


def leaves_are_events(app: Thirteen, tree: Any) -> int:
    """The tree's leaves are the stored events up to its last one, in log order, none skipped
    or twice, each leaf hash computed here from the stored bytes (``tests.support.tlog``);
    returns the tree's size."""
    import json

    from tests.support.tlog import leaf_of

    state = tree.state()
    events = [
        {
            "position": n.id,
            "stream": str(n.originator_id),
            "version": n.originator_version,
            "topic": n.topic,
            "state": json.loads(n.state),
        }
        for n in app.recorder.select_notifications(start=1, limit=10**6)
        if n.id <= state.position
    ]
    assert state.size == len(events)
    assert state.position == (events[-1]["position"] if events else 0)
    leaves = tree.leaves(state.size)
    for index, event in enumerate(events):
        assert tree.leaf_index(event["position"], state.size) == index, event["position"]
        assert leaves[index] == leaf_of(event), event["position"]
    return int(state.size)


# Views written in batches ----------------------------------------------------------------------


def play_rounds(
    apps: list[Thirteen], table: str, players: list[str], rounds: int, rng: random.Random
) -> None:
    """Rounds at one table, each command sent to a replica at random: some players escape
    after the others arranged (penalties, or an abandoned round when one is left), the
    others arrange, then the reveal (sent to both, now and then)."""

    def on() -> Thirteen:
        return rng.choice(apps)

    for _ in range(rounds):
        for p in players:
            on().sit_down(table, p)
        dealt = on().deal(table)
        escaping = rng.sample(players, rng.choice([0, 0, 1, len(players) - 1]))
        for p in players:
            if p not in escaping:
                a = suggest(dealt.hand(p), STANDARD).arrangement
                on().arrange(dealt.round_id, p, a.front, a.middle, a.back)
        for p in escaping:
            on().stand_up(table, p)
        if len(escaping) < len(players) - 1:
            for app in rng.sample(apps, rng.choice([1, 2])):
                app.reveal(dealt.round_id)


def test_views_written_batch_by_batch_from_memory_equal_a_rebuild_from_the_log(
    tmp_path: Path,
) -> None:
    """Two replicas play rounds at four tables (escapes, abandoned rounds, reveals sent to both),
    every command to either, while credits of the same wallets race them on both. Each
    replica's projector, fed from its own memory where it can, writes views of its own in
    batches of a few events, racing the commits. Both equal the views a third process (no
    memory) rebuilds from the log in one batch, and keep the ledger's invariants."""
    with replicas(tmp_path, 3) as (apps, _):
        a, b, fresh = apps
        tables = {f"t{k}": [f"t{k}p{j}" for j in range(2 + k % 3)] for k in range(4)}
        for name, players in tables.items():
            for p in players:
                a.credit(p, 100_000, f"in-{p}")
            b.open_table(name, STANDARD)
        everyone = [p for players in tables.values() for p in players]
        live = [ViewStore(path=tmp_path / f"live{k}.sqlite") for k in range(2)]
        for store in live:
            store.create()
        projectors = [
            Projector(app, store, batch=batch)
            for app, store, batch in zip((a, b), live, (3, 7), strict=True)
        ]
        errors: list[str] = []

        def guarded(step: Any, *args: Any) -> Any:
            def run() -> None:
                try:
                    step(*args)
                except Exception as error:
                    errors.append(repr(error))

            return run

        plays = [
            threading.Thread(
                target=guarded(play_rounds, [a, b], name, players, 4, random.Random(name))
            )
            for name, players in tables.items()
        ]
        stop, drained = threading.Event(), threading.Event()

        def tips(app: Thirteen, tag: str) -> None:
            rng, k = random.Random(tag), 0
            while not stop.is_set():
                k += 1
                app.credit(rng.choice(everyone), 1, f"tip-{tag}-{k}")

        def project(projector: Projector) -> None:
            while True:
                done = drained.is_set()
                if projector.run_once() == 0 and done:
                    return

        crediting = [
            threading.Thread(target=guarded(tips, app, t)) for app, t in ((a, "a"), (b, "b"))
        ]
        projecting = [threading.Thread(target=guarded(project, p)) for p in projectors]
        for thread in plays + crediting + projecting:
            thread.start()
        for thread in plays:
            thread.join()
        stop.set()
        for thread in crediting:
            thread.join()
        drained.set()
        for thread in projecting:
            thread.join()
        assert errors == []
        rebuilt = ViewStore(path=tmp_path / "rebuilt.sqlite")
        rebuild(fresh, rebuilt)
        expected = rebuilt.dump()
        assert {r[3] for r in expected["rounds"]} == {"revealed", "abandoned"}
        assert any(j[1] == "escape_penalty" for j in expected["journal"])
        for store in live:
            assert store.dump() == expected
        assert_view_invariants(expected)
        last = stored(fresh)
        assert last[-1][0] > len(last), "no commit lost a race"


def assert_view_invariants(dump: dict[str, list[Any]]) -> None:
    """The ledger sums to zero, transaction by transaction; each account's balance is its legs'
    sum; every revealed round is settled once; each recall line's balances are the ledger's
    around its round (its first leg's balance before, its last leg's after; with none, the
    balance the player had when the round ended)."""
    legs = dump["legs"]  # txn_id, account, amount, balance_after
    journal = {row[0]: row for row in dump["journal"]}  # txn_id, kind, round_id, transfer_id, at
    by_txn: dict[int, int] = {}
    by_account: dict[str, list[tuple[int, int, int]]] = {}
    for txn, account, amount, after in legs:
        by_txn[txn] = by_txn.get(txn, 0) + amount
        by_account.setdefault(account, []).append((txn, amount, after))
    assert all(total == 0 for total in by_txn.values())
    for account, moves in by_account.items():
        moves.sort()
        running = 0
        for _, amount, after in moves:
            running += amount
            assert after == running, account
    assert dict(dump["accounts"]) == {k: sum(m[1] for m in v) for k, v in by_account.items()}
    revealed = [r[0] for r in dump["rounds"] if r[3] == "revealed"]
    settlements = [j[2] for j in journal.values() if j[1] == "settlement"]
    assert sorted(settlements) == sorted(revealed)
    for row in dump["player_rounds"]:
        player, position, round_id = row[0], row[1], row[2]
        before, after = row[-2], row[-1]
        mine = [(t, a, b) for t, a, b in by_account.get(player, []) if journal[t][2] == round_id]
        if mine:
            assert (before, after) == (mine[0][2] - mine[0][1], mine[-1][2]), row
        else:
            earlier = [b for t, _, b in by_account.get(player, []) if t < position]
            assert before == after == (earlier[-1] if earlier else 0), row


def test_a_replica_creating_the_views_while_another_projects_never_deadlocks(
    tmp_path: Path,
) -> None:
    """A replica that starts (or restarts after SIGKILL) creates what is missing of the views
    (``ViewStore.create``) while another replica's projector writes batches to them. Found by
    this attack: ``CREATE INDEX IF NOT EXISTS`` takes a share lock on its table even when the
    index exists, in another order than a batch takes the tables, and PostgreSQL broke the
    deadlock by failing one of them: the restarted ``thirteen serve`` exited at
    ``projector.start()``. Both must go on without an error."""
    with replicas(tmp_path) as (apps, _):
        a, b = apps
        views, _ = a.database.views()
        starting, _ = b.database.views()
        views.create()
        projector = Projector(a, views, batch=50)
        players = ["x", "y"]
        for p in players:
            a.credit(p, 10**6, f"in-{p}")
        a.open_table("t", STANDARD)
        for p in players:
            a.sit_down("t", p)
        creates = [0]

        def play() -> None:
            dealt = a.deal("t")
            for p in players:
                piles = suggest(dealt.hand(p), STANDARD).arrangement
                a.arrange(dealt.round_id, p, piles.front, piles.middle, piles.back)
            a.credit("x", 1, f"tip-{dealt.round_id}")
            a.reveal(dealt.round_id)

        def create() -> None:
            starting.create()
            creates[0] += 1

        try:
            errors = run_together(3.0, [play, create], [projector.run_once])
        finally:
            views.close()
            starting.close()
        assert errors == []
        assert creates[0] > 10


QUEUED = 1000  # credits queued at once on each replica: 2,000 commands, far more than RECENT events


def test_thousands_of_credits_queued_at_once_on_both_replicas(tmp_path: Path) -> None:
    """Absurd load: thousands of credits queued at once on each replica, most of them on the
    same few wallets (whole batches of 64 commands lose their race and run again one by one),
    while a reader that falls far behind memory (more than ``RECENT`` events) and one that
    keeps up follow on both, and each replica's projector writes batches of up to 2000
    events. Every reader ends with the log, and the views equal a rebuild."""
    with replicas(tmp_path, 3) as (apps, _):
        a, b, fresh = apps
        live = [ViewStore(path=tmp_path / f"live{k}.sqlite") for k in range(2)]
        for store in live:
            store.create()
        projectors = [Projector(app, store) for app, store in zip((a, b), live, strict=True)]
        readers = [Reader(app, seed) for seed, app in enumerate((a, b, a, b))]

        behind = [0]

        def slowly(reader: Reader) -> Any:
            """Reads only once more than ``RECENT`` events lie after its position (or the load
            is over): what it needs next has left memory."""

            def read() -> int:
                while reader.app.max_position() - reader.position <= RECENT + 64:
                    if len(queued) == 2 * QUEUED and all(f.done() for f in queued):
                        break
                    time.sleep(0.02)
                behind[0] = max(behind[0], reader.app.max_position() - reader.position)
                return reader.read_once()

            return read

        queued: list[Any] = []

        def load() -> None:
            if queued:
                for future in queued:
                    future.result()
                time.sleep(0.05)
                return
            queued.extend(
                app.submit(Thirteen.credit, app, f"p{k % 3}" if k % 8 == 0 else f"q{k}", 1, f"x{k}")
                for k in range(QUEUED)
                for app in (a, b)
            )

        errors = run_together(
            0.0,
            [load],
            [slowly(readers[0]), slowly(readers[1]), readers[2].read_once, readers[3].read_once]
            + [p.run_once for p in projectors],
            until=lambda: len(queued) == 2 * QUEUED and all(f.done() for f in queued),
        )
        assert errors == []
        assert behind[0] > RECENT
        assert all(f.exception() is None for f in queued)
        log_events = stored(a)
        assert len(log_events) >= 2 * QUEUED and log_events[-1][0] > len(log_events)
        for reader in readers:
            assert [p for p, _ in reader.got] == [p for p, _, _ in log_events]
        rebuilt = ViewStore(path=tmp_path / "rebuilt.sqlite")
        rebuild(fresh, rebuilt)
        expected = rebuilt.dump()
        for store in live:
            assert store.dump() == expected
        assert_view_invariants(expected)


T0 = datetime(2026, 1, 1, tzinfo=UTC)


def records(rng: random.Random) -> list[tuple[int, Any]]:
    """A log's view records as the folds make them, in a domain's order: credits and debits of
    a few players; rounds dealt (an open round), escapes (a penalty journal), then ended (the
    round, its settlement when revealed, a recall line per player), several at once."""
    players = ["ann", "bo", "cy", "di"]
    out: list[tuple[int, Any]] = []
    position = 0
    open_rounds: dict[str, list[str]] = {}
    escaped: dict[str, set[str]] = {}
    for n in range(rng.randint(5, 40)):
        position += rng.choice([1, 1, 2, 5])  # the log skips numbers
        at = T0 + timedelta(seconds=position)
        roll = rng.random()
        if roll < 0.35:
            p, amount = rng.choice(players), rng.randint(-50, 200)
            kind = "credit" if amount >= 0 else "debit"
            legs: tuple[Leg, ...] = (Leg(p, amount), Leg("", -amount))
            out.append((position, Journal(kind, "", f"x{n}", at, legs)))
        elif roll < 0.6 or not open_rounds:
            round_id = f"r{n}"
            open_rounds[round_id] = rng.sample(players, rng.randint(2, 4))
            escaped[round_id] = set()
            out.append(
                (position, OpenRound(uuid.uuid5(uuid.NAMESPACE_URL, round_id), round_id, at))
            )
        elif roll < 0.75:
            round_id = rng.choice(sorted(open_rounds))
            active = [p for p in open_rounds[round_id] if p not in escaped[round_id]]
            if len(active) < 3:
                continue
            who = rng.choice(active)
            escaped[round_id].add(who)
            others = [p for p in active if p != who]
            legs = (Leg(who, -2 * len(others)), *(Leg(p, 2) for p in others))
            out.append((position, Journal("escape_penalty", round_id, "", at, legs)))
        else:
            round_id = rng.choice(sorted(open_rounds))
            seated = open_rounds.pop(round_id)
            active = [p for p in seated if p not in escaped[round_id]]
            revealed = rng.random() < 0.8
            out.append((position, round_record(round_id, revealed, at)))
            if revealed:
                coins = [rng.randint(-20, 20) for _ in active[1:]]
                legs = (
                    Leg(active[0], -sum(coins)),
                    *(Leg(p, c) for p, c in zip(active[1:], coins, strict=True)),
                )
                out.append((position, Journal("settlement", round_id, "", at, legs)))
            for seat, p in enumerate(seated):
                out.append((position, recall_line(round_id, p, seat, revealed, at)))
    return out


def round_record(round_id: str, revealed: bool, at: datetime) -> RoundRecord:
    return RoundRecord(
        round_id, "t", 0, "revealed" if revealed else "abandoned", 1, {}, at, at, "seed", None, "r"
    )


def recall_line(round_id: str, player: str, seat: int, revealed: bool, at: datetime) -> RecallLine:
    return RecallLine(
        round_id,
        "t",
        0,
        player,
        seat,
        "revealed" if revealed else "abandoned",
        1,
        at,
        at,
        (),
        (),
        (),
        (),
        "",
        False,
        "",
        False,
        0,
        0,
    )


def write_in_batches(store: ViewStore, found: list[tuple[int, Any]], cuts: list[int]) -> None:
    """``found`` in batches ending at the ``cuts`` (indexes), each batch's end its last position."""
    balances: dict[str, int] = {}
    start, at = 0, 0
    for cut in [*cuts, len(found)]:
        batch = found[at:cut]
        if not batch:
            continue
        # Records of one event never split: a cut falls between positions.
        store.write(batch, start, batch[-1][0], balances)
        start, at = batch[-1][0], cut


@pytest.mark.parametrize("seed", range(60))
def test_views_written_in_any_batches_equal_those_written_in_one(seed: int, tmp_path: Path) -> None:
    """``ViewStore.write`` of the same records cut into batches anywhere between two events
    gives the same views as one batch: each recall line's balances are the ledger's around its
    round (its first and last legs), and without legs in its round, the player's balance at
    its turn, not at the batch's end; a round opened and ended in one batch is not open."""
    rng = random.Random(seed)
    found = records(rng)
    boundaries = [k for k in range(1, len(found)) if found[k][0] != found[k - 1][0]]
    cuts = sorted(rng.sample(boundaries, rng.randint(0, len(boundaries))))
    whole, cut = (ViewStore(path=tmp_path / f"{name}.sqlite") for name in ("whole", "cut"))
    for store in (whole, cut):
        store.create()
    write_in_batches(whole, found, [])
    write_in_batches(cut, found, cuts)
    assert cut.dump() == whole.dump()
    dump = whole.dump()
    assert_view_invariants(dump)
    assert not {r[0] for r in dump["rounds"]} & {r[1] for r in dump["open_rounds"]}
