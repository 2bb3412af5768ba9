"""A check run before a servicer's method, wrapped around the handler grpc found for it: the
shared mechanism of the server's interceptors (``authorizing``, ``undecodable``). A wrapped
handler is built once per method and kept."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

Handler = grpc.RpcMethodHandler
Context = grpc.aio.ServicerContext
Check = Callable[[Any, Context[Any, Any]], Awaitable[None]]


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


def guarded(found: Handler[Any, Any], check: Check, **replace: Any) -> Handler[Any, Any] | None:
    """``found`` with ``check(request, context)`` awaited before its unary or server-streaming
    behaviour (a check refuses by aborting the call), and the fields in ``replace`` swapped;
    None for a client-streaming method (reflection's), which the caller passes or refuses."""
    # Under grpc.aio a handler is a namedtuple (``_replace``) of coroutine functions; the stubs
    # declare an abstract class of plain callables, so it is rewired untyped here.
    handler: Any = found
    if handler.unary_unary is not None:
        unary = handler.unary_unary

        async def guarded_unary(request: Any, context: Context[Any, Any]) -> Any:
            await check(request, context)
            return await unary(request, context)

        rewired: Handler[Any, Any] = handler._replace(unary_unary=guarded_unary, **replace)
        return rewired
    if handler.unary_stream is not None:
        stream: Callable[[Any, Context[Any, Any]], AsyncIterator[Any]] = handler.unary_stream

        async def guarded_stream(request: Any, context: Context[Any, Any]) -> AsyncIterator[Any]:
            await check(request, context)
            async for message in stream(request, context):
                yield message

        rewired = handler._replace(unary_stream=guarded_stream, **replace)
        return rewired
    return None
