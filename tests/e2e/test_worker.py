"""The work no caller waits for, out of the serving process (issue 21): ``thirteen serve
--background worker`` keeps neither the views nor the transparency log, and ``thirteen worker``
processes keep both, one leading and one standing by. Real processes, on SQLite and on
PostgreSQL: the results and the checkpoints come through the serving process once the worker
stores them; the leading worker killed with SIGKILL, the standby takes over, and the views and
the log stay consistent (``audit --all`` passes); without a worker, ``ResultsService`` reports
NOT_SERVING after the stall, and SERVING again once one starts."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2

from service._generated.thirteen.v1 import results_pb2, results_pb2_grpc
from tests.e2e.helpers import seated_table, wait_until
from tests.e2e.test_transparency import (
    FAST_CHECKPOINTS,
    PLAYERS,
    assert_extends,
    audit_store,
    play_round,
    signed_head,
)
from tests.e2e.test_witness import keys
from tests.support.health import health_stub
from tests.support.serve_process import ServeProcess
from tests.support.worker_process import WorkerProcess

RESULTS = "thirteen.v1.ResultsService"
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def result(server: ServeProcess, round_id: str) -> results_pb2.GetRoundResultResponse:
    stub = results_pb2_grpc.ResultsServiceStub(server.channel)
    return stub.GetRoundResult(results_pb2.GetRoundResultRequest(round_id=round_id), timeout=30)


def results_health(server: ServeProcess) -> int:
    request = health_pb2.HealthCheckRequest(service=RESULTS)
    return health_stub(server.channel).Check(request, timeout=10).status


def assert_zero_sum(answer: results_pb2.GetRoundResultResponse) -> None:
    assert len(answer.players) == len(PLAYERS)
    assert sum(player.coins for player in answer.players) == 0  # R7.2: zero-sum
    assert sum(player.points for player in answer.players) == 0


def test_a_worker_keeps_the_views_and_the_log_and_a_standby_takes_over_after_kill_9(
    store: dict[str, str], tmp_path: Path
) -> None:
    log_pub = keys(tmp_path / "log", "--name", "thirteen.test/worker")
    data = tmp_path / "data"
    flags = ("--log-key", str(tmp_path / "log" / "log.key"), *FAST_CHECKPOINTS)
    server = ServeProcess(data, "--background", "worker", *flags, environ=store)
    workers = [WorkerProcess(data, *flags, environ=store)]
    try:
        seated_table(server, "t1", PLAYERS)
        first = play_round(server, "t1")
        answer = result(server, first)  # read-your-writes: waits for the worker's views
        assert answer.round_id == first
        assert_zero_sum(answer)
        head = signed_head(server, log_pub, server.stored_events())  # signed by the worker
        assert results_health(server) == SERVING
        leader = workers[0]
        wait_until(leader.leads, "the first worker to lead the views and the log")
        workers.append(WorkerProcess(data, *flags, environ=store))  # a standby
        leader.kill()
        standby = workers[1]
        second = play_round(server, "t1")
        assert_zero_sum(result(server, second))
        later = signed_head(server, log_pub, server.stored_events())
        assert_extends(server, head, later)
        wait_until(standby.leads, "the standby to say it leads")
        assert result(server, first) == answer  # what the views held is unchanged
    finally:
        server.stop()
        for worker in workers:
            worker.stop()
    audited = audit_store(store, data, "--all", "--log-public-key", log_pub)
    assert audited.status == 0, audited.stdout[-2000:] + audited.stderr
    assert not standby.said("projection_failed"), standby.lines[-20:]


def test_without_a_worker_results_are_not_serving_after_the_stall_and_recover_when_one_starts(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    server = ServeProcess(data, "--background", "worker", *FAST_CHECKPOINTS)
    worker: WorkerProcess | None = None
    try:
        seated_table(server, "t1", PLAYERS)
        round_id = play_round(server, "t1")  # commands need no worker
        with pytest.raises(grpc.RpcError) as waited:
            stub = results_pb2_grpc.ResultsServiceStub(server.channel)
            stub.GetRoundResult(results_pb2.GetRoundResultRequest(round_id=round_id), timeout=1)
        assert waited.value.code() in {
            grpc.StatusCode.DEADLINE_EXCEEDED,
            grpc.StatusCode.UNAVAILABLE,
        }
        wait_until(lambda: results_health(server) == NOT_SERVING, "ResultsService NOT_SERVING", 60)
        with pytest.raises(grpc.RpcError) as refused:
            result(server, round_id)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "thirteen worker" in str(refused.value.details())
        worker = WorkerProcess(data, *FAST_CHECKPOINTS)
        wait_until(lambda: results_health(server) == SERVING, "ResultsService SERVING again", 30)
        assert_zero_sum(result(server, round_id))
    finally:
        server.stop()
        if worker is not None:
            worker.stop()
