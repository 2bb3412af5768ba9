"""The metrics under the names stock gRPC dashboards and alerts query (go-grpc-prometheus's
``grpc_server_*``), the build and the process metrics (issue 23), scraped over HTTP from a real
server after real calls, on both stores; thirteen's own names go on beside them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from service._generated.thirteen.v1 import wallet_pb2
from tests.e2e.helpers import credit, refusal_of, wait_until
from tests.e2e.test_metrics import Scraped, number, scrape, value
from tests.support.clock import ManualClock
from tests.support.server import ServerThread

WALLET = "thirteen.v1.WalletService"


@pytest.fixture
def metered(store: dict[str, str], tmp_path: Path, clock: ManualClock) -> Iterator[ServerThread]:
    running = ServerThread(tmp_path / "data", store, clock, metrics=True)
    yield running
    running.stop()


def test_calls_are_counted_under_the_stock_grpc_names_with_gos_codes(
    metered: ServerThread,
) -> None:
    for n in range(3):
        credit(metered, f"p{n}", 100)
    nobody = wallet_pb2.GetBalanceRequest(player_id="nobody")
    assert refusal_of(metered.wallets.GetBalance, nobody).code == grpc.StatusCode.NOT_FOUND

    credits = {"grpc_type": "unary", "grpc_service": WALLET, "grpc_method": "Credit"}
    balances = {**credits, "grpc_method": "GetBalance"}

    def counted() -> Scraped | None:
        """A scrape once the last call is counted as handled: the caller has its answer a
        moment before the server's interceptor counts it."""
        scraped = scrape(metered)
        handled = value(scraped, "grpc_server_handled_total", **balances, grpc_code="NotFound")
        return scraped if handled else None

    scraped: Scraped = wait_until(counted, "the refused call counted as handled")
    assert number(scraped, "grpc_server_started_total", **credits) == 3
    assert number(scraped, "grpc_server_handled_total", **credits, grpc_code="OK") == 3
    assert number(scraped, "grpc_server_handling_seconds_count", **credits) == 3
    assert number(scraped, "grpc_server_started_total", **balances) == 1
    assert number(scraped, "grpc_server_handled_total", **balances, grpc_code="NotFound") == 1
    assert value(scraped, "grpc_server_handled_total", **balances, grpc_code="NOT_FOUND") is None
    # thirteen's own names, which its dashboards and tests query, go on as they were
    mine = {"service": WALLET, "method": "Credit"}
    assert number(scraped, "thirteen_rpc_requests_total", **mine, code="OK") == 3
    assert number(scraped, "thirteen_rpc_duration_seconds_count", **mine) == 3


def test_the_build_the_python_and_the_process_are_reported(metered: ServerThread) -> None:
    scraped = scrape(metered)
    [labels] = scraped["thirteen_build_info"]
    build = dict(labels)
    assert build["version"] and build["python"] and build["grpcio"] == grpc.__version__
    assert scraped["thirteen_build_info"][labels] == 1
    assert scraped["python_info"]
    for name in (
        "process_resident_memory_bytes",
        "process_cpu_seconds_total",
        "process_open_fds",
        "process_start_time_seconds",
    ):
        assert number(scraped, name) > 0, name
