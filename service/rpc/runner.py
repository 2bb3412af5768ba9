"""How every RPC runs: a query on a bounded worker pool with the log context kept (and the
caller, set by ``service.rpc.authorizing``), a command queued for the application's one writer,
and one wrapper that logs the call with its request id and turns a refused command into its
status (``service.rpc.status``)."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import grpc
import structlog
from eventsourcing.persistence import InterfaceError, OperationalError
from grpc.aio import AbortError

from domain.errors import RuleError
from service.errors import Unavailable
from service.rpc.behalf import forwarded_by
from service.rpc.status import clip, internal_status, to_status

log = structlog.get_logger("thirteen.rpc")
T = TypeVar("T")
S = TypeVar("S")  # the servicer
Req = TypeVar("Req")  # an RPC's request message
Resp = TypeVar("Resp")  # and its response

Context = grpc.aio.ServicerContext[Any, Any]
"""What a servicer's method is given beside its request."""

REQUEST_ID = "x-request-id"

DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("deadline", default=None)
"""The call's deadline (``time.monotonic()``), None without one: what a read that waits for
the views (``service.rpc.views``) is bounded by. Set by ``rpc``, carried to the pool by
``Runner``."""


def remaining(default: float) -> float:
    """Seconds left before the call's deadline, at most ``default`` (and never below 0)."""
    deadline = DEADLINE.get()
    if deadline is None:
        return default
    return max(0.0, min(default, deadline - time.monotonic()))


HEAVY_AT_ONCE = 1
"""Heavy reads (a page of a listing, a batch of a stream's catch-up) running at once, over
every call: callers in a loop queue behind one another instead of taking every turn of the
interpreter from the calls beside them (issue 22)."""
HEAVY_REST = 3.0
"""After a heavy read, the next waits this many times the CPU time it used: heavy reads have at
most a quarter of the server's time (``1 / (1 + HEAVY_REST)``) however many callers ask, and
the calls beside them the rest. A page read in a reader process (``service.rpc.reader``) uses
this process's thread only to hand it over, and rests as little (issue 22)."""


class Runner:
    """Runs blocking application calls on a bounded pool, keeping the log and caller context;
    heavy reads (``heavy``) one at a time, paced."""

    def __init__(self, executor: ThreadPoolExecutor) -> None:
        self.executor = executor
        self._heavy = asyncio.Semaphore(HEAVY_AT_ONCE)
        self._heavy_from = 0.0  # when the next heavy read may start (the event loop's clock)

    async def __call__(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
        return await loop.run_in_executor(self.executor, call)

    async def heavy(
        self,
        fn: Callable[..., T],
        *args: Any,
        lane: asyncio.Semaphore | None = None,
        **kwargs: Any,
    ) -> T:
        """``fn`` on the pool once no other heavy read runs (first come, first served) and
        the last has rested (``HEAVY_REST`` times the CPU time it used: not the time it
        waited, for the views to catch up or for the interpreter).

        A caller that leaves (its deadline passed, grpc cancels it) while queued frees its
        turn, and its read never starts; once its read runs on the pool, the read keeps the
        slot until its thread is done, and its CPU time counts toward the rest (issue 22:
        callers with short deadlines otherwise ran heavy reads side by side, unpaced).

        ``lane``: a turn of its own instead of the one heavy read at a time, for reads run in
        other processes (the reader processes' pages: as many at once as there are readers),
        paced by the same rest."""
        loop = asyncio.get_running_loop()
        turn = self._heavy if lane is None else lane
        await turn.acquire()
        try:
            pause = self._heavy_from - loop.time()
            if pause > 0:
                await asyncio.sleep(pause)
        except BaseException:
            turn.release()
            raise
        used = 0.0
        left = False  # the caller was cancelled before the pool took the read up

        def timed() -> T:
            nonlocal used
            if left:
                raise asyncio.CancelledError
            started = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                used = time.thread_time() - started

        def done(work: asyncio.Future[T]) -> None:
            if not work.cancelled():
                work.exception()  # retrieved here: a caller that left does not read it
            self._heavy_from = loop.time() + used * HEAVY_REST
            turn.release()

        call = functools.partial(contextvars.copy_context().run, timed)
        work = loop.run_in_executor(self.executor, call)
        work.add_done_callback(done)
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            left = True
            raise


def request_id_of(context: grpc.aio.ServicerContext[Req, Resp]) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == REQUEST_ID and isinstance(value, str) and value:
            return value[:128]
    return uuid.uuid4().hex


def rpc(
    method: Callable[[S, Req, grpc.aio.ServicerContext[Req, Resp]], Awaitable[Resp]],
) -> Callable[[S, Req, grpc.aio.ServicerContext[Req, Resp]], Coroutine[Any, Any, Resp]]:
    """Log the call with its request id and map a refused command to its status."""

    @functools.wraps(method)
    async def wrapper(self: S, request: Req, context: grpc.aio.ServicerContext[Req, Resp]) -> Resp:
        request_id = request_id_of(context)
        structlog.contextvars.bind_contextvars(request_id=request_id, rpc=method.__name__)
        by = forwarded_by()
        if by is not None:  # logged once, here at the owner, naming the replica it came from
            structlog.contextvars.bind_contextvars(forwarded_by=by)
        context.set_trailing_metadata(((REQUEST_ID, request_id),))
        left = context.time_remaining()
        DEADLINE.set(None if left is None else time.monotonic() + left)
        started = time.perf_counter()
        status: grpc.Status | None = None
        try:
            result = await method(self, request, context)
        except (OperationalError, InterfaceError) as error:  # the database, not the request
            log.warning("rpc_store_unavailable", error=clip(str(error)))
            status = to_status(Unavailable("the event store is unavailable; retry the call"))
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
            structlog.contextvars.unbind_contextvars("request_id", "rpc", "forwarded_by")
        if status is not None:
            await context.abort_with_status(status)
        log.debug(
            "rpc_ok",
            rpc=method.__name__,
            request_id=request_id,
            ms=round((time.perf_counter() - started) * 1000, 2),
            **({} if by is None else {"forwarded_by": by}),
        )
        return result

    return wrapper
