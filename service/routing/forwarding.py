"""Passing a table's commands to its owner (issue 21): the server's innermost interceptor.

A call of a method below that names a table (or a round, whose table ``RoundTables`` knows) is
served here when this replica owns the table, when the call was itself forwarded (never twice:
no loops), or when the owner cannot be connected to; otherwise it is passed to the owner over
gRPC, with the caller's identity (``service.rpc.behalf``), its deadline and its request id, and
the owner's answer (or status, with its details) goes back as it came. A call that reached the
owner and broke on the way (the owner died mid-call) is answered ``UNAVAILABLE``: whether it was
applied is unknown, and a retry with the same request id is safe, as after any lost answer.

The caller was authorized here before (``Authorize`` runs first), and is authorized again by the
owner, exactly as if it had called the owner. A passed-on call waits at most ``FORWARD_TIMEOUT``
for the owner (a caller without a deadline too), then is answered ``UNAVAILABLE``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from typing import Any

import grpc
import structlog

from service import caller
from service.errors import Unavailable
from service.routing.peers import Peers
from service.routing.rounds import RoundTables
from service.rpc.behalf import forwarded_by, headers, mark_passed_on
from service.rpc.guards import Context, GuardingInterceptor, Handler
from service.rpc.runner import REQUEST_ID, request_id_of
from service.rpc.status import to_status
from service.tracing.context import Headers, passed_through

log = structlog.get_logger("thirteen.routing")

TABLE = "/thirteen.v1.TableService/"
ROUTED: dict[str, str] = {
    # method path → the request field naming its table, or its round
    TABLE + "OpenTable": "table_id",
    TABLE + "SitDown": "table_id",
    TABLE + "StandUp": "table_id",
    TABLE + "Deal": "table_id",
    TABLE + "Arrange": "round_id",
    TABLE + "Reveal": "round_id",
    TABLE + "GetRound": "round_id",
}
FORWARD_TIMEOUT = 30.0  # seconds a passed-on call may take, whatever (or whether) its deadline
_NOT_SENT = ("failed to connect", "connection refused", "dns resolution failed", "no route")

Unary = Callable[[Any, Context[Any, Any]], Awaitable[Any]]


def never_sent(error: grpc.aio.AioRpcError) -> bool:
    """Whether a failed call never reached the peer (no connection could be made), so that
    serving it here cannot apply it twice."""
    details = (error.details() or "").lower()
    return error.code() == grpc.StatusCode.UNAVAILABLE and any(s in details for s in _NOT_SENT)


class Router(GuardingInterceptor):
    """Serve a routed call where its table's owner is (``peers``); ``executor`` runs the one
    blocking read that finds a round's table."""

    def __init__(self, peers: Peers, rounds: RoundTables, executor: Executor) -> None:
        super().__init__()
        self.peers = peers
        self.rounds = rounds
        self.executor = executor
        # The trace context a passed-on call carries: the caller's as it came, or, with
        # tracing on here, this replica's span of the call (``service.tracing``).
        self.trace_headers: Callable[[Context[Any, Any]], Headers] = passed_through

    def wrap(self, path: str, found: Handler[Any, Any]) -> Handler[Any, Any]:
        handler: Any = found  # grpc.aio's handlers are namedtuples, rewired untyped
        field = ROUTED.get(path)
        unary: Unary | None = handler.unary_unary
        if field is None or unary is None:
            return found
        serialize = handler.response_serializer

        async def routed(request: Any, context: Context[Any, Any]) -> Any:
            if forwarded_by() is None:
                target = await self._owner(field, getattr(request, field, ""))
                if target is not None:
                    answer = await self._forward(target, path, request, context)
                    if answer is not None:
                        return answer
            return await unary(request, context)

        def passing(response: Any) -> bytes:  # a forwarded answer is already encoded
            return response if isinstance(response, bytes) else serialize(response)

        rewired: Handler[Any, Any] = handler._replace(
            unary_unary=routed, response_serializer=passing
        )
        return rewired

    async def _owner(self, field: str, value: str) -> str | None:
        """The owner of the call's table when it is another replica (None: serve it here)."""
        if len(self.peers.live()) <= 1 or not value:
            return None
        table_id: str | None = value
        if field == "round_id":
            table_id = self.rounds.known(value)
            if table_id is None:
                loop = asyncio.get_running_loop()
                table_id = await loop.run_in_executor(self.executor, self.rounds.table_of, value)
        if table_id is None:
            return None
        target = self.peers.owner(table_id)
        return None if target == self.peers.me else target

    async def _forward(
        self, target: str, path: str, request: Any, context: Context[Any, Any]
    ) -> bytes | None:
        """The owner's encoded answer, or None when the owner could not be reached (serve the
        call here); the owner's refusal is raised as the same status."""
        request_id = request_id_of(context)
        metadata = (
            (REQUEST_ID, request_id),
            *headers(caller.current().identity, self.peers.me),
            *self.trace_headers(context),
        )
        call = self.peers.caller(target, path, type(request).SerializeToString)
        remaining = context.time_remaining()
        capped = remaining is None or remaining > FORWARD_TIMEOUT
        try:
            answer: bytes = await call(
                request, timeout=FORWARD_TIMEOUT if capped else remaining, metadata=metadata
            )
        except grpc.aio.AioRpcError as error:
            if _has_details(error):  # the owner's servicer refused it: counted there
                mark_passed_on()
                trailing = _passed_on(error.trailing_metadata(), request_id)
                await context.abort(error.code(), error.details() or "", trailing)
            if capped and error.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                await context.abort_with_status(
                    to_status(
                        Unavailable(
                            f"the table's owner {target} did not answer within "
                            f"{FORWARD_TIMEOUT:.0f} s: retry the call with the same request id"
                        )
                    )
                )
            if never_sent(error):
                self.peers.unreachable(target)
                log.info("owner_unreachable", owner=target, request_id=request_id)
                return None
            if error.code() == grpc.StatusCode.UNAVAILABLE and not _has_details(error):
                await context.abort_with_status(
                    to_status(
                        Unavailable(
                            f"the table's owner {target} stopped during the call: retry it "
                            "with the same request id"
                        )
                    )
                )
            trailing = _passed_on(error.trailing_metadata(), request_id)
            await context.abort(error.code(), error.details() or "", trailing)
            raise  # abort raises; never reached
        mark_passed_on()
        context.set_trailing_metadata(((REQUEST_ID, request_id), (OWNER, target)))
        log.debug("rpc_forwarded", owner=target, request_id=request_id)
        return answer


def _has_details(error: grpc.aio.AioRpcError) -> bool:
    return any(key == "grpc-status-details-bin" for key, _ in error.trailing_metadata() or ())


def _passed_on(trailing: Any, request_id: str) -> tuple[tuple[str, Any], ...]:
    """The owner's trailing metadata (the rich status details) as it came, with the request
    id the caller can find the call by in the owner's log."""
    kept = tuple((key, value) for key, value in trailing or () if key != REQUEST_ID)
    return (*kept, (REQUEST_ID, request_id))


OWNER = "x-thirteen-owner"
"""Trailing metadata of an answer passed on: the owner's address, for a client that would
rather call it directly next time (it saves the hop; any replica stays right)."""
