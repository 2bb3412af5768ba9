"""Interleavings and restarts that broke the landed service (issue: reliability).

Each test here failed before its fix: honest data failing the audit and Deal/Reveal giving up
under concurrent top-ups, the read models stopping for good after a restart between the last
Arrange and the Reveal, a projector failure that nobody was told of, and a start-up that read
the whole log.
"""

from __future__ import annotations

import json
import shutil
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2

from projections.folds import Record, RoundLoader, ViewFold
from service._generated.thirteen.v1 import results_pb2, table_pb2, table_pb2_grpc, wallet_pb2
from tests.e2e.helpers import (
    arrange_well,
    balance,
    credit,
    deal,
    reveal,
    seated_table,
    wait_until,
)
from tests.fixtures.v1_outputs import OUTPUTS as V1_OUTPUTS
from tests.fixtures.v1_outputs import capture as capture_v1_outputs
from tests.support.cli import thirteen
from tests.support.clock import ManualClock
from tests.support.health import health_stub
from tests.support.server import ServerThread

FIXTURE = Path(__file__).parent.parent / "fixtures" / "v1_store"
RESULTS = "thirteen.v1.ResultsService"


def assert_audit_passes(store: dict[str, str], data: Path) -> None:
    done = thirteen("audit", "--all", "--data", str(data), "--json", env=store)
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    report = json.loads(done.stdout)
    failed = [f for r in report["rounds"] for f in r["findings"] if not f["ok"]]
    failed += [f for f in report.get("findings", []) if not f.get("ok", True)]
    assert done.returncode == 0 and not failed, failed[:5] or done.stdout[-2000:]


def test_audit_passes_and_nothing_aborts_while_seated_players_top_up(
    server: ServerThread, store: dict[str, str], tmp_path: Path
) -> None:
    """Three tables play full rounds while another client credits their seated players one
    coin at a time: every chain link stays right and no Deal or Reveal gives up (ABORTED)."""
    tables = {f"t{t}": [f"p{t}{i}" for i in range(4)] for t in range(3)}
    for table_id, players in tables.items():
        seated_table(server, table_id, dict.fromkeys(players, 10_000))
    everyone = [p for players in tables.values() for p in players]
    stop = threading.Event()
    aborted: list[str] = []
    credited = {p: 0 for p in everyone}
    lock = threading.Lock()

    def top_up(name: str) -> None:
        n = 0
        while not stop.is_set():
            player = everyone[n % len(everyone)]
            try:
                credit(server, player, 1, f"top-{name}-{n}")
                with lock:
                    credited[player] += 1
            except grpc.RpcError as error:
                aborted.append(f"Credit: {error.code().name} {error.details()}")
            n += 1

    def play(table_id: str) -> None:
        for _ in range(6):
            try:
                dealt = deal(server, table_id)
                arrange_well(server, dealt)
                reveal(server, dealt.round_id)
            except grpc.RpcError as error:
                aborted.append(f"{table_id}: {error.code().name} {error.details()}")
                return

    toppers = [threading.Thread(target=top_up, args=(str(k),)) for k in range(2)]
    playing = [threading.Thread(target=play, args=(t,)) for t in tables]
    for thread in toppers + playing:
        thread.start()
    for thread in playing:
        thread.join(timeout=120)
    stop.set()
    for thread in toppers:
        thread.join(timeout=30)
    assert aborted == []
    total = sum(balance(server, p) for p in everyone)
    assert total == 10_000 * len(everyone) + sum(credited.values())
    server.stop()
    assert_audit_passes(store, tmp_path / "data")


def _arranged_round(server: ServerThread) -> str:
    seated_table(server, "t", {"A": 1000, "B": 1000, "C": 1000})
    first = deal(server, "t")
    arrange_well(server, first)
    reveal(server, first.round_id)
    dealt = deal(server, "t")
    arrange_well(server, dealt)  # every hand in: only the Reveal is left
    return dealt.round_id


def _result(server: ServerThread, round_id: str) -> results_pb2.GetRoundResultResponse:
    return server.results.GetRoundResult(results_pb2.GetRoundResultRequest(round_id=round_id))


