"""A check run before a servicer's method, wrapped around the handler grpc found for it: the
shared mechanism of the server's interceptors (``authorizing``, ``undecodable``, and
``service.metrics.calls``, which is told when each call ends). A wrapped handler is built once
per method and kept."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

Handler = grpc.RpcMethodHandler
Context = grpc.aio.ServicerContext
Check = Callable[[Any, Context[Any, Any]], Awaitable[None]]
Ended = Callable[[Context[Any, Any], BaseException | None, float], None]
"""Told as a call ends: its context, what it raised (None: it returned) and the seconds since
its wrapped behaviour began. It must not raise."""
Began = Callable[[], None]
"""Told as a call's wrapped behaviour begins (with ``ended``). It must not raise."""


class Guards:
    """The guarded handler of each method, rebuilt only when grpc hands over another one."""

    def __init__(self) -> None:
        self._built: dict[str, tuple[Handler[Any, Any], Handler[Any, Any]]] = {}

    def get(
        self, method: str, found: Handler[Any, Any], build: Callable[[], Handler[Any, Any]]
    ) -> Handler[Any, Any]:
        kept = self._built.get(method)
        if kept is None or kept[0] is not found:
            kept = self._built[method] = (found, build())
        return kept[1]


class GuardingInterceptor(grpc.aio.ServerInterceptor):
    """An interceptor that wraps the handler grpc found for a method (``wrap``), once per
    method, and hands the wrapped one out for every call of it."""

    def __init__(self) -> None:
        self._guards = Guards()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler[Any, Any] | None:
        found = await continuation(handler_call_details)
        path = handler_call_details.method
        if found is None:  # no such method: grpc answers UNIMPLEMENTED
            self.missing(path)
            return None
        return self._guards.get(path, found, lambda: self.wrap(path, found))

    def wrap(self, path: str, found: Handler[Any, Any]) -> Handler[Any, Any]:
        """The handler to serve ``path`` with: ``found`` wrapped (``guarded``), or as it is."""
        raise NotImplementedError

    def missing(self, path: str) -> None:
        """Told of a call of a method no servicer has."""


def guarded(
    found: Handler[Any, Any],
    check: Check | None,
    *,
    ended: Ended | None = None,
    began: Began | None = None,
    **replace: Any,
) -> Handler[Any, Any] | None:
    """``found`` with ``check(request, context)`` awaited before its unary or server-streaming
    behaviour (a check refuses by aborting the call), ``began`` and ``ended`` told when the
    call begins and ends, and the fields in ``replace`` swapped; None for a client-streaming
    method (reflection's), which the caller passes or refuses."""
    # Under grpc.aio a handler is a namedtuple (``_replace``) of coroutine functions; the stubs
    # declare an abstract class of plain callables, so it is rewired untyped here.
    handler: Any = found
    if handler.unary_unary is not None:
        unary = handler.unary_unary

        async def guarded_unary(request: Any, context: Context[Any, Any]) -> Any:
            if check is not None:
                await check(request, context)
            return await unary(request, context)

        behaviour = guarded_unary if ended is None else _timed_unary(guarded_unary, ended, began)
        rewired: Handler[Any, Any] = handler._replace(unary_unary=behaviour, **replace)
        return rewired
    if handler.unary_stream is not None:
        stream: Callable[[Any, Context[Any, Any]], AsyncIterator[Any]] = handler.unary_stream

        async def guarded_stream(request: Any, context: Context[Any, Any]) -> AsyncIterator[Any]:
            if check is not None:
                await check(request, context)
            async for message in stream(request, context):
                yield message

        messages = guarded_stream if ended is None else _timed_stream(guarded_stream, ended, began)
        rewired = handler._replace(unary_stream=messages, **replace)
        return rewired
    return None


def _timed_unary(
    unary: Callable[[Any, Context[Any, Any]], Awaitable[Any]], ended: Ended, began: Began | None
) -> Callable[[Any, Context[Any, Any]], Awaitable[Any]]:
    async def timed(request: Any, context: Context[Any, Any]) -> Any:
        if began is not None:
            began()
        started = time.perf_counter()
        try:
            response = await unary(request, context)
        except BaseException as error:  # an abort, a cancellation, a fault: told, then raised
            ended(context, error, time.perf_counter() - started)
            raise
        ended(context, None, time.perf_counter() - started)
        return response

    return timed


def _timed_stream(
    stream: Callable[[Any, Context[Any, Any]], AsyncIterator[Any]],
    ended: Ended,
    began: Began | None,
) -> Callable[[Any, Context[Any, Any]], AsyncIterator[Any]]:
    async def timed(request: Any, context: Context[Any, Any]) -> AsyncIterator[Any]:
        if began is not None:
            began()
        started = time.perf_counter()
        try:
            async for message in stream(request, context):
                yield message
        except BaseException as error:  # GeneratorExit too: grpc closed the stream
            ended(context, error, time.perf_counter() - started)
            raise
        ended(context, None, time.perf_counter() - started)

    return timed
