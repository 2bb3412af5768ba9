"""The console's only way to the data: the service's gRPC API, read-only calls, each with a
deadline. A refused or failed call becomes a ``ServiceError`` carrying the HTTP status the page
answers with: NOT_FOUND 404, INVALID_ARGUMENT 400, PERMISSION_DENIED and UNAUTHENTICATED 403
(naming the role the console's certificate lacks), FAILED_PRECONDITION 409 (a round not over
yet), UNAVAILABLE 503, DEADLINE_EXCEEDED 504, UNIMPLEMENTED 501, anything else 502.

The console shares the service's worker threads with the game: a round page alone asks for an
export (which may wait for a checkpoint) and an audit (which re-derives the round). So at most
``max_calls`` calls are under way at once; a page that cannot start its call within
``QUEUE_SECONDS`` is a 503 with ``Retry-After`` rather than one more call queued without bound.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

import grpc
import structlog
from google.protobuf.message import Message

from service._generated.thirteen.v1 import (
    audit_pb2,
    audit_pb2_grpc,
    results_pb2,
    results_pb2_grpc,
    wallet_pb2,
    wallet_pb2_grpc,
)
from service.client import aio_channel, error_info

M = TypeVar("M", bound=Message)
AuditRoundResponse = audit_pb2.AuditRoundResponse
ExportRoundResponse = audit_pb2.ExportRoundResponse
GetBalanceResponse = wallet_pb2.GetBalanceResponse
ListPlayerRoundsResponse = results_pb2.ListPlayerRoundsResponse
ListRoundResultsResponse = results_pb2.ListRoundResultsResponse

CALL_TIMEOUT = 20.0  # seconds; ExportRound alone may wait 10 s for a covering checkpoint
RECALL_PAGE = 10  # the last game and the nine before it (AGCO Registrar's Standards §13.1)
TABLE_PAGE = 25
MAX_CALLS = 4
"""Calls to the service under way at once, by default (``--max-service-calls``): two round
pages, or four list pages."""
QUEUE_SECONDS = 2.0  # how long a call waits for one of them before the page is a 503
RETRY_AFTER = 5  # seconds, the busy page's Retry-After

log = structlog.get_logger("thirteen.console")

HTTP_STATUS = {
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.UNAUTHENTICATED: 403,
    grpc.StatusCode.FAILED_PRECONDITION: 409,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.UNIMPLEMENTED: 501,
}


class ServiceError(Exception):
    """A call the page cannot answer with data: ``status`` is the page's HTTP status,
    ``message`` one sentence for staff; when the console's certificate lacks a role, ``role``
    names it and ``allowed`` every role that may make the call; ``retry_after`` (seconds) when
    asking again soon may work."""

    def __init__(
        self,
        status: int,
        message: str,
        role: str = "",
        allowed: tuple[str, ...] = (),
        *,
        retry_after: int = 0,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.role = role
        self.allowed = allowed or ((role,) if role else ())
        self.retry_after = retry_after


class Backend:
    """The stubs on one ``grpc.aio`` channel, opened on the event loop that serves pages.

    When the service cannot be reached, the next page opens a new channel: gRPC's own
    reconnect backoff grows to two minutes while the service is down, and a page asked after
    it is back would be 503 until then.

    ``server_name`` is the name the service's certificate must hold when it is not the host of
    ``address`` (the console reaches the service by IP, its certificate names a DNS name)."""

    def __init__(
        self,
        address: str,
        credentials: grpc.ChannelCredentials | None,
        *,
        max_calls: int = MAX_CALLS,
        server_name: str | None = None,
    ) -> None:
        self.address = address
        self.credentials = credentials
        self.max_calls = max_calls
        self._slots = asyncio.Semaphore(max_calls)
        self.server_name = server_name
        self.channel: grpc.aio.Channel | None = None
        self._stubs: dict[str, Any] = {}
        self._unreachable = False
        self._closing: set[asyncio.Task[None]] = set()

    async def open(self) -> None:
        self._connect()

    def _connect(self) -> None:
        self.channel = aio_channel(self.address, self.credentials, server_name=self.server_name)
        audit = audit_pb2_grpc.AuditServiceStub(self.channel)
        results = results_pb2_grpc.ResultsServiceStub(self.channel)
        wallets = wallet_pb2_grpc.WalletServiceStub(self.channel)
        self._stubs = {
            "ExportRound": audit.ExportRound,
            "AuditRound": audit.AuditRound,
            "ListPlayerRounds": results.ListPlayerRounds,
            "ListRoundResults": results.ListRoundResults,
            "GetBalance": wallets.GetBalance,
        }

    def _reconnect(self) -> None:
        """A new channel for the calls from now on; the old one closes once the calls still on
        it are done (at most ``CALL_TIMEOUT``)."""
        old, self._unreachable = self.channel, False
        self._connect()
        if old is not None:
            closing = asyncio.ensure_future(old.close(grace=CALL_TIMEOUT))
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        if self.channel is not None:
            await self.channel.close()
        for closing in list(self._closing):
            await closing

    async def export_round(self, round_id: str) -> str:
        """The round's export document (role auditor)."""
        request = audit_pb2.ExportRoundRequest(round_id=round_id)
        return str((await self._call("ExportRound", request, ExportRoundResponse)).document)

    async def audit_round(self, round_id: str) -> AuditRoundResponse:
        """The service's verdict on the round, rule by rule (role auditor)."""
        request = audit_pb2.AuditRoundRequest(round_id=round_id)
        return await self._call("AuditRound", request, AuditRoundResponse)

    async def player_rounds(self, player_id: str, page_token: str) -> ListPlayerRoundsResponse:
        """A page of the player's rounds that are over, newest first (role reader or auditor)."""
        request = results_pb2.ListPlayerRoundsRequest(
            player_id=player_id, page_size=RECALL_PAGE, page_token=page_token
        )
        return await self._call("ListPlayerRounds", request, ListPlayerRoundsResponse)

    async def balance(self, player_id: str) -> GetBalanceResponse:
        """The player's balance now (role reader)."""
        request = wallet_pb2.GetBalanceRequest(player_id=player_id)
        return await self._call("GetBalance", request, GetBalanceResponse)

    async def table_rounds(self, table_id: str, page_token: str) -> ListRoundResultsResponse:
        """A page of the table's finished rounds in the order played (role reader or auditor)."""
        request = results_pb2.ListRoundResultsRequest(
            table_id=table_id, page_size=TABLE_PAGE, page_token=page_token
        )
        return await self._call("ListRoundResults", request, ListRoundResultsResponse)

    async def _call(self, method: str, request: Message, answer: type[M]) -> M:
        try:
            await asyncio.wait_for(self._slots.acquire(), QUEUE_SECONDS)
        except TimeoutError:
            log.warning("console_busy", method=method, calls=self.max_calls)
            raise ServiceError(
                503,
                f"the console is busy: {self.max_calls} calls to the service are under way "
                f"(--max-service-calls) and {method} waited {QUEUE_SECONDS:g} s for one of "
                "them; try again in a few seconds",
                retry_after=RETRY_AFTER,
            ) from None
        try:
            if self._unreachable:
                self._reconnect()
            reply = await self._stubs[method](request, timeout=CALL_TIMEOUT)
        except grpc.aio.AioRpcError as error:
            refused = self.refusal(method, error)
            if error.code() == grpc.StatusCode.UNAVAILABLE and error_info(error) is None:
                self._unreachable = True  # the transport failed, not the service
            raise refused from None
        finally:
            self._slots.release()
        if not isinstance(reply, answer):
            raise TypeError(f"{method} answered a {type(reply).__name__}, not a {answer.__name__}")
        return reply

    def refusal(self, method: str, error: grpc.aio.AioRpcError) -> ServiceError:
        """The page's answer to a failed call."""
        code = error.code()
        status = HTTP_STATUS.get(code, 502)
        info = error_info(error)
        said = error.details() or ""
        if info is None and code == grpc.StatusCode.UNAVAILABLE:  # the transport, not the service
            tls = (
                "; over TLS the handshake fails too when the service serves plaintext, does not "
                "trust the console's --cert (mutual TLS) or has a certificate --ca did not sign"
                if self.credentials is not None
                else ""
            )
            return ServiceError(
                503,
                f"cannot reach the service at {self.address} ({said.split(';')[0]}); is "
                f"`thirteen serve` running there?{tls}",
            )
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return ServiceError(
                504, f"the service at {self.address} did not answer {method} in {CALL_TIMEOUT:g} s"
            )
        if code == grpc.StatusCode.UNIMPLEMENTED:
            return ServiceError(
                501, f"the service at {self.address} does not offer {method} (an older version?)"
            )
        if status == 502:
            return ServiceError(502, f"{method} failed: {code.name}: {said}")
        if info is None:
            return ServiceError(status, said)
        allowed = tuple(r for r in info.metadata.get("allowed_roles", "").split(",") if r)
        return ServiceError(status, said, info.metadata.get("missing_role", ""), allowed)
