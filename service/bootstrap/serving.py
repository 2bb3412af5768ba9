"""A serving process (``thirteen serve``): ``start`` assembles the gRPC server with every
servicer and interceptor, health and reflection (``service.rpc.server.create_server``), and
beside it the log follower, the deadline sweeper, the views' projector, the transparency log,
the metrics and the log's tiles (``service.tiles``); ``serve_forever`` is ``start``, then a
graceful stop on SIGTERM or SIGINT.

With ``background="worker"`` the projector and the log's appender and signer run in a
``thirteen worker`` instead (``service.bootstrap.working``): this process keeps neither, reads
the views once the worker's stored position holds what a call needs, serves the log from the
tables the worker stores, and reports ``ResultsService`` NOT_SERVING while the views stall
(``projections.stall``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING

import grpc
import structlog

from projections.stall import STALL_AFTER
from service.application import Thirteen
from service.bootstrap.assembly import assemble
from service.bootstrap.backgrounds import BACKGROUNDS, HERE, WORKER
from service.bootstrap.running import Running
from service.eventstore.storage import serving
from service.routing.peers import Routing
from service.rpc.admission import MAX_IN_FLIGHT
from service.security.policy import Policy
from service.transparency.options import LogOptions
from service.transparency.tiles import TileReader

if TYPE_CHECKING:
    from service.metrics import Metrics
    from service.tiles import TilesEndpoint
    from service.tracing.spans import Tracing


log = structlog.get_logger("thirteen.server")


async def start(
    app: Thirteen,
    address: str = "127.0.0.1:0",
    *,
    workers: int = 8,
    sweep_interval: float = 0.25,
    poll_interval: float = 0.2,
    credentials: grpc.ServerCredentials | None = None,
    policy: Policy | None = None,
    transparency: LogOptions | None = None,
    metrics: Metrics | None = None,
    background: str = HERE,
    views_stall_after: float = STALL_AFTER,
    routing: Routing | None = None,
    max_in_flight: int = MAX_IN_FLIGHT,
    tracing: Tracing | None = None,
    tiles: TilesEndpoint | None = None,
) -> Running:
    """Serve ``app`` on ``address`` (port 0 picks a free port) and return the running server:
    over TLS with ``credentials`` (``service.security.tls``), else plaintext; ``policy`` grants
    the callers their roles (default: everyone is admin); ``transparency`` says how to keep
    the transparency log (``service.transparency``; default: a key for this process only);
    ``metrics`` (``service.metrics``) meters this server, and its endpoint closes with it.
    ``background`` (``BACKGROUNDS``): ``worker`` leaves the views and the log to a ``thirteen
    worker``, and ``ResultsService`` is NOT_SERVING once the views have not advanced for
    ``views_stall_after`` seconds while events wait. ``routing`` names the other replicas, to
    which the commands of the tables they own are passed (``service.routing``; default: every
    call is served here). Past ``max_in_flight`` unary calls at once, a call is answered
    RESOURCE_EXHAUSTED (``service.rpc.admission``). ``tracing`` (``service.tracing``) makes
    the spans of each call, and stops with the server; ``tiles`` serves the log's tiles
    (``service.tiles``), and closes with it."""
    transparency, stall_after = _background(background, transparency, views_stall_after)
    lock = serving(app.database)  # first: a second server on a SQLite store stops here
    try:
        running = await assemble(
            app,
            address,
            workers,
            (sweep_interval, poll_interval),
            credentials,
            policy or Policy.everyone_admin(),
            transparency,
            metrics,
            stall_after,
            routing,
            max_in_flight,
            tracing,
        )
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    running.serving_lock = lock
    if tiles is not None and running.transparency is not None:
        tiles.attach(TileReader(running.transparency))
    running.tiles = tiles
    return running


def _background(
    background: str, transparency: LogOptions | None, stall_after: float
) -> tuple[LogOptions, float | None]:
    """What ``background`` leaves this process: the log's options (a worker appends to the
    log) and, when a worker keeps the views, after how long they stall (else None)."""
    if background not in BACKGROUNDS:
        raise ValueError(f"background must be one of {', '.join(BACKGROUNDS)}, got {background!r}")
    transparency = transparency or LogOptions()
    if background != WORKER:
        return transparency, None
    return dataclasses.replace(transparency, appends=False), stall_after


async def serve_forever(
    app: Thirteen,
    address: str,
    *,
    on_started: Callable[[Running], None] | None = None,
    credentials: grpc.ServerCredentials | None = None,
    mutual_tls: bool = False,
    policy: Policy | None = None,
    transparency: LogOptions | None = None,
    metrics: Metrics | None = None,
    background: str = HERE,
    routing: Routing | None = None,
    max_in_flight: int = MAX_IN_FLIGHT,
    tracing: Tracing | None = None,
    tiles: TilesEndpoint | None = None,
) -> None:
    """Serve until SIGTERM or SIGINT, then shut down gracefully; ``credentials``, ``policy``,
    ``transparency``, ``metrics``, ``background``, ``routing``, ``max_in_flight``,
    ``tracing`` and ``tiles`` as for ``start``
    (``mutual_tls`` only says, in the log, that clients must show a certificate)."""
    policy = policy or Policy.everyone_admin()
    running = await start(
        app,
        address,
        credentials=credentials,
        policy=policy,
        transparency=transparency,
        metrics=metrics,
        background=background,
        routing=routing,
        max_in_flight=max_in_flight,
        tracing=tracing,
        tiles=tiles,
    )
    host = address.rsplit(":", 1)[0]
    transport = "plaintext" if credentials is None else "mutual TLS" if mutual_tls else "TLS"
    metrics_at = None if metrics is None else f"http://{metrics.address}/metrics"
    log.info(
        "serving",
        address=f"{host}:{running.port}",
        transport=transport,
        metrics=metrics_at,
        tiles=None if tiles is None else f"http://{tiles.address}/",
        background=background,
    )
    if running.peers is not None:
        log.info("routing", me=running.peers.me, live=list(running.peers.live()))
    if policy.open:
        log.warning(
            "every_caller_is_admin",
            reason="no --policy: every caller may call everything",
        )
    if on_started is not None:
        on_started(running)
    await _until_signalled(running)


async def _until_signalled(running: Running) -> None:
    """Wait for SIGTERM or SIGINT, then stop ``running`` gracefully."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting_down")
    await running.stop()
    log.info("stopped")
