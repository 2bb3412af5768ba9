"""Prometheus metrics of one server (issue 13): ``thirteen serve --metrics HOST:PORT``.

Each server has a registry of its own, not prometheus_client's global one, so several servers
in one process (the tests) keep their figures apart. ``calls`` counts and times the RPCs,
``commits`` what the writer commits and the rounds' counters, ``readings`` what is read when
Prometheus scrapes, ``endpoint`` serves it all over HTTP.
"""

from __future__ import annotations

import importlib.metadata
import platform
from collections.abc import Iterable
from typing import TYPE_CHECKING

import grpc
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)

from service.metrics.calls import CallMeter
from service.metrics.commits import Commits
from service.metrics.endpoint import Endpoint, EndpointError
from service.metrics.readings import Readings

if TYPE_CHECKING:
    from projections.projector import Projector
    from projections.store import ViewStore
    from service.application import Thirteen
    from service.rpc.watch import WatchHub
    from service.transparency.log import TransparencyLog

__all__ = ["EndpointError", "Metrics"]


def version() -> str:
    """This installation's version of thirteen (``unknown`` when run from a bare checkout)."""
    try:
        return importlib.metadata.version("thirteen")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def build_info(registry: CollectorRegistry) -> None:
    """``thirteen_build_info``, always 1, its labels saying what runs: a dashboard joins on it
    to tell replicas of different versions apart during an upgrade."""
    Gauge(
        "thirteen_build_info",
        "What this process runs: thirteen's version, Python's and grpcio's (always 1).",
        ["version", "python", "grpcio"],
        registry=registry,
    ).labels(version(), platform.python_version(), grpc.__version__).set(1)


class Metrics:
    """The metrics of one server: its registry, the HTTP endpoint serving it (``listen``), the
    interceptor that meters the calls (``interceptor``) and the hooks into the server's parts
    (``attach``)."""

    def __init__(self) -> None:
        # No ``_created`` series beside each counter: a series per counter that only says when
        # the process started (prometheus_client's switch is for the whole process).
        disable_created_metrics()  # type: ignore[no-untyped-call]  # unannotated upstream
        self.registry = CollectorRegistry()
        # This process's CPU and memory (``process_cpu_seconds_total`` …): a serving process
        # and a ``thirteen worker`` each report their own, on their own endpoints.
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)  # python_info
        build_info(self.registry)
        self.commits = Commits(self.registry)
        self.endpoint: Endpoint | None = None
        self._calls: CallMeter | None = None
        self._app: Thirteen | None = None
        self._readings: Readings | None = None

    def listen(self, address: str) -> str:
        """Serve the metrics over HTTP on ``address`` (``HOST:PORT``, port 0 picks a free one)
        until ``close``; returns the address as bound. ``EndpointError`` says why it cannot."""
        if self.endpoint is None:
            self.endpoint = Endpoint(self.registry, address)
        return self.endpoint.address

    @property
    def address(self) -> str | None:
        return None if self.endpoint is None else self.endpoint.address

    def interceptor(self, services: Iterable[str]) -> CallMeter:
        """The server interceptor that counts and times the calls of ``services`` (their full
        names); put it first, so that it sees the calls the other interceptors refuse."""
        if self._calls is None:
            self._calls = CallMeter(self.registry, services)
        return self._calls

    def attach(
        self,
        app: Thirteen,
        *,
        views: ViewStore,
        projector: Projector,
        hub: WatchHub,
        transparency: TransparencyLog | None,
    ) -> None:
        """Count what ``app`` commits and read the rest from these parts when scraped (until
        ``close``)."""
        app.listeners.append(self.commits.committed)
        app.writer.on_commit = self.commits.batch
        self._app = app
        tree = transparency.store if transparency is not None else None
        self._readings = Readings(app, views, projector, hub, tree)
        self.registry.register(self._readings)
        self._count_submissions(transparency)

    def attach_worker(
        self,
        app: Thirteen,
        *,
        views: ViewStore,
        projector: Projector,
        transparency: TransparencyLog | None,
    ) -> None:
        """Read a ``thirteen worker``'s parts when scraped: the views' lag, the projector's
        failures, the log's sizes, and which work this worker leads. It commits nothing, so
        ``Commits`` stays at 0 here: each process's counters are its own."""
        tree = transparency.store if transparency is not None else None
        self._readings = Readings(app, views, projector, None, tree)
        self.registry.register(self._readings)
        self._count_submissions(transparency)
        leading = Gauge(
            "thirteen_worker_leading",
            "1 while this worker leads the work named (views: the projector; log: the "
            "transparency log's appender and signer), 0 while it stands by.",
            ["work"],
            registry=self.registry,
        )
        leading.labels("views").set_function(lambda: float(projector.leading))
        log_leads = (lambda: float(transparency.leading)) if transparency else (lambda: 0.0)
        leading.labels("log").set_function(log_leads)

    def _count_submissions(self, transparency: TransparencyLog | None) -> None:
        """``thirteen_witness_submissions_total``, when the log submits its checkpoints to
        tlog-witness witnesses (``serve --witness-url``)."""
        if transparency is None or transparency.submitter is None:
            return
        counter = Counter(
            "thirteen_witness_submissions",
            "Checkpoints submitted to tlog-witness witnesses (serve --witness-url), by witness "
            "and outcome.",
            ["witness", "outcome"],
            registry=self.registry,
        )
        transparency.submitter.on_outcome = lambda url, outcome: counter.labels(url, outcome).inc()

    def close(self) -> None:
        """Stop serving the metrics (and free the port), and stop counting ``app``'s commits:
        the application may outlive the server (again: nothing)."""
        if self.endpoint is not None:
            self.endpoint.close()
        if self._readings is not None:
            self._readings.close()
        app, self._app = self._app, None
        if app is not None:
            # A new list: the writer's thread may be going through the old one right now.
            app.listeners = [told for told in app.listeners if told != self.commits.committed]
            if app.writer.on_commit == self.commits.batch:
                app.writer.on_commit = None
