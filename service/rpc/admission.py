"""How many calls a server takes at once (issue 22): past ``MAX_IN_FLIGHT`` unary calls of the
``thirteen.v1`` services in progress, a new one is answered ``RESOURCE_EXHAUSTED`` at once, with
the delay to retry after (``RetryInfo``), counted in the metrics with its code, and nothing of it
done. Without this, a burst past gRPC's own queue of calls not yet taken by the server was
answered a bare ``CANCELLED``, which clients do not retry; that queue is set far above this
bound (``service.rpc.server``), so the server decides, and says so.

Streams (``WatchTable``) are bounded the same way, by a count of their own with the same limit:
past ``limit`` streams open at once, a new one is refused as a unary call is, before its
catch-up is read (issue 22: one caller opened thousands, growing the server's memory and queueing
their catch-ups ahead of every other caller's heavy reads). Counted apart, streams that stay
open for hours do not take the unary calls' turns. Health checks and reflection are not
counted."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from service.errors import Overloaded
from service.rpc.guards import Context, GuardingInterceptor, Handler
from service.rpc.status import to_status

MAX_IN_FLIGHT = 1_000  # unary calls in progress at once: the writer commits 64 at a time
RETRY_AFTER = 0.5  # seconds a refused caller is told to wait
PACKAGE = "/thirteen.v1."


class Admission(GuardingInterceptor):
    """Counts the unary calls in progress and the streams open (on the event loop: no lock)
    and refuses either past ``limit``."""

    def __init__(self, limit: int = MAX_IN_FLIGHT) -> None:
        super().__init__()
        self.limit = limit
        self.in_flight = 0
        self.streams = 0

    def wrap(self, path: str, found: Handler[Any, Any]) -> Handler[Any, Any]:
        handler: Any = found  # grpc.aio's handlers are namedtuples, rewired untyped
        if not path.startswith(PACKAGE):
            return found
        unary = handler.unary_unary
        stream = handler.unary_stream
        rewired: Handler[Any, Any]
        if unary is not None:

            async def admitted(request: Any, context: Context[Any, Any]) -> Any:
                if self.in_flight >= self.limit:
                    await self._refuse(context, "calls")
                self.in_flight += 1
                try:
                    return await unary(request, context)
                finally:
                    self.in_flight -= 1

            rewired = handler._replace(unary_unary=admitted)
            return rewired
        if stream is not None:

            async def opened(request: Any, context: Context[Any, Any]) -> AsyncIterator[Any]:
                if self.streams >= self.limit:
                    await self._refuse(context, "streams")
                self.streams += 1
                try:
                    async for message in stream(request, context):
                        yield message
                finally:
                    self.streams -= 1

            rewired = handler._replace(unary_stream=opened)
            return rewired
        return found

    async def _refuse(self, context: Context[Any, Any], what: str) -> None:
        refused = Overloaded(
            f"the server is serving {self.limit} {what} at once, its limit: retry after "
            f"{RETRY_AFTER:g} s",
            retry_after=RETRY_AFTER,
        )
        await context.abort_with_status(to_status(refused))
