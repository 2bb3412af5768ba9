"""A started serving process (``service.bootstrap.serving``): the gRPC server and what runs
beside it, started together and stopped in order: the calls first, the background work next,
the stores last."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import grpc
from grpc_health.v1 import health

from projections.projector import Projector
from projections.store import ViewStore
from service.application import Thirteen
from service.eventstore.follower import LogFollower
from service.eventstore.locks import FileLock
from service.routing.peers import Peers
from service.rpc.reader import Reader
from service.rpc.watch import WatchHub
from service.sweeper import DeadlineSweeper
from service.transparency.log import TransparencyLog

if TYPE_CHECKING:
    from service.metrics import Metrics
    from service.tiles import TilesEndpoint
    from service.tracing.spans import Tracing


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
