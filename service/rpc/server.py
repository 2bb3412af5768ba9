"""The gRPC server: the servicers on an asyncio server, health checking, reflection, the log
follower and the deadline sweeper, and a graceful shutdown."""

from __future__ import annotations

import asyncio
import signal
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from projections.projector import FileLock, NewerViews, Projector
from projections.store import ResumePoint, ViewStore
from service._generated.thirteen.v1 import (
    audit_pb2,
    audit_pb2_grpc,
    diagnostics_pb2,
    diagnostics_pb2_grpc,
    results_pb2,
    results_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
    transparency_pb2,
    transparency_pb2_grpc,
    wallet_pb2,
    wallet_pb2_grpc,
)
from service.application import Thirteen
from service.eventstore.follower import LogFollower
from service.eventstore.storage import open_views, serving, starting_together, while_starting
from service.metrics import Metrics
from service.rpc.audit import AuditServicer
from service.rpc.authorizing import Authorize
from service.rpc.diagnostics import DiagnosticsServicer
from service.rpc.results import ResultsServicer
from service.rpc.runner import Runner
from service.rpc.table import TableServicer
from service.rpc.transparency import TransparencyServicer
from service.rpc.undecodable import RefuseUndecodable
from service.rpc.views import Views
from service.rpc.wallet import WalletServicer
from service.rpc.watch import TABLE_AND_ROUND_TOPICS, WatchHub
from service.security.policy import Policy
from service.sweeper import DeadlineSweeper
from service.transparency.log import LogOptions, TransparencyLog

log = structlog.get_logger("thirteen.server")

_NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
MAX_MESSAGE_BYTES = 1 << 20  # a request is a few hundred bytes; refuse anything near a MiB
SERVICE_NAMES = [
    wallet_pb2.DESCRIPTOR.services_by_name["WalletService"].full_name,
    table_pb2.DESCRIPTOR.services_by_name["TableService"].full_name,
    diagnostics_pb2.DESCRIPTOR.services_by_name["DiagnosticsService"].full_name,
    results_pb2.DESCRIPTOR.services_by_name["ResultsService"].full_name,
    audit_pb2.DESCRIPTOR.services_by_name["AuditService"].full_name,
    transparency_pb2.DESCRIPTOR.services_by_name["TransparencyService"].full_name,
]
KNOWN_SERVICES = [*SERVICE_NAMES, health.SERVICE_NAME, reflection.SERVICE_NAME]  # all it serves


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
    transparency: TransparencyLog | None = None
    metrics: Metrics | None = None  # its HTTP endpoint is closed with the server

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
        if self.metrics is not None:
            self.metrics.close()
        self.sweeper.stop()
        self.follower.stop()
        self.projector.stop()
        if self.transparency is not None:
            self.transparency.stop()
        self.executor.shutdown(wait=True)
        self.views.close()
        self.app.close()
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
) -> Running:
    """Serve ``app`` on ``address`` (port 0 picks a free port) and return the running server:
    over TLS with ``credentials`` (``service.security.tls``), else plaintext; ``policy`` grants
    the callers their roles (default: everyone is admin); ``transparency`` says how to keep
    the transparency log (``service.transparency``; default: a key for this process only);
    ``metrics`` (``service.metrics``) meters this server, and its endpoint closes with it."""
    lock = serving(app)  # first: a second server on a SQLite store stops here
    try:
        running = await _start(
            app,
            address,
            workers,
            sweep_interval,
            poll_interval,
            credentials,
            policy or Policy.everyone_admin(),
            transparency or LogOptions(),
            metrics,
        )
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    running.serving_lock = lock
    return running


