"""The witness's HTTP server (aiohttp): C2SP ``tlog-witness``'s ``POST /add-checkpoint`` and
``GET /<origin hash>/checkpoint`` (``service.witness.cosigning`` answers them).

Bounded against a hostile client: a body over ``MAX_BODY`` bytes is answered 413 without being
read (by its ``Content-Length``, or as it arrives when chunked); one that takes more than
``BODY_TIMEOUT`` seconds to arrive, 408; an idle kept-alive connection is closed after
``KEEPALIVE`` seconds; past ``limits`` connections open at once (below the process's limit of
open files) the oldest is closed to make room, so connections held open by the hundred never
keep a new request out; any other path 404, any other method 405. Checking, writing the state
and signing run on a worker thread, never on the event loop. No answer carries a traceback: a
failure of the witness itself is a 500 and one log line. What aiohttp itself refuses (a request
that is not HTTP, a line too long) is counted and logged now and then (``witness_bad_requests``),
one line without a traceback, as the refusals are (``Witnessing``): a client sending garbage by
the thousand floods no log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import signal
from collections.abc import Awaitable, Callable

import structlog
from aiohttp import web

from service.http_server import Tally
from service.witness.cosigning import TEXT, Answer, Witnessing

log = structlog.get_logger("thirteen.witness")

MAX_BODY = 128 * 1024
"""Bytes of a request body: 63 proof lines and a checkpoint with a few dozen signatures (even
post-quantum ones, up to about 5 kB each) fit well within it."""
BODY_TIMEOUT = 10.0  # seconds a request body may take to arrive
KEEPALIVE = 30.0  # seconds an idle connection is kept open
MAX_CONNECTIONS = 4096  # connections open at once, at most (fewer when files are fewer)
BACKLOG = 1024  # connections the kernel queues, and the loop accepts at once, at most
RESERVED_FILES = 64  # open files kept for the state, the logs and the rest of the process
WITNESSING = web.AppKey("witnessing", Witnessing)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class _Counted(logging.Filter):
    """aiohttp's error records (each with a traceback) counted instead, and logged as one line
    now and then (``Tally``)."""

    def __init__(self) -> None:
        super().__init__()
        self.tally = Tally("witness_bad_requests")

    def filter(self, record: logging.LogRecord) -> bool:
        cause = record.exc_info[1] if record.exc_info else None
        self.tally.add(cause=(repr(cause) if cause is not None else record.getMessage())[:200])
        return False


_SERVER_LOG = logging.getLogger("thirteen.witness.server")
_SERVER_LOG.addFilter(_Counted())


def _response(answer: Answer) -> web.Response:
    response = web.Response(status=answer.status, body=answer.body)
    response.headers["Content-Type"] = answer.content_type
    response.headers["Cache-Control"] = "no-store"
    return response


def _plain(status: int, message: str) -> web.Response:
    return _response(Answer(status, (message + "\n").encode(), TEXT))


@web.middleware
async def _guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """aiohttp's refusals (404, 405, 413) as one line of text; any failure of the witness
    itself a 500, logged, never a traceback."""
    try:
        return await handler(request)
    except web.HTTPException as refused:
        return _plain(refused.status, refused.reason)
    except Exception as error:
        log.error("witness_failed", path=request.path, cause=repr(error))
        return _plain(500, "the witness failed to answer; try again")


async def _add_checkpoint(request: web.Request) -> web.StreamResponse:
    length = request.content_length
    if length is not None and length > MAX_BODY:
        return _plain(413, f"the request body is {length} bytes: at most {MAX_BODY}")
    try:
        async with asyncio.timeout(BODY_TIMEOUT):
            body = await request.read()  # aiohttp stops at MAX_BODY (client_max_size): 413
    except TimeoutError:
        return _plain(408, f"the request body did not arrive within {BODY_TIMEOUT:g} s")
    witnessing = request.app[WITNESSING]
    answer = await asyncio.get_running_loop().run_in_executor(None, witnessing.add_checkpoint, body)
    return _response(answer)


async def _checkpoint(request: web.Request) -> web.StreamResponse:
    return _response(request.app[WITNESSING].checkpoint(request.match_info["origin"]))


def create_app(witnessing: Witnessing) -> web.Application:
    """The witness's routes, answered by ``witnessing``."""
    app = web.Application(middlewares=[_guard], client_max_size=MAX_BODY)
    app[WITNESSING] = witnessing
    app.router.add_post("/add-checkpoint", _add_checkpoint)
    app.router.add_get("/{origin:[0-9a-f]{64}}/checkpoint", _checkpoint)
    return app


def limits() -> tuple[int, int]:
    """The connections the witness keeps open at most, and how many it accepts at once: below
    its limit of open files (raised to the hard limit first), which its state files, the
    connections just accepted and the rest of the process share (``RESERVED_FILES``)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or hard > soft):
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS, BACKLOG
    backlog = max(8, min(BACKLOG, soft // 8))
    return max(8, min(MAX_CONNECTIONS, soft - RESERVED_FILES - backlog)), backlog


async def serve(
    witnessing: Witnessing, host: str, port: int, on_started: Callable[[int], None]
) -> None:
    """Serve on ``host:port`` (0 picks a port, told to ``on_started``) until SIGTERM or
    SIGINT; ``OSError`` when it cannot listen there. Past its limit of open connections
    (``limits``) the oldest is closed to make room: a new request is always read."""
    runner = web.AppRunner(
        create_app(witnessing), access_log=None, keepalive_timeout=KEEPALIVE, logger=_SERVER_LOG
    )
    await runner.setup()
    server = runner.server
    assert server is not None  # set up
    most, backlog = limits()
    dropped = Tally("witness_connections_dropped")
    failed = Tally("witness_loop_error")
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(  # no traceback: a line now and then (accepting, mostly)
        lambda _, context: failed.add(
            message=str(context.get("message", ""))[:200],
            cause=repr(context.get("exception"))[:200],
        )
    )

    def accepted() -> asyncio.Protocol:
        open_ = [handler for handler in server.connections if handler.transport is not None]
        for oldest in open_[: max(0, len(open_) + 1 - most)]:
            oldest.force_close()
            dropped.add(connections=most)
        return server()

    listening = await loop.create_server(accepted, host, port, backlog=backlog)
    try:
        on_started(int(listening.sockets[0].getsockname()[1]))
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        listening.close()
        await runner.cleanup()
