"""Open WatchTable streams hold no worker thread, so unary calls stay fast (NOTES.md: with a
sync server they starved)."""

from __future__ import annotations

import time

from service._generated.thirteen.v1 import table_pb2, wallet_pb2

STREAMS = 64  # eight times the server's worker threads


def test_many_open_watch_streams_do_not_starve_unary_calls(server):
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