async def _start(
    app: Thirteen,
    address: str,
    workers: int,
    sweep_interval: float,
    poll_interval: float,
    credentials: grpc.ServerCredentials | None,
    policy: Policy,
    transparency: LogOptions,
    metrics: Metrics | None,
) -> Running:
    loop = asyncio.get_running_loop()
    executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rpc")
    run = Runner(executor)
    hub = WatchHub(loop, app)
    interceptors: list[grpc.aio.ServerInterceptor] = [Authorize(policy), RefuseUndecodable()]
    if metrics is not None:  # first: it counts the calls the others refuse, with their codes
        interceptors.insert(0, metrics.interceptor(KNOWN_SERVICES))
    server = grpc.aio.server(
        interceptors=interceptors,
        options=[
            ("grpc.so_reuseport", 0),  # a second server on a taken port must fail, not share it
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", 16 * MAX_MESSAGE_BYTES),
        ],
    )
    wallet_pb2_grpc.add_WalletServiceServicer_to_server(WalletServicer(app, run), server)
    table_pb2_grpc.add_TableServiceServicer_to_server(TableServicer(app, run, hub), server)
    diagnostics_pb2_grpc.add_DiagnosticsServiceServicer_to_server(DiagnosticsServicer(run), server)
    views, leadership = open_views(app)
    health_servicer = health.aio.HealthServicer()
    results_name = results_pb2.DESCRIPTOR.services_by_name["ResultsService"].full_name

    def views_health(ok: bool) -> None:  # told on the projector's thread
        status = health_pb2.HealthCheckResponse.SERVING if ok else _NOT_SERVING
        asyncio.run_coroutine_threadsafe(health_servicer.set(results_name, status), loop)

    # The projector batches what arrives within its interval into one write transaction instead
    # of competing with every command for SQLite's write lock; a reader waiting for a result
    # (read-your-writes) pokes it at once.
    projector = Projector(
        app,
        views,
        leadership=leadership,
        interval=min(poll_interval, 0.05),
        on_health=views_health,
    )
    reads = Views(views, projector)  # every RPC's read of the views, as of the call
    results_pb2_grpc.add_ResultsServiceServicer_to_server(ResultsServicer(app, reads, run), server)
    transparency_log = transparency.build(app)
    if transparency_log is not None:
        log_name = transparency_pb2.DESCRIPTOR.services_by_name["TransparencyService"].full_name

        def log_health(ok: bool) -> None:  # told on the log's thread; "" stays SERVING
            status = health_pb2.HealthCheckResponse.SERVING if ok else _NOT_SERVING
            asyncio.run_coroutine_threadsafe(health_servicer.set(log_name, status), loop)

        transparency_log.on_health = log_health
    audit_pb2_grpc.add_AuditServiceServicer_to_server(
        AuditServicer(app, reads, run, transparency_log), server
    )
    transparency_pb2_grpc.add_TransparencyServiceServicer_to_server(
        TransparencyServicer(app, transparency_log, run), server
    )
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(KNOWN_SERVICES, server)
    try:
        if credentials is None:
            port = server.add_insecure_port(address)
        else:
            port = server.add_secure_port(address, credentials)
    except RuntimeError:  # grpc reports a failed bind this way
        port = 0
    if port == 0:
        raise OSError(f"cannot listen on {address}: the address is taken or not ours")

    def prepare() -> ResumePoint | None:
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

    # The sweeper and the table streams read only table and round events, from where the views
    # are (with the rounds open there), so start-up does not read the whole log; views of an
    # earlier version know no open rounds, and then the log is read from its start.
    resume = await loop.run_in_executor(executor, while_starting, "prepare the views", prepare)
    follower = LogFollower(
        app,
        start=resume.position if resume else 0,
        interval=poll_interval,
        topics=TABLE_AND_ROUND_TOPICS,
    )
    sweeper = DeadlineSweeper(app, interval=sweep_interval)
    if resume is not None:
        sweeper.resume(resume.open_rounds)
    follower.listeners += [sweeper.on_event, hub.on_event]
    if metrics is not None:
        metrics.attach(
            app, views=views, projector=projector, hub=hub, transparency=transparency_log
        )
    for name in ["", *SERVICE_NAMES]:  # before the projector can say otherwise
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    follower.start()
    sweeper.start()
    projector.start()
    if transparency_log is not None:
        transparency_log.start()
    await server.start()
    return Running(
        server,
        port,
        app,
        health_servicer,
        follower,
        sweeper,
        projector,
        views,
        executor,
        hub,
        transparency=transparency_log,
        metrics=metrics,
    )


async def serve_forever(
    app: Thirteen,
    address: str,
    *,
    on_started: object = None,
    credentials: grpc.ServerCredentials | None = None,
    mutual_tls: bool = False,
    policy: Policy | None = None,
    transparency: LogOptions | None = None,
    metrics: Metrics | None = None,
) -> None:
    """Serve until SIGTERM or SIGINT, then shut down gracefully; ``credentials``, ``policy``,
    ``transparency`` and ``metrics`` as for ``start`` (``mutual_tls`` only says, in the log,
    that clients must show a certificate)."""
    policy = policy or Policy.everyone_admin()
    running = await start(
        app,
        address,
        credentials=credentials,
        policy=policy,
        transparency=transparency,
        metrics=metrics,
    )
    host = address.rsplit(":", 1)[0]
    transport = "plaintext" if credentials is None else "mutual TLS" if mutual_tls else "TLS"
    metrics_at = None if metrics is None else f"http://{metrics.address}/metrics"
    log.info("serving", address=f"{host}:{running.port}", transport=transport, metrics=metrics_at)
    if policy.open:
        log.warning(
            "every_caller_is_admin",
            reason="no --policy: every caller may call everything",
        )
    if callable(on_started):
        on_started(running)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting_down")
    await running.stop()
    log.info("stopped")