def test_views_keep_moving_after_a_restart_between_the_last_arrange_and_the_reveal(
    start_server: Callable[[], ServerThread],
) -> None:
    first = start_server()
    round_id = _arranged_round(first)
    first.stop()
    second = start_server()
    revealed = reveal(second, round_id)
    assert _result(second, round_id).players == revealed.players
    credit(second, "A", 5, "after")  # and the ledger keeps moving after it
    wait_until(
        lambda: second.running.views.balance("A") == balance(second, "A"), "the ledger to catch up"
    )


def test_views_survive_every_projector_reset_mid_round(server: ServerThread) -> None:
    """A stale batch, an exception or a change of leader resets the projector's working state;
    it rebuilds that state from what is stored and goes on."""
    round_id = _arranged_round(server)
    server.running.projector.poke()
    wait_until(
        lambda: server.running.views.position() >= server.app.max_position(), "views to catch up"
    )
    server.running.projector._reset()
    revealed = reveal(server, round_id)
    assert _result(server, round_id).players == revealed.players


def _health(server: ServerThread, service: str) -> int:
    stub = health_stub(server.channel)
    return stub.Check(health_pb2.HealthCheckRequest(service=service)).status


def test_a_projector_that_cannot_apply_an_event_says_so_and_commands_go_on(
    server: ServerThread,
    monkeypatch: pytest.MonkeyPatch,
    caplog_json: Callable[[], list[dict[str, Any]]],
) -> None:
    """The results service turns NOT_SERVING on health, the log names the event, commands
    keep working, and once the cause is gone the views catch up and it serves again."""
    seated_table(server, "t", {"A": 1000, "B": 1000})
    apply = ViewFold.apply
    broken = threading.Event()
    broken.set()

    def failing(self: ViewFold, event: Any, load_round: RoundLoader | None = None) -> list[Record]:
        if broken.is_set() and type(event).__name__ == "Revealed":
            raise ValueError("simulated defect in a fold")
        return apply(self, event, load_round)

    monkeypatch.setattr(ViewFold, "apply", failing)
    dealt = deal(server, "t")
    arrange_well(server, dealt)
    revealed = reveal(server, dealt.round_id)
    serving = health_pb2.HealthCheckResponse
    wait_until(
        lambda: _health(server, RESULTS) == serving.NOT_SERVING, "results to turn NOT_SERVING"
    )
    assert _health(server, "") == serving.SERVING
    with pytest.raises(grpc.RpcError) as raised:
        _result(server, dealt.round_id)
    assert raised.value.code() == grpc.StatusCode.UNAVAILABLE
    assert credit(server, "A", 1, "still-taking-commands") == balance(server, "A")
    failures = [e for e in caplog_json() if e.get("event") == "projection_failed"]
    assert failures and "Revealed" in failures[-1]["failed_event"]
    assert failures[-1]["position"] > 0
    broken.clear()
    wait_until(lambda: _health(server, RESULTS) == serving.SERVING, "results to serve again")
    assert _result(server, dealt.round_id).players == revealed.players


def test_start_up_resumes_from_the_views_position_and_still_sweeps_open_rounds(
    start_server: Callable[[], ServerThread], clock: ManualClock
) -> None:
    first = start_server()
    seated_table(first, "t", {"A": 1000, "B": 1000})
    for _ in range(3):
        dealt = deal(first, "t")
        arrange_well(first, dealt)
        reveal(first, dealt.round_id)
    open_round = deal(first, "t")
    wait_until(
        lambda: first.running.views.position() >= first.app.max_position(), "views to catch up"
    )
    first.stop()
    second = start_server()
    assert second.running.follower.started_at >= second.app.max_position() - 1
    clock.advance(61)
    wait_until(
        lambda: (
            second.tables.GetRound(table_pb2.GetRoundRequest(round_id=open_round.round_id)).phase
            == table_pb2.ROUND_PHASE_REVEALED
        ),
        "the sweeper to reveal the round dealt before the restart",
    )


