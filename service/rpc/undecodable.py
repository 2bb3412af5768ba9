"""A request that does not parse is malformed input: INVALID_ARGUMENT, like any other.

grpc decodes a request before any servicer runs and answers a failure UNKNOWN with the
parser's words. This interceptor decodes it instead, so that a request that is not a valid
message (a string field that is not UTF-8, a truncated field) gets the same rich status as
every other refusal.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc

from domain.errors import RuleError
from service.rpc.status import to_status

T = TypeVar("T")
Req = TypeVar("Req")
Resp = TypeVar("Resp")
Handler = grpc.RpcMethodHandler
Context = grpc.aio.ServicerContext


class _Undecodable:
    def __init__(self, reason: str) -> None:
        self.reason = reason


def _tolerant(parse: Callable[[bytes], T]) -> Callable[[bytes], T | _Undecodable]:
    def decode(data: bytes) -> T | _Undecodable:
        try:
            return parse(data)
        except Exception as error:  # protobuf's DecodeError, or anything a parser raises
            return _Undecodable(type(error).__name__)

    return decode


def _status(request: _Undecodable) -> grpc.Status:
    return to_status(
        RuleError(
            f"the request is not a valid message for this call ({request.reason}): "
            "every string field must be UTF-8"
        )
    )


class RefuseUndecodable(grpc.aio.ServerInterceptor):
    def __init__(self) -> None:
        # the handler grpc found for each method, and its guarded form: built once
        self._guarded: dict[str, tuple[Handler[Any, Any], Handler[Any, Any]]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler[Req, Resp] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler[Req, Resp] | None:
        found = await continuation(handler_call_details)
        if found is None or found.request_deserializer is None:
            return found
        method = handler_call_details.method
        guarded = self._guarded.get(method)
        if guarded is None or guarded[0] is not found:
            guarded = self._guarded[method] = (found, self._guard(found))
        return guarded[1]

    def _guard(self, found: Handler[Req, Resp]) -> Handler[Req, Resp]:
        assert found.request_deserializer is not None
        decode = _tolerant(found.request_deserializer)
        # Under grpc.aio a handler is a namedtuple (``_replace``) of coroutine functions; the
        # stubs declare an abstract class of plain callables, so it is rewired untyped here.
        handler: Any = found
        if handler.unary_unary is not None:
            unary: Callable[[Req, Context[Req, Resp]], Awaitable[Resp]] = handler.unary_unary

            async def guarded_unary(
                request: Req | _Undecodable, context: Context[Req, Resp]
            ) -> Resp:
                if isinstance(request, _Undecodable):
                    await context.abort_with_status(_status(request))
                return await unary(request, context)

            replaced: Handler[Req, Resp] = handler._replace(
                request_deserializer=decode, unary_unary=guarded_unary
            )
            return replaced
        if handler.unary_stream is not None:
            stream: Callable[[Req, Context[Req, Resp]], AsyncIterator[Resp]] = handler.unary_stream

            async def guarded_stream(
                request: Req | _Undecodable, context: Context[Req, Resp]
            ) -> AsyncIterator[Resp]:
                if isinstance(request, _Undecodable):
                    await context.abort_with_status(_status(request))
                async for message in stream(request, context):
                    yield message

            replaced = handler._replace(request_deserializer=decode, unary_stream=guarded_stream)
            return replaced
        return found
