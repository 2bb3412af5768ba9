"""What metering costs a call (issue 13): the interceptor ``service.metrics.calls`` wraps every
handler, reads the call's status code when it ends, counts it and observes its duration.
Timed in process (thread CPU time, so the machine's other work is not counted) around a
handler that does nothing, beside the same handler without it; and what rendering a scrape
costs once every method has answered. Printed against the server's CPU per command measured
by the service section in the same run, or alone (``make bench ONLY=metrics``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import grpc
from prometheus_client import generate_latest

from service.metrics import Metrics
from service.rpc.server import KNOWN_SERVICES

CALLS = 50_000
SCRAPES = 200
PATH = "/thirteen.v1.TableService/Deal"


class _Context:
    """A call's context as ``code_of`` reads it: no code set, no deadline."""

    def code(self) -> None:
        return None

    def time_remaining(self) -> None:
        return None


async def _nothing(request: bytes, context: Any) -> bytes:
    return request


def _per_call(behaviour: Any) -> float:
    """CPU seconds per awaited call of ``behaviour``."""

    async def loop() -> float:
        context = _Context()
        for _ in range(1000):
            await behaviour(b"", context)
        started = time.thread_time()
        for _ in range(CALLS):
            await behaviour(b"", context)
        return (time.thread_time() - started) / CALLS

    return asyncio.run(loop())


def _metered(metrics: Metrics, path: str, found: Any) -> Any:
    """``found`` as the interceptor hands it to grpc for ``path``."""

    async def continuation(details: Any) -> Any:
        return found

    details: Any = type("Details", (), {"method": path})()
    meter = metrics.interceptor(KNOWN_SERVICES)
    return asyncio.run(meter.intercept_service(continuation, details))


def cost() -> tuple[float, float, float, int]:
    """Microseconds per call with the interceptor and without; milliseconds to render a
    scrape, and its bytes, once every method has answered OK and one refusal."""
    bare: grpc.RpcMethodHandler[bytes, bytes] = grpc.unary_unary_rpc_method_handler(_nothing)
    metrics = Metrics()
    metered = _metered(metrics, PATH, bare)
    with_ = _per_call(metered.unary_unary)
    without = _per_call(bare.unary_unary)
    meter = metrics.interceptor(KNOWN_SERVICES)
    for path in meter.known:
        for code in ("OK", "FAILED_PRECONDITION"):
            service, method = meter.labels(path)
            meter.requests.labels(service, method, code).inc()
            meter.durations.labels(service, method).observe(0.001)
            meter.started.labels("unary", service, method).inc()
            meter.handled.labels("unary", service, method, code).inc()
            meter.handling.labels("unary", service, method).observe(0.001)
    started = time.thread_time()
    for _ in range(SCRAPES):
        text = generate_latest(metrics.registry)
    scrape = (time.thread_time() - started) / SCRAPES
    return with_ * 1e6, without * 1e6, scrape * 1e3, len(text)


def line(server_us_per_command: float | None = None) -> str:
    with_, without, scrape, size = cost()
    added = with_ - without
    text = (
        f"  metrics per call  {with_:5.1f} us through the interceptor against {without:4.1f} us "
        f"for the same handler without it: +{added:4.1f} us"
    )
    if server_us_per_command is not None:
        share = added / server_us_per_command
        text += f" = {share:5.1%} of the server's {server_us_per_command:,.0f} us CPU per command"
    return text + f"; a scrape renders in {scrape:.2f} ms ({size:,} bytes, every method answered)"


def report() -> Iterator[str]:
    yield "metrics (in process, thread CPU time; baseline: the same handler without metering)"
    yield line()
