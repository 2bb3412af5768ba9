"""A request that does not parse is malformed input: INVALID_ARGUMENT, like any other.

grpc decodes a request before any servicer runs and answers a failure UNKNOWN with the
parser's words. This interceptor decodes it instead, so that a request that is not a valid
message (a string field that is not UTF-8, a truncated field) gets the same rich status as
every other refusal.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from domain.errors import RuleError
from service.rpc.status import to_status


class _Undecodable:
    def __init__(self, reason: str) -> None:
        self.reason = reason


def _tolerant(parse: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def decode(data: bytes) -> Any:
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
    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler: Any = await continuation(handler_call_details)
        if handler is None or handler.request_deserializer is None:
            return handler
        decode = _tolerant(handler.request_deserializer)
        if handler.unary_unary is not None:
            unary = handler.unary_unary

            async def guarded_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                if isinstance(request, _Undecodable):
                    await context.abort_with_status(_status(request))
                return await unary(request, context)

            return handler._replace(request_deserializer=decode, unary_unary=guarded_unary)
        if handler.unary_stream is not None:
            stream = handler.unary_stream

            async def guarded_stream(
                request: Any, context: grpc.aio.ServicerContext
            ) -> AsyncIterator[Any]:
                if isinstance(request, _Undecodable):
                    await context.abort_with_status(_status(request))
                async for message in stream(request, context):
                    yield message

            return handler._replace(request_deserializer=decode, unary_stream=guarded_stream)
        return handler
