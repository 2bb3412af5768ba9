"""Streams open at once are bounded like unary calls (issue 22): against a real ``thirteen serve
--max-in-flight 10``, of 30 ``WatchTable`` streams kept open by one caller, 10 are served and 20
refused ``RESOURCE_EXHAUSTED`` with the delay to retry after (``RetryInfo``), counted in the
metrics with that code; once the 10 close, a new stream is served again."""

from __future__ import annotations

import asyncio
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import grpc
from prometheus_client.parser import text_string_to_metric_families

from service._generated.thirteen.v1 import table_pb2, table_pb2_grpc
from tests.e2e.helpers import wait_until
from tests.e2e.test_load_shedding import retry_delay
from tests.support.serve_process import ServeProcess

LIMIT = 10
STREAMS = 30


async def _kept_open(address: str) -> tuple[Counter[str], list[float | None]]:
    """``STREAMS`` streams at once, each read to its first event and kept open until all have
    answered and a unary call beside them has been served; their codes (with the unary
    call's as ``unary OK``) and the refusals' delays."""
    codes: Counter[str] = Counter()
    delays: list[float | None] = []
    async with grpc.aio.insecure_channel(address) as channel:
        tables = table_pb2_grpc.TableServiceStub(channel)
        request = table_pb2.WatchTableRequest(table_id="t", after=0)
        calls = [tables.WatchTable(request, timeout=120) for _ in range(STREAMS)]

        async def first(call: Any) -> None:
            try:
                await call.read()
                codes["OK"] += 1
            except grpc.aio.AioRpcError as error:
                codes[error.code().name] += 1
                delays.append(retry_delay(error))

        try:
            await asyncio.gather(*(first(call) for call in calls))
            get = table_pb2.GetTableRequest(table_id="t")
            if (await tables.GetTable(get, timeout=60)).table_id == "t":  # streams apart
                codes["unary OK"] += 1
        finally:
            for call in calls:
                call.cancel()
    return codes, delays


def _served_again(address: str) -> bool:
    async def one() -> bool:
        async with grpc.aio.insecure_channel(address) as channel:
            tables = table_pb2_grpc.TableServiceStub(channel)
            call = tables.WatchTable(table_pb2.WatchTableRequest(table_id="t"), timeout=60)
            try:
                await call.read()
                return True
            except grpc.aio.AioRpcError:
                return False
            finally:
                call.cancel()

    return asyncio.run(one())


def _refusals_counted(metrics_line: str) -> float:
    url = metrics_line.split("serving metrics on ")[1].split()[0]
    with urllib.request.urlopen(url, timeout=30) as answer:
        text = answer.read().decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "thirteen_rpc_requests_total"
        and sample.labels.get("method") == "WatchTable"
        and sample.labels.get("code") == "RESOURCE_EXHAUSTED"
    )


def test_streams_past_the_bound_are_refused_retryably_and_counted(
    store: dict[str, str], tmp_path: Path
) -> None:
    flags = ("--metrics", "127.0.0.1:0", "--max-in-flight", str(LIMIT))
    server = ServeProcess(tmp_path / "data", *flags, environ=store)
    try:
        server.tables.OpenTable(table_pb2.OpenTableRequest(table_id="t", request_id="o"))
        codes, delays = asyncio.run(_kept_open(server.address))
        expected = {"OK": LIMIT, "RESOURCE_EXHAUSTED": STREAMS - LIMIT, "unary OK": 1}
        assert codes == Counter(expected), codes
        assert all(delay is not None and delay > 0 for delay in delays), delays
        line = next(x for x in server.lines if "serving metrics on" in x)
        assert _refusals_counted(line) == STREAMS - LIMIT
        wait_until(lambda: _served_again(server.address), "a stream served once all closed", 60)
    finally:
        server.stop()
