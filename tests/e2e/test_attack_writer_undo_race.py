"""A refused command is undone in memory by rebuilding what it changed from the store and the
batch's earlier events. On PostgreSQL another replica may have added to that stream since the
batch loaded it; the rebuild must not fail the whole batch (every caller INTERNAL): the batch
lost a race and is run again like any other lost race."""

from __future__ import annotations

import threading
from pathlib import Path

from domain.errors import SeatError
from service._generated.thirteen.v1 import table_pb2, wallet_pb2
from service.replies import Balance
from tests.support.clock import ManualClock
from tests.support.server import ServerThread
from tests.support.stores import store_environ


def test_undo_of_a_refused_command_after_another_replica_wrote(tmp_path: Path) -> None:
    with store_environ("postgres", tmp_path) as environ:
        clock = ManualClock()
        a = ServerThread(tmp_path / "a", environ, clock)
        b = ServerThread(tmp_path / "b", environ, clock)
        try:
            for p in ["f0", "f1", "f2", "f3", "x"]:
                a.wallets.Credit(
                    wallet_pb2.CreditRequest(player_id=p, amount=1000, transfer_id=f"s-{p}")
                )
            a.tables.OpenTable(table_pb2.OpenTableRequest(table_id="full"))
            for p in ["f0", "f1", "f2", "f3"]:
                a.tables.SitDown(table_pb2.SitDownRequest(table_id="full", player_id=p))

            started, gate = threading.Event(), threading.Event()

            def hold() -> None:
                started.set()
                gate.wait(10)

            a.app.writer.submit(hold)  # the writer waits: the next three form one batch
            assert started.wait(10)
            credit = a.app.submit(a.app.credit, "x", 1, "a-1")  # loads wallet x, stages +1

            def other_replica_writes() -> None:  # meanwhile replica b adds to wallet x
                b.wallets.Credit(
                    wallet_pb2.CreditRequest(player_id="x", amount=1, transfer_id="b-1")
                )

            between = a.app.writer.submit(other_replica_writes)
            # refused after wallet x took a SatDown event: its undo rebuilds wallet x
            sit = a.app.submit(a.app.sit_down, "full", "x")
            gate.set()

            assert isinstance(sit.exception(timeout=30), SeatError)
            between.result(timeout=30)
            answer = credit.result(timeout=30)  # observed: OriginatorVersionError (INTERNAL)
            assert isinstance(answer, Balance)
            assert answer.balance == 1002
            reply = b.wallets.GetBalance(wallet_pb2.GetBalanceRequest(player_id="x"))
            assert reply.balance == 1002
        finally:
            a.stop()
            b.stop()