def test_a_store_written_by_the_first_version_is_served_audited_and_played_on(
    tmp_path: Path,
) -> None:
    """The fixture store (tests/fixtures/v1_store, written by the first landed version) holds
    a round with every hand arranged but not revealed and one past its deadline: the current
    version reveals both, its views are rebuilt for the new view schema and agree with the
    wallets, and the audit passes."""
    data = tmp_path / "data"
    shutil.copytree(FIXTURE, data)
    clock = ManualClock(datetime(2026, 11, 1, 12, 0, tzinfo=UTC))  # the fixture's own morning
    server = ServerThread(data, {"THIRTEEN_STORE": "sqlite"}, clock)
    try:
        players = ["ann", "bob", "cat", "dan", "eve"]
        fujian = server.tables.GetTable(table_pb2.GetTableRequest(table_id="t-fujian"))
        revealed = reveal(server, fujian.current_round_id)  # every hand was in: no wait
        assert sum(p.coins for p in revealed.players) == 0
        assert _result(server, fujian.current_round_id).players == revealed.players
        clock.advance(3600)
        wait_until(
            lambda: (
                server.tables.GetTable(
                    table_pb2.GetTableRequest(table_id="t-standard")
                ).current_round_id
                == ""
            ),
            "the sweeper to reveal the overdue round",
        )
        credit(server, "ann", 3, f"later-{uuid.uuid4().hex}")
        server.wallets.Debit(
            wallet_pb2.DebitRequest(player_id="eve", amount=1, transfer_id="later-out")
        )
        wait_until(
            lambda: all(server.running.views.balance(p) == balance(server, p) for p in players),
            "every ledger to equal its wallet",
        )
    finally:
        server.stop()
    assert_audit_passes({"THIRTEEN_STORE": "sqlite"}, data)


def test_old_rounds_answer_exactly_as_before_their_results_were_recorded() -> None:
    """STYLE 14: the finished rounds of the fixture store were revealed by ``Revealed`` events
    of class version 1, which recorded no showdown. Read through the upcast and scored from
    their own events (R9.3), they answer what the version before results were recorded
    answered (``tests/fixtures/v1_outputs.py``): GetRoundResult, GetRound for every viewer, a
    repeated Reveal, ListRoundResults, WatchTable, the rebuilt results view, explain and
    replay, field for field and byte for byte."""
    before = _same_view_before_the_reveal(json.loads(V1_OUTPUTS.read_text(encoding="utf-8")))
    now = json.loads(json.dumps(capture_v1_outputs(), ensure_ascii=False), object_hook=_v1_caller)
    assert now.keys() == before.keys()
    for section in ("views", "tables", "rounds"):
        assert now[section].keys() == before[section].keys(), section
        for key, value in before[section].items():
            assert now[section][key] == value, f"{section}: {key}"


def _same_view_before_the_reveal(before: dict[str, Any]) -> dict[str, Any]:
    """The one change issue 22 made on purpose: a live stream tells a viewer other than the
    submitting player only that a hand was submitted (``HandSubmitted``), not how
    (``HandArranged``, ``SpecialDeclared``); everything else stays byte for byte."""
    for table in before["tables"].values():
        for viewer, messages in table["watch"].items():
            for message in messages:
                told = message["type"] in ("HandArranged", "SpecialDeclared")
                if told and message.get("player_id") != viewer:
                    message["type"] = "HandSubmitted"
    return before


def _v1_caller(entry: dict[str, object]) -> dict[str, object]:
    """A replay step of a v1 event names its caller as unknown (issue 11: callers are recorded
    since); v1 answered without the key. Any other caller is a difference."""
    if entry.get("caller") == "unknown":
        return {k: v for k, v in entry.items() if k != "caller"}
    return entry


def test_restart_time_does_not_grow_with_the_log(start_server: Callable[[], ServerThread]) -> None:
    """The follower starts where the views are, not at the start of the log."""
    first = start_server()
    seated_table(first, "t", {"A": 1000, "B": 1000})
    for _ in range(5):
        dealt = deal(first, "t")
        arrange_well(first, dealt)
        reveal(first, dealt.round_id)
    wait_until(
        lambda: first.running.views.position() >= first.app.max_position(), "views to catch up"
    )
    first.stop()
    second = start_server()
    assert second.running.follower.started_at > 0


