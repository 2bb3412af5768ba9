"""The read models after random play (issue 4 §4), through the real server on both stores:
every journal balances, ledger balances equal wallet balances, no balance below zero, one
settlement per revealed round and none otherwise, results equal what Reveal returned, and the
rebuilt views equal the live ones."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from projections.folds import EXTERNAL
from projections.projector import rebuild
from projections.store import ViewStore
from service._generated.thirteen.v1 import results_pb2, wallet_pb2
from service.opening import open_app
from tests.support.server import ServerThread
from tests.support.simulation import simulate


def caught_up(server: ServerThread) -> ViewStore:
    running = server.running
    assert running.projector.wait(server.app.max_position(), timeout=10)
    return running.views


def test_views_keep_the_invariants_after_random_play(server: ServerThread) -> None:
    played = simulate(server, seed=7, rounds=14)
    assert played.reveals, "the simulation revealed no round"
    views = caught_up(server)
    assert views.unbalanced_journals() == []
    for player in played.players:
        wallet = server.wallets.GetBalance(wallet_pb2.GetBalanceRequest(player_id=player))
        assert views.balance(player) == wallet.balance, player
        entries = views.ledger(player, 0, 10_000)
        assert all(e.balance_after >= 0 for e in entries), player
    settlements = Counter(
        r
        for _, r in views._query(
            "SELECT txn_id, round_id FROM {p}journal WHERE kind = 'settlement'"
        )
    )
    assert set(settlements) == set(played.reveals)
    assert all(count == 1 for count in settlements.values())
    for round_id, revealed in played.reveals.items():
        got = server.results.GetRoundResult(results_pb2.GetRoundResultRequest(round_id=round_id))
        assert got.SerializeToString(deterministic=True) == revealed.SerializeToString(
            deterministic=True
        )
    assert views.balance(EXTERNAL) == -sum(views.balance(p) or 0 for p in played.players)


def test_get_round_result_answers_as_soon_as_reveal_returns(server: ServerThread) -> None:
    played = simulate(server, seed=11, rounds=6)
    for round_id in played.reveals:  # no waiting between the two calls
        server.results.GetRoundResult(results_pb2.GetRoundResultRequest(round_id=round_id))
    for round_id in played.unrevealed:
        with pytest.raises(Exception, match="not revealed yet"):
            server.results.GetRoundResult(results_pb2.GetRoundResultRequest(round_id=round_id))


def test_table_history_ledger_stats_and_leaderboard(server: ServerThread) -> None:
    played = simulate(server, seed=5, rounds=10)
    caught_up(server)
    history = []
    token = ""
    while True:
        page = server.results.ListRoundResults(
            results_pb2.ListRoundResultsRequest(
                table_id=played.tables[0], page_size=2, page_token=token
            )
        )
        history += list(page.rounds)
        token = page.next_page_token
        if not token:
            break
    assert [r.number for r in history] == sorted(r.number for r in history)
    ours = {r.round_id for r in history if r.outcome == "revealed"}
    assert ours <= set(played.reveals)
    player = sorted(played.players)[0]
    entries = server.results.ListLedgerEntries(
        results_pb2.ListLedgerEntriesRequest(player_id=player, page_size=1000)
    ).entries
    assert entries[0].kind == "credit"
    assert sum(e.amount for e in entries) == entries[-1].balance_after
    stats = server.results.GetPlayerStats(results_pb2.GetPlayerStatsRequest(player_id=player))
    assert stats.balance == entries[-1].balance_after
    board = server.results.GetLeaderboard(results_pb2.GetLeaderboardRequest(limit=3)).entries
    assert [e.rank for e in board] == list(range(1, len(board) + 1))
    assert [e.net_coins for e in board] == sorted((e.net_coins for e in board), reverse=True)


def test_rebuilt_views_equal_the_live_ones_and_rebuilding_twice_is_identical(
    server: ServerThread, store: dict[str, str], tmp_path: Path
) -> None:
    simulate(server, seed=3, rounds=12)
    live = caught_up(server).dump()
    server.stop()
    app = open_app(tmp_path / "data", environ=store)
    views, lock = app.database.views()
    assert lock.acquire()
    try:
        rebuild(app, views)
        first = views.dump()
        rebuild(app, views)
        assert views.dump() == first
    finally:
        lock.release()
        views.close()
        app.close()
    assert first == live


def test_the_rebuild_command_replays_the_log_with_a_progress_bar(tmp_path: Path) -> None:
    data = tmp_path / "data"
    from tests.support.clock import ManualClock

    server = ServerThread(data, {"THIRTEEN_STORE": "sqlite"}, ManualClock())
    try:
        simulate(server, seed=9, rounds=4)
        live = caught_up(server).dump()
    finally:
        server.stop()
    script = Path(sys.executable).parent / "thirteen"
    done = subprocess.run(
        [str(script), "projections", "rebuild", "--data", str(data)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "THIRTEEN_STORE": "sqlite"},
    )
    assert done.returncode == 0, done.stderr
    assert "rebuilding views [" in done.stderr and "100%" in done.stderr
    assert "rebuilt the views from" in done.stderr
    views = ViewStore(path=data / "views.sqlite")
    try:
        assert views.dump() == live
    finally:
        views.close()


def test_rebuild_refuses_while_a_server_keeps_the_views(tmp_path: Path) -> None:
    from tests.support.clock import ManualClock

    data = tmp_path / "data"
    server = ServerThread(data, {"THIRTEEN_STORE": "sqlite"}, ManualClock())
    try:
        script = Path(sys.executable).parent / "thirteen"
        done = subprocess.run(
            [str(script), "projections", "rebuild", "--data", str(data)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "THIRTEEN_STORE": "sqlite"},
        )
        assert done.returncode == 1
        assert "stop every server on this store first" in done.stderr
        assert "Traceback" not in done.stderr
    finally:
        server.stop()
