"""The gRPC servicers: each RPC translates the request, runs one application command on a
worker thread and translates the answer. Errors become statuses in ``grpc_errors``."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import grpc
import structlog
from grpc.aio import AbortError

from domain import visibility
from domain.errors import RuleError
from domain.ids import round_uuid, table_uuid
from domain.limits import MAX_POSITION
from service._generated.thirteen.v1 import (
    diagnostics_pb2,
    diagnostics_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
    wallet_pb2,
    wallet_pb2_grpc,
)
from service.application import Thirteen
from service.rpc import mapping, paging
from service.rpc.status import clip, internal_status, to_status
from service.rpc.watch import WatchHub

log = structlog.get_logger("thirteen.rpc")
T = TypeVar("T")

REQUEST_ID = "x-request-id"


class Runner:
    """Runs blocking application calls on a bounded pool, keeping the log context."""

    def __init__(self, executor: ThreadPoolExecutor) -> None:
        self.executor = executor

    async def __call__(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
        return await loop.run_in_executor(self.executor, call)


def _request_id(context: grpc.aio.ServicerContext) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == REQUEST_ID and isinstance(value, str) and value:
            return value[:128]
    return uuid.uuid4().hex


def rpc(method: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """Log the call with its request id and map a refused command to its status."""

    @functools.wraps(method)
    async def wrapper(self: Any, request: Any, context: grpc.aio.ServicerContext) -> T:
        request_id = _request_id(context)
        structlog.contextvars.bind_contextvars(request_id=request_id, rpc=method.__name__)
        context.set_trailing_metadata(((REQUEST_ID, request_id),))
        started = time.perf_counter()
        status: grpc.Status | None = None
        try:
            result = await method(self, request, context)
        except RuleError as error:
            status = to_status(error)
            log.info(
                "rpc_refused",
                code=status.code.name,
                error=clip(error.message),
                ms=round((time.perf_counter() - started) * 1000, 2),
            )
        except (AbortError, asyncio.CancelledError):
            raise
        except Exception:
            log.exception("rpc_failed")
            status = internal_status()
        finally:
            structlog.contextvars.unbind_contextvars("request_id", "rpc")
        if status is not None:
            await context.abort_with_status(status)
        log.debug(
            "rpc_ok",
            rpc=method.__name__,
            request_id=request_id,
            ms=round((time.perf_counter() - started) * 1000, 2),
        )
        return result

    return wrapper


class WalletServicer(wallet_pb2_grpc.WalletServiceServicer):
    def __init__(self, app: Thirteen, run: Runner) -> None:
        self.app = app
        self.run = run

    @rpc
    async def Credit(self, request: Any, context: Any) -> Any:
        b = await self.run(self.app.credit, request.player_id, request.amount, request.transfer_id)
        return wallet_pb2.CreditResponse(player_id=b.player_id, balance=b.balance)

    @rpc
    async def Debit(self, request: Any, context: Any) -> Any:
        b = await self.run(self.app.debit, request.player_id, request.amount, request.transfer_id)
        return wallet_pb2.DebitResponse(player_id=b.player_id, balance=b.balance)

    @rpc
    async def GetBalance(self, request: Any, context: Any) -> Any:
        wallet = await self.run(self.app.wallet, request.player_id)
        return wallet_pb2.GetBalanceResponse(
            player_id=wallet.player_id,
            balance=wallet.balance,
            table_id=wallet.table_id or "",
            round_id=wallet.round_id or "",
        )


class TableServicer(table_pb2_grpc.TableServiceServicer):
    def __init__(self, app: Thirteen, run: Runner, hub: WatchHub) -> None:
        self.app = app
        self.run = run
        self.hub = hub

    @rpc
    async def OpenTable(self, request: Any, context: Any) -> Any:
        rules = mapping.ruleset(
            request.ruleset,
            request.ruleset_parameters if request.HasField("ruleset_parameters") else None,
        )
        table = await self.run(self.app.open_table, request.table_id, rules, request.request_id)
        return table_pb2.OpenTableResponse(**mapping.table_fields(table))

    @rpc
    async def GetTable(self, request: Any, context: Any) -> Any:
        table = await self.run(self.app.table, request.table_id)
        return table_pb2.GetTableResponse(**mapping.table_fields(table))

    @rpc
    async def SitDown(self, request: Any, context: Any) -> Any:
        table = await self.run(self.app.sit_down, request.table_id, request.player_id)
        return table_pb2.SitDownResponse(**mapping.table_fields(table))

    @rpc
    async def StandUp(self, request: Any, context: Any) -> Any:
        result = await self.run(self.app.stand_up, request.table_id, request.player_id)
        return table_pb2.StandUpResponse(
            **mapping.table_fields(result.table),
            escaped=result.escaped,
            penalty_transfers=result.transfers,
        )

    @rpc
    async def ListRounds(self, request: Any, context: Any) -> Any:
        offset, size = paging.page(f"t:{request.table_id}", request.page_size, request.page_token)
        rounds, total = await self.run(self.app.rounds_of, request.table_id, offset, size)
        following = offset + len(rounds)
        return table_pb2.ListRoundsResponse(
            rounds=[
                table_pb2.Round(**mapping.round_fields(r, visibility.OBSERVER)) for r in rounds
            ],
            next_page_token=(
                paging.token(f"t:{request.table_id}", following) if following < total else ""
            ),
        )

    @rpc
    async def Deal(self, request: Any, context: Any) -> Any:
        round_ = await self.run(
            self.app.deal, request.table_id, request.client_seed, request.request_id
        )
        return table_pb2.DealResponse(**mapping.round_fields(round_, visibility.DEALER))

    @rpc
    async def Arrange(self, request: Any, context: Any) -> Any:
        front = mapping.cards(request.front, "front")
        middle = mapping.cards(request.middle, "middle")
        back = mapping.cards(request.back, "back")
        result = await self.run(
            self.app.arrange,
            request.round_id,
            request.player_id,
            front,
            middle,
            back,
            request.special,
        )
        submission = result.round.submissions[request.player_id]
        return table_pb2.ArrangeResponse(
            foul=result.foul_reason is not None,
            foul_reason=result.foul_reason or "",
            special=result.special.id if result.special else "",
            round_id=request.round_id,
            player_id=request.player_id,
            ready_to_reveal=not result.round.not_ready(),
            front=submission["front"],
            middle=submission["middle"],
            back=submission["back"],
        )

    @rpc
    async def Reveal(self, request: Any, context: Any) -> Any:
        result = await self.run(self.app.reveal, request.round_id)
        return table_pb2.RevealResponse(
            **mapping.result_fields(result.result), receipt=result.receipt
        )

    @rpc
    async def GetRound(self, request: Any, context: Any) -> Any:
        viewer = mapping.viewer(request.viewer)
        round_ = await self.run(self.app.round, request.round_id)
        return table_pb2.GetRoundResponse(**mapping.round_fields(round_, viewer))

    async def WatchTable(self, request: Any, context: Any) -> AsyncIterator[Any]:
        """Catch up from the store after ``after``, then follow live; positions only grow."""
        structlog.contextvars.bind_contextvars(request_id=_request_id(context), rpc="WatchTable")
        try:
            if not 0 <= request.after <= MAX_POSITION:
                raise RuleError(
                    f"after must be a log position from 0 to {MAX_POSITION}", field="after"
                )
            viewer = mapping.viewer(request.viewer)
            table = await self.run(self.app.table, request.table_id)
        except RuleError as error:
            await context.abort_with_status(to_status(error))
        rounds = [round_uuid(r) for r in table.round_ids]
        watch = self.hub.open(table_uuid(table.table_id), rounds, viewer)
        try:
            async for message in self.hub.follow(watch, request.after, self.run):
                yield message
            await context.abort(*watch.ending())
        finally:
            self.hub.close(watch)


class DiagnosticsServicer(diagnostics_pb2_grpc.DiagnosticsServiceServicer):
    """Echo through the same stack as every command: wrapper, logging and worker pool."""

    def __init__(self, run: Runner) -> None:
        self.run = run

    @rpc
    async def Echo(self, request: Any, context: Any) -> Any:
        message = await self.run(lambda: request.message)
        return diagnostics_pb2.EchoResponse(message=message)