def test_terminated_postgres_connections_are_replaced_and_nothing_is_lost(
    store: dict[str, str], tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every PostgreSQL session of the server (event store pool, views, projector lock) is cut
    with pg_terminate_backend between commands, twice: the next commands, the views and the
    projector's leadership carry on."""
    if store.get("THIRTEEN_STORE") != "postgres":
        pytest.skip("PostgreSQL sessions only")
    import psycopg

    from tests.support.stores import PG

    name = f"thirteen-test-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("PGAPPNAME", name)  # libpq: marks this process's sessions
    server = ServerThread(tmp_path / "data", store, clock)
    try:
        seated_table(server, "t", {"A": 1000, "B": 1000})
        for cut in range(2):
            dealt = deal(server, "t")
            arrange_well(server, dealt)
            with psycopg.connect(autocommit=True, **PG) as admin:
                killed = admin.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE application_name = %s AND pid <> pg_backend_pid()",
                    (name,),
                ).fetchone()
            assert killed is not None and killed[0] > 0
            revealed = reveal(server, dealt.round_id)
            assert _result(server, dealt.round_id).players == revealed.players
            assert credit(server, "A", 1, f"after-cut-{cut}") == balance(server, "A")
            wait_until(
                lambda: all(
                    server.running.views.balance(p) == balance(server, p) for p in ("A", "B")
                ),
                "the ledger to equal the wallets",
            )
        assert _health(server, RESULTS) == health_pb2.HealthCheckResponse.SERVING
    finally:
        server.stop()


def test_made_up_viewers_share_the_observers_message(
    server: ServerThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Anyone but a player of a round in progress sees what an observer sees, so streams with
    thirty invented viewer names cost one message build per event, not thirty."""
    from collections import Counter

    seated_table(server, "t", {"A": 1000, "B": 1000})
    streams = [
        server.tables.WatchTable(
            table_pb2.WatchTableRequest(table_id="t", viewer=f"nobody-{n}"), timeout=60
        )
        for n in range(30)
    ]
    built: Counter[int] = Counter()
    real = table_pb2.WatchTableResponse

    def counted(*args: Any, **kwargs: Any) -> table_pb2.WatchTableResponse:
        message = real(*args, **kwargs)
        built[message.position] += 1
        return message

    try:
        for stream in streams:
            assert next(stream).type == "TableOpened"
        wait_until(lambda: server.running.hub.streams(live=True) == 30, "streams to go live")
        before = server.app.max_position()
        monkeypatch.setattr(table_pb2, "WatchTableResponse", counted)
        dealt = deal(server, "t")
        arrange_well(server, dealt)
        reveal(server, dealt.round_id)
        seen = []
        for message in streams[0]:
            seen.append(message)
            if message.type == "RoundEnded":
                break
    finally:
        for stream in streams:
            stream.cancel()
    live = [m for m in seen if m.position > before]
    assert live and all(not m.round.hands for m in live if m.type != "RoundRevealed")
    assert all(built[m.position] == 1 for m in live), built


def test_stopping_the_server_ends_every_stream_with_where_to_resume(
    start_server: Callable[[], ServerThread],
) -> None:
    server = start_server()
    seated_table(server, "t", {"A": 1000, "B": 1000})
    channel = grpc.insecure_channel(server.address)  # the test's, open after the server's
    stub = table_pb2_grpc.TableServiceStub(channel)
    streams = [
        stub.WatchTable(table_pb2.WatchTableRequest(table_id="t"), timeout=60) for _ in range(5)
    ]
    for stream in streams:
        assert next(stream).type == "TableOpened"
    wait_until(lambda: server.running.hub.streams(live=True) == 5, "streams to go live")
    server.stop()
    for stream in streams:
        with pytest.raises(grpc.RpcError) as ended:
            list(stream)
        assert ended.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "the server is stopping; resume with after=" in (ended.value.details() or "")
    channel.close()
