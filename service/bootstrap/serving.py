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
import functools
import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import grpc
import structlog
from grpc_health.v1 import health, health_pb2

from projections.projector import Leadership, NewerViews, Projector
from projections.stall import STALL_AFTER
from projections.store import ResumePoint, ViewStore
from service.application import Thirteen
from service.bootstrap.backgrounds import BACKGROUNDS, HERE, WORKER
from service.bootstrap.following import followers
from service.bootstrap.interceptors import every_interceptor
from service.eventstore.follower import LogFollower
from service.eventstore.locks import FileLock, Standby
from service.eventstore.storage import serving, starting_together, while_starting
from service.routing.forwarding import Router
from service.routing.identity import health_name, store_identity
from service.routing.peers import Peers, Routing
from service.routing.rounds import RoundTables
from service.rpc.admission import MAX_IN_FLIGHT
from service.rpc.pages import Pages
from service.rpc.reader import Reader, reader
from service.rpc.runner import Runner
from service.rpc.server import SERVICES, create_server
from service.rpc.services import every_servicer
from service.rpc.views import Views
from service.rpc.watch import WatchHub
from service.security.policy import Policy
from service.sweeper import DeadlineSweeper
from service.transparency.log import TransparencyLog
from service.transparency.options import LogOptions
from service.transparency.tiles import TileReader

if TYPE_CHECKING:
    from service.metrics import Metrics
    from service.tiles import TilesEndpoint
    from service.tracing.spans import Tracing

log = structlog.get_logger("thirteen.server")
T = TypeVar("T")

_SERVING = health_pb2.HealthCheckResponse.SERVING
_NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


