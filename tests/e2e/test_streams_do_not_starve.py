"""Open WatchTable streams hold no worker thread, so unary calls stay fast (NOTES.md: with a
sync server they starved); and streams of one table share each event's message, so idle
streams cost the server no work per stream (STYLE 12: each event is encoded once)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from service._generated.thirteen.v1 import table_pb2, table_pb2_grpc, wallet_pb2
from tests.e2e.helpers import (
    WAIT,
    arrange_well,
    deal,
    events,
    head,
    read_until,
    reveal,
    seated_table,
    wait_until,
)
from tests.e2e.test_watch_backpressure import hub_of
from tests.support.server import ServerThread

STREAMS = 64  # eight times the server's worker threads
IDLE_STREAMS = 150
VIEWERS = ["", "A", "B", "C", "mallory"]
ROUNDS = 3


def test_many_open_watch_streams_do_not_starve_unary_calls(server: ServerThread) -> None:
    server.tables.OpenTable(table_pb2.OpenTableRequest(table_id="busy"))
    streams = [
        server.tables.WatchTable(table_pb2.WatchTableRequest(table_id="busy"))
        for _ in range(STREAMS)
    ]
    try:
        for stream in streams:  # each has delivered the catch-up, so each is open and waiting
            assert next(stream).type == "TableOpened"
        started = time.monotonic()
        for n in range(20):
            server.wallets.Credit(
                wallet_pb2.CreditRequest(player_id="p", amount=1, transfer_id=f"t{n}"), timeout=5
            )
        assert time.monotonic() - started < 10
        balance = server.wallets.GetBalance(wallet_pb2.GetBalanceRequest(player_id="p"), timeout=5)
        assert balance.balance == 20
    finally:
        for stream in streams:
            stream.cancel()


def test_idle_streams_on_a_busy_table_share_each_event_message(
    server: ServerThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """table.proto WatchTable, STYLE 12: 150 streams on one table, as five viewers, whose
    clients never read while rounds are played: each event's message is built at most once
    per viewer, not once per stream, every stream still gets its viewer's messages, and
    GetBalance is answered throughout."""
    seated_table(server, "busy", dict.fromkeys("ABC", 1000))
    channels = [grpc.insecure_channel(server.address) for _ in range(3)]
    stubs = [table_pb2_grpc.TableServiceStub(channel) for channel in channels]
    streams = [
        stubs[n % len(stubs)].WatchTable(
            table_pb2.WatchTableRequest(table_id="busy", viewer=VIEWERS[n % len(VIEWERS)]),
            timeout=WAIT * 6,
        )
        for n in range(IDLE_STREAMS)
    ]
    built: Counter[int] = Counter()
    real = table_pb2.WatchTableResponse

    def counted(*args: Any, **kwargs: Any) -> table_pb2.WatchTableResponse:
        message = real(*args, **kwargs)
        built[message.position] += 1
        return message

    try:
        for stream in streams:  # caught up to the first event; most are never read again
            assert next(stream).type == "TableOpened"
        hub = hub_of(server)
        wait_until(lambda: hub.streams(live=True) == IDLE_STREAMS, "every stream to catch up")
        before = head(server)
        monkeypatch.setattr(table_pb2, "WatchTableResponse", counted)

        failed: list[BaseException] = []

        def play() -> None:
            try:
                for _ in range(ROUNDS):
                    dealt = deal(server, "busy")
                    arrange_well(server, dealt)
                    reveal(server, dealt.round_id)
            except BaseException as error:
                failed.append(error)

        player = threading.Thread(target=play)
        player.start()
        answered = 0
        while player.is_alive() or not answered:
            reply = server.wallets.GetBalance(
                wallet_pb2.GetBalanceRequest(player_id="A"), timeout=WAIT
            )
            assert reply.balance > 0
            answered += 1
        player.join()
        assert not failed, failed
        last = _nth(ROUNDS, "RoundEnded")
        live = {
            viewer: [m for m in read_until(streams[k], last()) if m.position > before]
            for k, viewer in enumerate(VIEWERS)
        }
        shown = dict(built)
    finally:
        for stream in streams:
            stream.cancel()
        for channel in channels:
            channel.close()

    builds = {m.position: shown.get(m.position, 0) for m in live[""]}
    assert len(builds) >= ROUNDS * 7  # RoundStarted, RoundDealt, 3 HandArranged, ...
    assert all(1 <= n <= len(VIEWERS) for n in builds.values()), builds
    for viewer, got in live.items():
        assert got == events(server, "busy", last(), viewer=viewer)[-len(got) :]


def _nth(n: int, kind: str) -> Callable[[], Callable[[table_pb2.WatchTableResponse], bool]]:
    def factory() -> Callable[[table_pb2.WatchTableResponse], bool]:
        seen = 0

        def last(message: table_pb2.WatchTableResponse) -> bool:
            nonlocal seen
            seen += message.type == kind
            return seen == n

        return last

    return factory
