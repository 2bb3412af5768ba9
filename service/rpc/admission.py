"""How many calls a server takes at once (issue 22): past ``MAX_IN_FLIGHT`` unary calls of the
``thirteen.v1`` services in progress, a new one is answered ``RESOURCE_EXHAUSTED`` at once, with
the delay to retry after (``RetryInfo``), counted in the metrics with its code, and nothing of it
done. Without this, a burst past gRPC's own queue of calls not yet taken by the server was
answered a bare ``CANCELLED``, which clients do not retry; that queue is set far above this
bound (``service.rpc.server``), so the server decides, and says so. Health checks, reflection and
streams (bounded by their own queues) are not counted."""

from __future__ import annotations

from typing import Any

from service.errors import Overloaded
from service.rpc.guards import Context, GuardingInterceptor, Handler
from service.rpc.status import to_status

MAX_IN_FLIGHT = 1_000  # unary calls in progress at once: the writer commits 64 at a time
RETRY_AFTER = 0.5  # seconds a refused caller is told to wait
PACKAGE = "/thirteen.v1."


class Admission(GuardingInterceptor):
    """Counts the unary calls in progress (on the event loop: no lock) and refuses past
    ``limit``."""

    def __init__(self, limit: int = MAX_IN_FLIGHT) -> None:
        super().__init__()
        self.limit = limit
        self.in_flight = 0

    def wrap(self, path: str, found: Handler[Any, Any]) -> Handler[Any, Any]:
        handler: Any = found  # grpc.aio's handlers are namedtuples, rewired untyped
        unary = handler.unary_unary
        if not path.startswith(PACKAGE) or unary is None:
            return found

        async def admitted(request: Any, context: Context[Any, Any]) -> Any:
            if self.in_flight >= self.limit:
                refused = Overloaded(
                    f"the server is serving {self.limit} calls at once, its limit: retry after "
                    f"{RETRY_AFTER:g} s",
                    retry_after=RETRY_AFTER,
                )
                await context.abort_with_status(to_status(refused))
            self.in_flight += 1
            try:
                return await unary(request, context)
            finally:
                self.in_flight -= 1

        rewired: Handler[Any, Any] = handler._replace(unary_unary=admitted)
        return rewired