@dataclass
class Running:
    """A started server and what runs beside it."""

    server: grpc.aio.Server
    port: int
    app: Thirteen
    health: health.aio.HealthServicer
    follower: LogFollower
    sweeper: DeadlineSweeper
    projector: Projector
    views: ViewStore
    executor: ThreadPoolExecutor
    hub: WatchHub
    stopped: asyncio.Event = field(default_factory=asyncio.Event)
    serving_lock: FileLock | None = None  # SQLite: this process serves the store
    peers: Peers | None = None  # with replicas: who owns which table
    transparency: TransparencyLog | None = None
    metrics: Metrics | None = None  # its HTTP endpoint is closed with the server
    tiles: TilesEndpoint | None = None  # the log's tiles over HTTP, closed with the server
    tracing: Tracing | None = None  # its spans are sent, and it stops, with the server
    reader: Reader | None = None  # the reader processes of the listings, stopped with it

    def start_beside(self) -> None:
        """Start what runs beside the server: the follower, the sweeper, the projector, the log."""
        self.follower.start()
        self.sweeper.start()
        self.projector.start()
        if self.transparency is not None:
            self.transparency.start()

    async def stop(self, grace: float = 5.0) -> None:
        """Stop taking calls, let the running ones finish, then stop the background work."""
        if self.stopped.is_set():
            return
        self.stopped.set()
        await self.health.enter_graceful_shutdown()
        # Open streams would hold the whole grace period: end them now, each with the
        # position its client resumes from on another replica or after the restart.
        self.hub.end_all(grpc.StatusCode.UNAVAILABLE, "the server is stopping")
        await self.server.stop(grace)
        if self.peers is not None:
            await self.peers.stop()
        if self.metrics is not None:
            self.metrics.close()
        if self.tiles is not None:
            self.tiles.close()
        self.sweeper.stop()
        self.follower.stop()
        self.projector.stop()
        if self.transparency is not None:
            self.transparency.stop()
        if self.reader is not None:  # before the pool: a read past the grace is let go
            self.reader.close()
        self.executor.shutdown(wait=True)
        self.views.close()
        self.app.close()
        if self.tracing is not None:
            self.app.writer.tracer = None
            self.tracing.close()
        if self.serving_lock is not None:
            self.serving_lock.release()


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
    if background not in BACKGROUNDS:
        raise ValueError(f"background must be one of {', '.join(BACKGROUNDS)}, got {background!r}")
    elsewhere = background == WORKER
    transparency = transparency or LogOptions()
    if elsewhere:
        transparency = dataclasses.replace(transparency, appends=False)
    lock = serving(app.database)  # first: a second server on a SQLite store stops here
    try:
        running = await _assemble(
            app,
            address,
            workers,
            (sweep_interval, poll_interval),
            credentials,
            policy or Policy.everyone_admin(),
            transparency,
            metrics,
            views_stall_after if elsewhere else None,
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


def _health_setter(
    health_servicer: health.aio.HealthServicer, loop: asyncio.AbstractEventLoop, service: str
) -> Callable[[bool], None]:
    """What a background thread calls to report ``service`` (un)healthy on the loop's server."""

    def report(ok: bool) -> None:
        status = _SERVING if ok else _NOT_SERVING
        asyncio.run_coroutine_threadsafe(health_servicer.set(service, status), loop)

    return report


async def _assemble(
    app: Thirteen,
    address: str,
    workers: int,
    intervals: tuple[float, float],
    credentials: grpc.ServerCredentials | None,
    policy: Policy,
    transparency: LogOptions,
    metrics: Metrics | None,
    stall_after: float | None,
    routing: Routing | None,
    max_in_flight: int,
    tracing: Tracing | None = None,
) -> Running:
    """``start``'s parts; ``stall_after`` given: a worker keeps the views and the log."""
    sweep_interval, poll_interval = intervals
    loop = asyncio.get_running_loop()
    executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rpc")
    hub = WatchHub(loop, app)
    health_servicer = health.aio.HealthServicer()
    views, leadership = app.database.views()
    if stall_after is not None:  # a worker keeps them: this one only watches their position
        leadership = Standby()
    # The projector batches what arrives within its interval into one write transaction instead
    # of competing with every command for SQLite's write lock; a reader waiting for a result
    # (read-your-writes) pokes it at once.
    projector = Projector(
        app,
        views,
        leadership=leadership,
        interval=min(poll_interval, 0.05),
        on_health=_health_setter(health_servicer, loop, SERVICES["ResultsService"]),
        stall_after=stall_after,
    )
    transparency_log = transparency.build(app)
    if transparency_log is not None:  # "" stays SERVING whatever the log says
        log_service = SERVICES["TransparencyService"]
        transparency_log.on_health = _health_setter(health_servicer, loop, log_service)
    run = Runner(executor)
    reads = Views(views, projector)  # every RPC's read of the views, as of the call
    pages = Pages(reads, run, reader(app.env, views))  # in reader processes (issue 22)
    servicers = every_servicer(app, run, hub, reads, pages, health_servicer, transparency_log)
    peers = None if routing is None else Peers(routing.listed, routing.credentials)
    rounds = RoundTables(app)
    router = None if peers is None else Router(peers, rounds, executor)
    interceptors = every_interceptor(policy, metrics, router, max_in_flight)
    if tracing is not None:  # outermost: the call's span holds the others' work, refusals too
        interceptors.insert(0, tracing.interceptor())
        app.writer.tracer = tracing
        projector.on_projected = tracing.projected
        if router is not None:
            router.trace_headers = tracing.headers
    server, port = create_server(servicers, interceptors, address, credentials)
    if peers is not None and routing is not None:
        store = await loop.run_in_executor(
            executor, while_starting, "read the store's id", functools.partial(_store_id, app)
        )
        peers.bind(routing.advertise or f"{address.rsplit(':', 1)[0]}:{port}", health_name(store))
    resume = await loop.run_in_executor(
        executor,
        while_starting,
        "prepare the views",
        functools.partial(_prepare, app, views, projector, leadership, transparency_log),
    )
    follower, sweeper = followers(app, hub, resume, sweep_interval, poll_interval)
    if peers is not None:
        follower.listeners.append(rounds.on_event)
        app.listeners.append(rounds.on_commit)
        sweeper.owns, sweeper.table_of = peers.owns, rounds.table_of
    if metrics is not None:
        metrics.attach(
            app, views=views, projector=projector, hub=hub, transparency=transparency_log
        )
    ours = [] if peers is None else [peers.store]  # the store's, asked by the other replicas
    for name in ["", *SERVICES.values(), *ours]:  # before the projector can say otherwise
        await health_servicer.set(name, _SERVING)
    running = Running(
        server, port, app, health_servicer, follower, sweeper, projector, views, executor, hub
    )
    running.transparency, running.metrics, running.peers = transparency_log, metrics, peers
    running.tracing, running.reader = tracing, pages.reader
    running.start_beside()
    if peers is not None:
        await peers.start()
    await server.start()
    return running


def _store_id(app: Thirteen) -> str:
    """The store's id (``service.routing.identity``), made by one replica at a time."""
    with starting_together(app.env):
        return store_identity(app.database)


def _prepare(
    app: Thirteen,
    views: ViewStore,
    projector: Projector,
    leadership: Leadership,
    transparency_log: TransparencyLog | None,
) -> ResumePoint | None:
    """The views' and the log's tables created (one replica at a time), views of an earlier
    version rebuilt once by the leader; where the views are, for the follower to start from."""
    with starting_together(app.env):
        views.create()
        if transparency_log is not None:
            transparency_log.create()
    if leadership.acquire():
        try:
            projector.upgrade()  # views of an earlier version are rebuilt once, first
        except NewerViews:  # a newer server keeps them: serve, and leave them to it
            leadership.release()
    return views.resume_point()


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
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting_down")
    await running.stop()
    log.info("stopped")
