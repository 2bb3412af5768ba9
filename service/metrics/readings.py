"""Readings taken when Prometheus scrapes, from the running server's parts: how far the views
are behind the log, why the projector failed, the open table streams, the transparency log's
size and its latest checkpoint's.

The lag and the log's sizes are read from the store, which every replica shares, so every
replica reports the same views and the same log, whichever of them keeps them. Those reads run
one at a time on one thread of their own, whatever thread the scrape came on: the views keep a
connection per thread that reads them, for as long as they are open. A reading that fails (the
store is out of reach) or takes longer than ``READ_TIMEOUT`` is left out of that scrape and
logged; the others are still answered.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as Late
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

log = structlog.get_logger("thirteen.metrics")
READ_TIMEOUT = 4.0  # seconds a scrape waits for one store reading (Prometheus waits 10 in all)
Read = Callable[[], list[Metric]]


class Log(Protocol):
    def max_position(self) -> int: ...

    def events_after(self, position: int, limit: int = ...) -> list[tuple[int, Any]]: ...


class Views(Protocol):
    def position(self) -> int: ...


class Projector(Protocol):
    failed_runs: dict[str, int]


class Streams(Protocol):
    def streams(self, *, live: bool = ...) -> int: ...


class Tree(Protocol):
    """The transparency log's tables (``service.transparency.store.TreeStore``)."""

    def state(self) -> Any: ...

    def latest_checkpoint(self) -> Any: ...


class StoreReader:
    """One daemon thread that runs the store readings, one at a time, in the order asked (a
    daemon, so that a read the store never answers holds up no exit)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Read, Future[list[Metric]]] | None] = (
            queue.SimpleQueue()
        )
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    def read(self, read: Read, timeout: float) -> list[Metric]:
        """``read()`` on the reader's thread; ``TimeoutError`` when it takes longer than
        ``timeout`` seconds (it is then dropped if it has not started), ``RuntimeError`` once
        closed, else what it raised."""
        answer: Future[list[Metric]] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the metrics are closed")
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="metrics-readings", daemon=True
                )
                self._thread.start()
            self._jobs.put((read, answer))
        try:
            return answer.result(timeout)
        except Late:
            answer.cancel()
            raise TimeoutError(f"no answer in {timeout:g} s") from None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._jobs.put(None)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            read, answer = job
            if not answer.set_running_or_notify_cancel():  # the scrape stopped waiting
                continue
            try:
                answer.set_result(read())
            except BaseException as error:
                answer.set_exception(error)


@dataclass(eq=False)
class Readings(Collector):
    """The collector of the readings; ``tree`` is None when the server keeps no transparency
    log. ``now`` is the wall clock events are stamped with; ``timeout`` bounds each store
    reading. ``close`` ends the reader's thread."""

    events: Log
    views: Views
    projector: Projector
    hub: Streams | None  # None in a ``thirteen worker``: it serves no streams
    tree: Tree | None
    now: Callable[[], float] = time.time
    timeout: float = READ_TIMEOUT
    reader: StoreReader = field(default_factory=lambda: StoreReader())

    def close(self) -> None:
        self.reader.close()

    def describe(self) -> Iterator[Metric]:
        yield from _lag(0, 0.0)
        yield from _failures({})
        yield _streams(0)
        yield from _tree(0, 0)

    def collect(self) -> Iterator[Metric]:
        yield from self._read("projection_lag", self.lag)
        yield from _failures(self.projector.failed_runs)
        if self.hub is not None:
            yield _streams(self.hub.streams())
        if self.tree is not None:
            yield from self._read("log_sizes", self.sizes)

    def lag(self) -> list[Metric]:
        """Events stored after the views' position, and the age of the oldest of them (0 when
        the views are up to date)."""
        position = self.views.position()
        behind = max(0, self.events.max_position() - position)
        seconds = 0.0
        if behind:
            oldest = self.events.events_after(position, 1)
            if oldest and oldest[0][1] is not None:  # stamped by the library: the wall clock
                seconds = max(0.0, self.now() - oldest[0][1].timestamp.timestamp())
        return list(_lag(behind, seconds))

    def sizes(self) -> list[Metric]:
        assert self.tree is not None
        checkpoint = self.tree.latest_checkpoint()
        return list(_tree(self.tree.state().size, checkpoint.size if checkpoint else None))

    def _read(self, reading: str, read: Read) -> list[Metric]:
        try:
            return self.reader.read(read, self.timeout)
        except Exception as error:  # the store, or too slow: left out of this scrape
            log.warning("metrics_reading_failed", reading=reading, cause=repr(error))
            return []


def _lag(events: int, seconds: float) -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "thirteen_projection_lag_events",
        "Log positions after the views' position: events the views have yet to take in.",
        value=events,
    )
    yield GaugeMetricFamily(
        "thirteen_projection_lag_seconds",
        "Age of the oldest event the views have yet to take in (0 when up to date).",
        value=seconds,
    )


def _failures(runs: dict[str, int]) -> Iterator[Metric]:
    family = CounterMetricFamily(
        "thirteen_projection_failures",
        "Projector runs that failed since start, by cause: an event the views cannot take in, "
        "the database, or views of a newer schema (kept by a server of a later version).",
        labels=["cause"],
    )
    for cause, count in sorted(runs.items()):
        family.add_metric([cause], count)
    yield family


def _streams(count: int) -> Metric:
    return GaugeMetricFamily(
        "thirteen_watch_streams_open", "WatchTable streams open on this server.", value=count
    )


def _tree(leaves: int, checkpoint: int | None) -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "thirteen_log_tree_size_leaves",
        "Leaves of the transparency log's tree: events appended to it.",
        value=leaves,
    )
    if checkpoint is not None:  # none until the first is signed
        yield GaugeMetricFamily(
            "thirteen_log_checkpoint_size_leaves",
            "Tree size of the latest signed checkpoint of the transparency log.",
            value=checkpoint,
        )
