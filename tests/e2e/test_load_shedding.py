"""Bursts are shed with a retryable answer (issue 22, finding 4): 3,000 calls in flight at once
against a real ``thirteen serve``. Each is answered OK or ``RESOURCE_EXHAUSTED`` with the delay
to retry after (``RetryInfo``), none ``CANCELLED``; every refused credit left nothing behind,
every accepted one is applied once, and the metrics count the refusals with their code."""

from __future__ import annotations

import asyncio
import urllib.request
from collections import Counter
from pathlib import Path

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from prometheus_client.parser import text_string_to_metric_families

from service._generated.thirteen.v1 import (
    results_pb2,
    results_pb2_grpc,
    wallet_pb2,
    wallet_pb2_grpc,
)
from tests.e2e.helpers import wait_until
from tests.support.serve_process import ServeProcess

CALLS = 3_000
PLAYERS = 20


def retry_delay(error: grpc.aio.AioRpcError) -> float | None:
    """The RetryInfo delay of a refusal, in seconds (None: it carries none)."""
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    for detail in status.details if status is not None else ():
        info = error_details_pb2.RetryInfo()
        if detail.Unpack(info):  # False: another kind of detail
            return float(info.retry_delay.ToTimedelta().total_seconds())
    return None


async def burst(address: str) -> tuple[Counter[str], set[str], list[float | None]]:
    """Every credit at once; the codes, the accepted transfer ids, the refusals' delays."""
    codes: Counter[str] = Counter()
    accepted: set[str] = set()
    delays: list[float | None] = []
    async with grpc.aio.insecure_channel(address) as channel:
        wallets = wallet_pb2_grpc.WalletServiceStub(channel)

        async def credit(n: int) -> None:
            request = wallet_pb2.CreditRequest(
                player_id=f"p{n % PLAYERS}", amount=1, transfer_id=f"t{n}"
            )
            try:
                await wallets.Credit(request, timeout=120)
            except grpc.aio.AioRpcError as error:
                codes[error.code().name] += 1
                if error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                    delay = retry_delay(error)
                    trailers = dict(error.trailing_metadata() or ())
                    pushback = trailers.get("grpc-retry-pushback-ms")
                    # gRPC's own retries wait what RetryInfo says (issue 23)
                    same = delay is not None and pushback == str(round(delay * 1000))
                    delays.append(delay if same else None)
                return
            codes["OK"] += 1
            accepted.add(request.transfer_id)

        await asyncio.gather(*(credit(n) for n in range(CALLS)))
    return codes, accepted, delays


def refusals_counted(metrics_line: str) -> float:
    url = metrics_line.split("serving metrics on ")[1].split()[0]
    with urllib.request.urlopen(url, timeout=30) as answer:
        text = answer.read().decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "thirteen_rpc_requests_total"
        and sample.labels.get("method") == "Credit"
        and sample.labels.get("code") == "RESOURCE_EXHAUSTED"
    )


def test_a_burst_is_answered_ok_or_resource_exhausted_never_cancelled(
    store: dict[str, str], tmp_path: Path
) -> None:
    flags = ("--metrics", "127.0.0.1:0", "--max-in-flight", "50")  # shed, however fast the client
    server = ServeProcess(tmp_path / "data", *flags, environ=store)
    try:
        codes, accepted, delays = asyncio.run(burst(server.address))
        assert set(codes) <= {"OK", "RESOURCE_EXHAUSTED"}, codes
        assert codes["OK"] + codes["RESOURCE_EXHAUSTED"] == CALLS
        assert delays and all(d is not None and d > 0 for d in delays)
        wallets = wallet_pb2_grpc.WalletServiceStub(server.channel)
        balances = sum(
            wallets.GetBalance(wallet_pb2.GetBalanceRequest(player_id=f"p{n}")).balance
            for n in range(PLAYERS)
        )
        assert balances == len(accepted) == codes["OK"]  # each accepted once, no refused one
        line = next(x for x in server.lines if "serving metrics on" in x)
        assert refusals_counted(line) == codes["RESOURCE_EXHAUSTED"]
        ledger = results_pb2.ListLedgerEntriesRequest(player_id="p0", page_size=1000)
        results = results_pb2_grpc.ResultsServiceStub(server.channel)

        def stored() -> set[str] | None:
            entries = results.ListLedgerEntries(ledger).entries
            found = {e.transfer_id for e in entries}
            expected = {t for t in accepted if int(t[1:]) % PLAYERS == 0}
            return found if found == expected else None

        wait_until(stored, "p0's ledger to hold exactly its accepted credits", 60)
    finally:
        server.stop()
