"""The spans of a command, made when tracing is on (``service.tracing.setup``):

- the call: a server span, by OpenTelemetry's gRPC instrumentation, continuing the caller's
  ``traceparent``; a forwarded call's owner continues the forwarding replica's (``headers``);
- ``thirteen.writer.queue``: a child of the call, from the moment the command was queued for
  the writer to the moment its batch began;
- ``thirteen.writer.commit``: a child of each call whose command was in the batch, over the
  batch's one transaction. A span per command rather than one per batch with links: the caller
  waits for that commit, and trace viewers show a trace's children, not the links into it;
  the spans of one batch share ``thirteen.batch.id`` and say how many commands it held;
- ``thirteen.projection``: one span per transaction of the projector, in a trace of its own
  (the projector runs later, for many commands at once, and no caller waits for it) with a
  link to the call of each command whose events it took in. Which call stored which log
  position is kept in memory (``RECENT`` positions, the latest), so only a process that
  commits and projects links them: a ``thirteen worker``'s projector has no such memory.
"""

from __future__ import annotations

import importlib.metadata
import itertools
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.instrumentation.grpc import aio_server_interceptor, filters
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.trace import Link, SpanContext

from service.tracing.context import Headers

RECENT = 100_000
"""Log positions whose command's call is remembered for the projection's links: a projector
more than this far behind links the oldest of them to nothing."""
SCOPE = "thirteen"


def _version() -> str:
    try:
        return importlib.metadata.version("thirteen")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _resource() -> Resource:
    """``service.name`` thirteen unless ``OTEL_SERVICE_NAME`` or ``OTEL_RESOURCE_ATTRIBUTES``
    names it; the SDK adds those variables' attributes."""
    attributes = {"service.version": _version()}
    named = os.environ.get("OTEL_SERVICE_NAME") or "service.name=" in os.environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    if not named:
        attributes["service.name"] = "thirteen"
    return Resource.create(attributes)


@dataclass(slots=True)
class Mark:
    """A command's place in its call's trace: the context it was queued in, and when."""

    parent: otel_context.Context
    queued_ns: int
    waited: bool = False  # its queue span is made once, though a lost batch runs it again


class Tracing:
    """The tracer of one server: the interceptor that makes the call spans, the writer's
    ``JobTracer``, the projector's hook (``projected``) and the trace context a forwarded call
    carries (``headers``). ``close`` sends what is left and stops."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer(SCOPE, _version())
        self._calls: dict[int, SpanContext] = {}  # log position → its command's call span
        self._lock = threading.Lock()
        self._batches = itertools.count(1)
        self._closed = False

    @classmethod
    def exporting(cls, exporter: SpanExporter, *, batched: bool) -> Tracing:
        provider = TracerProvider(resource=_resource())  # the sampler from OTEL_TRACES_SAMPLER
        processor = BatchSpanProcessor(exporter) if batched else SimpleSpanProcessor(exporter)
        provider.add_span_processor(processor)
        return cls(provider)

    def interceptor(self) -> grpc.aio.ServerInterceptor:
        """The gRPC instrumentation's server interceptor: a span per call but health checks
        (a load balancer's probe every few seconds is not a trace anyone reads)."""
        health = filters.service_name("grpc.health.v1.Health")
        interceptor: grpc.aio.ServerInterceptor = aio_server_interceptor(  # type: ignore[no-untyped-call]  # unannotated upstream
            tracer_provider=self.provider, filter_=filters.negate(health)
        )
        return interceptor

    def headers(self, context: grpc.aio.ServicerContext[Any, Any]) -> Headers:
        """The trace context of the call now served (its server span), for the call that
        passes it on to its table's owner."""
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        return tuple(carrier.items())

    # The writer's JobTracer ----------------------------------------------------------------

    def queued(self) -> Mark | None:
        parent = otel_context.get_current()
        if not trace.get_current_span(parent).is_recording():
            return None  # not a sampled call's, nor a call's at all (the sweeper's reveals)
        return Mark(parent, time.time_ns())

    def taken(self, marks: Sequence[Any]) -> None:
        now = time.time_ns()
        for mark in marks:
            if isinstance(mark, Mark) and not mark.waited:
                mark.waited = True
                span = self.tracer.start_span(
                    "thirteen.writer.queue", context=mark.parent, start_time=mark.queued_ns
                )
                span.end(end_time=now)

    def committed(self, marks: Sequence[tuple[Any, Sequence[int]]], started_ns: int) -> None:
        now = time.time_ns()
        batch = next(self._batches)
        remembered: dict[int, SpanContext] = {}
        for mark, positions in marks:
            if not isinstance(mark, Mark):
                continue
            attributes: dict[str, Any] = {
                "thirteen.batch.id": batch,
                "thirteen.batch.commands": len(marks),
                "thirteen.events": len(positions),
            }
            if positions:
                attributes["thirteen.log.first_position"] = positions[0]
                attributes["thirteen.log.last_position"] = positions[-1]
            span = self.tracer.start_span(
                "thirteen.writer.commit",
                context=mark.parent,
                start_time=started_ns,
                attributes=attributes,
            )
            span.end(end_time=now)
            call = trace.get_current_span(mark.parent).get_span_context()
            remembered.update((position, call) for position in positions)
        if remembered:
            with self._lock:
                self._calls.update(remembered)
                while len(self._calls) > RECENT:  # the oldest first: dicts keep their order
                    del self._calls[next(iter(self._calls))]

    # The projector's hook ------------------------------------------------------------------

    def projected(self, after: int, last: int, began_ns: int) -> None:
        """The projector took in the events after ``after`` up to ``last``: a span linked to
        the call of each command whose events those were (none known: no span)."""
        with self._lock:
            first = max(after + 1, last + 1 - RECENT)  # none older is remembered
            calls = [self._calls.pop(p, None) for p in range(first, last + 1)]
        links: dict[int, Link] = {}
        for call in calls:
            if call is not None and call.span_id not in links:
                links[call.span_id] = Link(call)
        if not links:
            return
        span = self.tracer.start_span(
            "thirteen.projection",
            context=otel_context.Context(),  # a trace of its own, linked to the calls
            start_time=began_ns,
            links=list(links.values()),
            attributes={
                "thirteen.log.first_position": after + 1,
                "thirteen.log.last_position": last,
                "thirteen.commands": len(links),
            },
        )
        span.end()

    def close(self) -> None:
        """Send the spans not yet sent (a few seconds at most), and stop (again: nothing)."""
        if not self._closed:
            self._closed = True
            self.provider.shutdown()
