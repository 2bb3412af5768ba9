"""A worker process (``thirteen worker``): the work no caller waits for, out of the serving
processes (``serve --background worker``). It keeps the views (the projector,
``projections.projector``) and the transparency log (its appender and signer,
``service.transparency.log``), each elected among the workers of a store by its own lock
(``service.eventstore.locks``: an advisory lock on PostgreSQL, a lock file per purpose on
SQLite), so a standby worker takes over from the stored positions when the leader dies. It
serves no gRPC: the serving processes read what it stores."""

from __future__ import annotations

import functools
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from projections.projector import Projector
from projections.store import ViewStore
from service.application import Thirteen
from service.eventstore.storage import starting_together, while_starting
from service.transparency.log import TransparencyLog
from service.transparency.options import LogOptions

if TYPE_CHECKING:
    from service.metrics import Metrics

log = structlog.get_logger("thirteen.worker")

INTERVAL = 0.05
"""Seconds between the projector's looks at the log: what it finds within one interval is one
write transaction, and a reader waits about this long beyond the commit for its result."""
REPORT_INTERVAL = 0.5  # seconds between looks at which work this worker leads (for its log)


@dataclass
class Working:
    """A started worker: its projector and its transparency log, running on threads."""

    app: Thirteen
    views: ViewStore
    projector: Projector
    transparency: TransparencyLog | None
    metrics: Metrics | None = None

    def leads(self) -> dict[str, bool]:
        """Which work this worker leads now (the others stand by for it)."""
        log_leads = self.transparency is not None and self.transparency.leading
        return {"views": self.projector.leading, "log": log_leads}

    def stop(self) -> None:
        """Stop the projector and the log (the leader first takes in what is stored), let
        their locks go for a standby, and close the store."""
        self.projector.stop()
        if self.transparency is not None:
            self.transparency.stop()
        if self.metrics is not None:
            self.metrics.close()
        self.views.close()
        self.app.close()


def start_worker(
    app: Thirteen,
    *,
    transparency: LogOptions | None = None,
    metrics: Metrics | None = None,
    interval: float = INTERVAL,
) -> Working:
    """Keep ``app``'s views and transparency log (``transparency``: its key and witnesses;
    default: a key for this process only) while this worker leads each, standing by while
    another does; ``metrics`` meter this process, and close with it."""
    views, leadership = app.database.views()
    projector = Projector(app, views, leadership=leadership, interval=interval)
    transparency_log = (transparency or LogOptions()).build(app)
    while_starting(
        "prepare the views and the log", functools.partial(_create, app, views, transparency_log)
    )
    if metrics is not None:
        metrics.attach_worker(app, views=views, projector=projector, transparency=transparency_log)
    working = Working(app, views, projector, transparency_log, metrics)
    projector.start()  # the leader rebuilds views of an earlier version first
    if transparency_log is not None:
        transparency_log.start()
    return working


def _create(app: Thirteen, views: ViewStore, transparency_log: TransparencyLog | None) -> None:
    """The views' and the log's tables, created one process at a time."""
    with starting_together(app.env):
        views.create()
        if transparency_log is not None:
            transparency_log.create()


def work_forever(
    app: Thirteen,
    *,
    transparency: LogOptions | None = None,
    metrics: Metrics | None = None,
    on_started: Callable[[Working], None] | None = None,
) -> None:
    """``start_worker``, then work until SIGTERM or SIGINT, and stop cleanly: the leader
    takes in what is stored and lets its locks go, so a standby takes over at once. Each
    change of what this worker leads is logged (``worker_leading``)."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    working = start_worker(app, transparency=transparency, metrics=metrics)
    metrics_at = None if metrics is None else f"http://{metrics.address}/metrics"
    log.info("working", store=app.database.kind, metrics=metrics_at)
    if on_started is not None:
        on_started(working)
    leads: dict[str, bool] = {}
    while not stop.wait(REPORT_INTERVAL):
        now = working.leads()
        if now != leads:
            log.info("worker_leading", **now)
            leads = now
    log.info("shutting_down")
    working.stop()
    log.info("stopped")
