"""How a serving process is put together (``service.bootstrap.serving``'s ``start``): the gRPC
server with every servicer and interceptor, health and reflection
(``service.rpc.server.create_server``), the views' projector, the transparency log, the log
follower and the deadline sweeper, the replicas' routing, the metrics and tracing, each wired to
the others and started in order.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

import grpc
from grpc_health.v1 import health, health_pb2

from projections.projector import Leadership, NewerViews, Projector
from projections.store import ResumePoint, ViewStore
from service.application import Thirteen
from service.bootstrap.following import followers
from service.bootstrap.interceptors import every_interceptor
from service.bootstrap.running import Running
from service.eventstore.follower import LogFollower
from service.eventstore.locks import Standby
from service.eventstore.storage import starting_together, while_starting
from service.routing.forwarding import Router
from service.routing.identity import health_name, store_identity
from service.routing.peers import Peers, Routing
from service.routing.rounds import RoundTables
from service.rpc.pages import Pages
from service.rpc.reader import reader
from service.rpc.runner import Runner
from service.rpc.server import SERVICES, create_server
from service.rpc.services import every_servicer
from service.rpc.views import Views
from service.rpc.watch import WatchHub
from service.security.policy import Policy
from service.sweeper import DeadlineSweeper
from service.transparency.log import TransparencyLog
from service.transparency.options import LogOptions

if TYPE_CHECKING:
    from service.metrics import Metrics
    from service.tracing.spans import Tracing

T = TypeVar("T")

_SERVING = health_pb2.HealthCheckResponse.SERVING
_NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


async def assemble(
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
    reports = functools.partial(_health_setter, health_servicer, loop)
    on_views = reports(SERVICES["ResultsService"])
    views, leadership, projector = _views(app, stall_after, poll_interval, on_views)
    transparency_log = transparency.build(app)
    if transparency_log is not None:  # "" stays SERVING whatever the log says
        transparency_log.on_health = reports(SERVICES["TransparencyService"])
    run = Runner(executor)
    reads = Views(views, projector)  # every RPC's read of the views, as of the call
    pages = Pages(reads, run, reader(app.env, views))  # in reader processes (issue 22)
    servicers = every_servicer(app, run, hub, reads, pages, health_servicer, transparency_log)
    peers = None if routing is None else Peers(routing.listed, routing.credentials)
    rounds = RoundTables(app)
    router = None if peers is None else Router(peers, rounds, executor)
    interceptors = every_interceptor(policy, metrics, router, max_in_flight)
    if tracing is not None:
        _trace(tracing, interceptors, app, projector, router)
    server, port = create_server(servicers, interceptors, address, credentials)
    if peers is not None and routing is not None:
        await _bind(peers, routing, f"{address.rsplit(':', 1)[0]}:{port}", app, executor)
    prepare = functools.partial(_prepare, app, views, projector, leadership, transparency_log)
    resume = await _while_starting(executor, "prepare the views", prepare)
    follower, sweeper = followers(app, hub, resume, sweep_interval, poll_interval)
    if peers is not None:
        _route(peers, rounds, app, follower, sweeper)
    if metrics is not None:
        metrics.attach(
            app, views=views, projector=projector, hub=hub, transparency=transparency_log
        )
    await _all_serving(health_servicer, peers)
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


def _health_setter(
    health_servicer: health.aio.HealthServicer, loop: asyncio.AbstractEventLoop, service: str
) -> Callable[[bool], None]:
    """What a background thread calls to report ``service`` (un)healthy on the loop's server."""

    def report(ok: bool) -> None:
        status = _SERVING if ok else _NOT_SERVING
        asyncio.run_coroutine_threadsafe(health_servicer.set(service, status), loop)

    return report


def _views(
    app: Thirteen,
    stall_after: float | None,
    poll_interval: float,
    on_health: Callable[[bool], None],
) -> tuple[ViewStore, Leadership, Projector]:
    """The views, who may write them, and their projector; ``stall_after`` given: a worker
    keeps them, and this process only watches their position."""
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
        on_health=on_health,
        stall_after=stall_after,
    )
    return views, leadership, projector


def _trace(
    tracing: Tracing,
    interceptors: list[grpc.aio.ServerInterceptor],
    app: Thirteen,
    projector: Projector,
    router: Router | None,
) -> None:
    """Tracing in every part a call goes through: its interceptor outermost (the call's span
    holds the others' work, refusals too), the writer, the projector and the router."""
    interceptors.insert(0, tracing.interceptor())
    app.writer.tracer = tracing
    projector.on_projected = tracing.projected
    if router is not None:
        router.trace_headers = tracing.headers


async def _while_starting(executor: ThreadPoolExecutor, what: str, attempt: Callable[[], T]) -> T:
    """``attempt()`` on the pool, tried again while the database drops the connection under
    it (``service.eventstore.storage.while_starting``)."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(executor, while_starting, what, attempt)


async def _bind(
    peers: Peers, routing: Routing, bound: str, app: Thirteen, executor: ThreadPoolExecutor
) -> None:
    """This replica among its peers: at its advertised address (else ``bound``, where it
    listens), under the store's health name."""
    store_id = functools.partial(_store_id, app)
    store = await _while_starting(executor, "read the store's id", store_id)
    peers.bind(routing.advertise or bound, health_name(store))


def _route(
    peers: Peers,
    rounds: RoundTables,
    app: Thirteen,
    follower: LogFollower,
    sweeper: DeadlineSweeper,
) -> None:
    """With replicas: each round's table known from the log and from this process's commits,
    and the sweeper left to the tables this replica owns."""
    follower.listeners.append(rounds.on_event)
    app.listeners.append(rounds.on_commit)
    sweeper.owns, sweeper.table_of = peers.owns, rounds.table_of


async def _all_serving(health_servicer: health.aio.HealthServicer, peers: Peers | None) -> None:
    """Every service SERVING, the server's ("") and with replicas the store's, which the other
    replicas ask; before the projector can say otherwise."""
    ours = [] if peers is None else [peers.store]
    for name in ["", *SERVICES.values(), *ours]:
        await health_servicer.set(name, _SERVING)


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
