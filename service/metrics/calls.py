"""Every RPC counted by method and status code, and timed: the outermost interceptor, so a call
the others refuse (authorization, an undecodable request) is counted with its code too. It
wraps each handler through the interceptors' shared mechanism (``service.rpc.guards``).

Labels stay bounded: ``service`` and ``method`` come from the services the server declares,
any other path is ``unknown``; ``code`` is a ``grpc.StatusCode`` name. A server-streaming call
(``WatchTable``) is counted when it ends, and its length is not a latency: it is left out of
the duration histogram. Client-streaming calls (reflection's) pass uncounted.

The same calls are counted again under the names stock gRPC dashboards and alerts query
(go-grpc-prometheus's, ``grpc_server_*``, with its labels and Go's spelling of the codes),
as a stock interceptor would: at every server a call reaches, so a call a replica passes on to
its table's owner is counted at both, where ``thirteen_rpc_requests`` counts it once, at the
owner; and a stream's length is timed too (dashboards select ``grpc_type="unary"``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import grpc
from google.protobuf import descriptor_pool
from grpc.aio import AbortError
from prometheus_client import CollectorRegistry, Counter, Histogram

from service.rpc.behalf import passed_on
from service.rpc.guards import Began, Context, Ended, GuardingInterceptor, Handler, guarded

UNKNOWN = "unknown"
DEADLINE_SLACK = 0.25
"""Seconds: a call cancelled with less than this left before its deadline ended by it. The
client's deadline fires first and cancels the call, before the server's own (which started
when the request arrived): the server sees a cancellation with a few milliseconds left, or
the time a request takes between regions."""
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
"""Seconds: from half a millisecond (a health check) to five (a call waiting on the store)."""


def go_code(code: grpc.StatusCode) -> str:
    """A status code as Go spells it (``codes.Code.String()``), the ``grpc_code`` label.

    >>> go_code(grpc.StatusCode.DEADLINE_EXCEEDED), go_code(grpc.StatusCode.CANCELLED)
    ('DeadlineExceeded', 'Canceled')
    >>> go_code(grpc.StatusCode.OK)
    'OK'
    """
    if code in (grpc.StatusCode.OK, grpc.StatusCode.CANCELLED):
        return "OK" if code == grpc.StatusCode.OK else "Canceled"
    return "".join(word.capitalize() for word in code.name.split("_"))


def methods(services: Iterable[str]) -> dict[str, tuple[str, str]]:
    """The ``/package.Service/Method`` paths of ``services`` (full names in protobuf's default
    pool, where the generated modules register them), each with its labels."""
    pool = descriptor_pool.Default()
    found = {}
    for name in services:
        service = pool.FindServiceByName(name)
        for method in service.methods:
            found[f"/{service.full_name}/{method.name}"] = (service.full_name, method.name)
    return found


def code_of(context: Context[Any, Any], error: BaseException | None) -> grpc.StatusCode:
    """The status a call ended with: the one it set or aborted with (OK when it returned
    without one); a cancelled call's is DEADLINE_EXCEEDED when its deadline had passed or was
    less than ``DEADLINE_SLACK`` away, else CANCELLED; any other exception is answered
    UNKNOWN by grpc."""
    if error is None or isinstance(error, AbortError):
        code = context.code()
        if isinstance(code, grpc.StatusCode):
            return code
        return grpc.StatusCode.OK if error is None else grpc.StatusCode.UNKNOWN
    if isinstance(error, asyncio.CancelledError | GeneratorExit):
        remaining = context.time_remaining()
        if remaining is not None and remaining < DEADLINE_SLACK:
            return grpc.StatusCode.DEADLINE_EXCEEDED
        return grpc.StatusCode.CANCELLED
    return grpc.StatusCode.UNKNOWN


class CallMeter(GuardingInterceptor):
    """Counts and times the calls of the methods of ``services`` (full service names)."""

    def __init__(self, registry: CollectorRegistry, services: Iterable[str]) -> None:
        super().__init__()
        self.requests = Counter(
            "thirteen_rpc_requests",
            "RPCs answered, by service, method and status code (streams when they end).",
            ["service", "method", "code"],
            registry=registry,
        )
        self.durations = Histogram(
            "thirteen_rpc_duration_seconds",
            "Seconds from a decoded request to the handler's answer, unary RPCs only.",
            ["service", "method"],
            buckets=BUCKETS,
            registry=registry,
        )
        self.known = methods(services)
        stock = ["grpc_type", "grpc_service", "grpc_method"]
        self.started = Counter(
            "grpc_server_started",
            "RPCs started on the server (go-grpc-prometheus's name).",
            stock,
            registry=registry,
        )
        self.handled = Counter(
            "grpc_server_handled",
            "RPCs completed on the server, whatever their status (go-grpc-prometheus's name).",
            [*stock, "grpc_code"],
            registry=registry,
        )
        self.handling = Histogram(
            "grpc_server_handling_seconds",
            "Seconds from a decoded request to the handler's answer, or to a stream's end "
            "(go-grpc-prometheus's name).",
            stock,
            buckets=BUCKETS,
            registry=registry,
        )

    def labels(self, path: str) -> tuple[str, str]:
        """The service and method labels of a call's path; ``unknown`` for any other path."""
        return self.known.get(path, (UNKNOWN, UNKNOWN))

    def missing(self, path: str) -> None:
        self.requests.labels(UNKNOWN, UNKNOWN, grpc.StatusCode.UNIMPLEMENTED.name).inc()

    def wrap(self, path: str, found: Handler[Any, Any]) -> Handler[Any, Any]:
        streaming = found.unary_stream is not None
        began, ended = self._told(path, streaming=streaming)
        return guarded(found, None, ended=ended, began=began) or found

    def _told(self, path: str, *, streaming: bool) -> tuple[Began, Ended]:
        """What a call of ``path`` tells when it begins and ends: its labelled series, looked
        up once."""
        service, method = self.labels(path)
        duration = None if streaming else self.durations.labels(service, method)
        counted: dict[grpc.StatusCode, Counter] = {}
        stock = ("server_stream" if streaming else "unary", service, method)
        handled: dict[grpc.StatusCode, Counter] = {}
        handling = self.handling.labels(*stock)
        began: Began = self.started.labels(*stock).inc

        def ended(context: Context[Any, Any], error: BaseException | None, seconds: float) -> None:
            code = code_of(context, error)
            stock_series = handled.get(code)
            if stock_series is None:
                stock_series = handled[code] = self.handled.labels(*stock, go_code(code))
            stock_series.inc()
            handling.observe(seconds)
            if passed_on():  # counted by the owner that served it, once
                return
            series = counted.get(code)
            if series is None:
                series = counted[code] = self.requests.labels(service, method, code.name)
            series.inc()
            if duration is not None:
                duration.observe(seconds)

        return began, ended
