"""Every call of a ``thirteen.v1`` service is authorized before its servicer runs: the caller's
identity from its client certificate (``service.security.identity``), its roles from the policy,
and the roles the method needs (``service.security.access``). A method with no row there is
refused (fail closed). Health checking and reflection are other packages: they pass untouched.
The caller is then the call's caller (``service.caller``): commands record it with their events.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
import structlog

from service import caller
from service.errors import PermissionDenied, Unauthenticated
from service.rpc.status import clip, to_status
from service.security.access import authorize
from service.security.identity import identity_of
from service.security.policy import Policy

log = structlog.get_logger("thirteen.rpc")
Req = TypeVar("Req")
Resp = TypeVar("Resp")
Handler = grpc.RpcMethodHandler
Context = grpc.aio.ServicerContext

PACKAGE = "/thirteen.v1."


def admit(policy: Policy, context: Context[Any, Any], method: str) -> None:
    """Run the rest of this call as its caller, or raise why it may not call ``method``."""
    caller.set_current(authorize(policy, identity_of(context), method))


class Authorize(grpc.aio.ServerInterceptor):
    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._guarded: dict[str, tuple[Handler[Any, Any], Handler[Any, Any]]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler[Req, Resp] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler[Req, Resp] | None:
        found = await continuation(handler_call_details)
        path = handler_call_details.method
        if found is None or not path.startswith(PACKAGE):
            return found
        guarded = self._guarded.get(path)
        if guarded is None or guarded[0] is not found:
            guarded = self._guarded[path] = (found, self._guard(found, path.rsplit("/", 1)[-1]))
        return guarded[1]

    async def _admit(self, context: Context[Any, Any], method: str) -> None:
        started = time.perf_counter()
        try:
            admit(self.policy, context, method)
        except (Unauthenticated, PermissionDenied) as error:
            status = to_status(error)
            log.info(
                "rpc_refused",
                rpc=method,
                code=status.code.name,
                error=clip(error.message),
                ms=round((time.perf_counter() - started) * 1000, 2),
            )
            await context.abort_with_status(status)

    def _guard(self, found: Handler[Req, Resp], method: str) -> Handler[Req, Resp]:
        # Under grpc.aio a handler is a namedtuple (``_replace``) of coroutine functions; the
        # stubs declare an abstract class of plain callables, so it is rewired untyped here.
        handler: Any = found
        if handler.unary_unary is not None:
            unary: Callable[[Req, Context[Req, Resp]], Awaitable[Resp]] = handler.unary_unary

            async def guarded_unary(request: Req, context: Context[Req, Resp]) -> Resp:
                await self._admit(context, method)
                return await unary(request, context)

            replaced: Handler[Req, Resp] = handler._replace(unary_unary=guarded_unary)
            return replaced
        if handler.unary_stream is not None:
            stream: Callable[[Req, Context[Req, Resp]], AsyncIterator[Resp]] = handler.unary_stream

            async def guarded_stream(
                request: Req, context: Context[Req, Resp]
            ) -> AsyncIterator[Resp]:
                await self._admit(context, method)
                async for message in stream(request, context):
                    yield message

            replaced = handler._replace(unary_stream=guarded_stream)
            return replaced
        raise TypeError(f"{method}: a call shape this server does not authorize")
