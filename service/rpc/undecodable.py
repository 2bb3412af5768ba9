"""A request that does not parse is malformed input: INVALID_ARGUMENT, like any other.

grpc decodes a request before any servicer runs and answers a failure UNKNOWN with the
parser's words. This interceptor decodes it instead, so that a request that is not a valid
message (a string field that is not UTF-8, a truncated field) gets the same rich status as
every other refusal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import grpc

from domain.errors import RuleError
from service.rpc.guards import Context, GuardingInterceptor, Handler, guarded
from service.rpc.status import to_status

T = TypeVar("T")


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


class RefuseUndecodable(GuardingInterceptor):
    def wrap(self, path: str, found: Handler[Any, Any]) -> Handler[Any, Any]:
        parse = found.request_deserializer
        if parse is None:
            return found
        decode = _tolerant(parse)
        return guarded(found, _refuse_undecodable, request_deserializer=decode) or found


async def _refuse_undecodable(request: Any, context: Context[Any, Any]) -> None:
    if isinstance(request, _Undecodable):
        await context.abort_with_status(_status(request))
