"""OpenTelemetry tracing (issue 23), into the SDK's in-memory exporter: the spans of one Reveal
made through a real server on both stores, and how they hang together: the call continuing the
caller's ``traceparent``, its wait in the writer's queue and its batch's commit as children of
the call, and the projection of its events in a trace of its own, linked to the call."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from service._generated.thirteen.v1 import table_pb2
from service.tracing import start_tracing
from tests.e2e.helpers import arrange_well, deal, seated_table, wait_until
from tests.support.clock import ManualClock
from tests.support.server import ServerThread

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"  # the caller's, as W3C Trace Context writes it
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
REVEAL = "/thirteen.v1.TableService/Reveal"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def traced(
    store: dict[str, str], tmp_path: Path, clock: ManualClock, exporter: InMemorySpanExporter
) -> Iterator[ServerThread]:
    running = ServerThread(
        tmp_path / "data", store, clock, tracing=start_tracing(None, exporter=exporter)
    )
    yield running
    running.stop()


def named(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


def children(spans: Sequence[ReadableSpan], parent: ReadableSpan, name: str) -> list[ReadableSpan]:
    parent_id = parent.context.span_id
    return [s for s in named(spans, name) if s.parent is not None and s.parent.span_id == parent_id]


def test_a_reveals_spans_continue_the_callers_trace_and_link_its_projection(
    traced: ServerThread, exporter: InMemorySpanExporter
) -> None:
    seated_table(traced, "t1", {"ann": 1000, "bob": 1000})
    dealt = deal(traced, "t1")
    arrange_well(traced, dealt)
    exporter.clear()  # only the Reveal's spans (and the projection's) from here

    traced.tables.Reveal(
        table_pb2.RevealRequest(round_id=dealt.round_id), metadata=(("traceparent", TRACEPARENT),)
    )

    def projected() -> tuple[ReadableSpan, ReadableSpan] | None:
        """The Reveal's call span and the projection linked to it, once both have ended."""
        spans = exporter.get_finished_spans()
        for call in named(spans, REVEAL):
            for projection in named(spans, "thirteen.projection"):
                if any(link.context == call.context for link in projection.links):
                    return call, projection
        return None

    call, projection = wait_until(projected, "the projection of the Reveal's events")
    spans = exporter.get_finished_spans()
    assert named(spans, REVEAL) == [call]
    assert call.kind == SpanKind.SERVER
    assert format(call.context.trace_id, "032x") == TRACE_ID  # the caller's trace goes on
    assert call.parent is not None and call.parent.is_remote
    assert format(call.parent.span_id, "016x") == PARENT_ID

    [queued] = children(spans, call, "thirteen.writer.queue")
    [commit] = children(spans, call, "thirteen.writer.commit")
    assert call.start_time <= queued.start_time <= queued.end_time <= commit.start_time
    assert commit.end_time <= call.end_time  # the call is answered once its batch is durable
    attributes = commit.attributes or {}
    assert attributes["thirteen.batch.commands"] == 1
    assert attributes["thirteen.events"] >= 2  # the round's Revealed, the players' settlement
    last = attributes["thirteen.log.last_position"]

    assert projection.parent is None  # a trace of its own: no caller waits for it
    assert projection.context.trace_id != call.context.trace_id
    assert projection.start_time >= call.start_time
    taken = projection.attributes or {}
    assert taken["thirteen.log.first_position"] <= last <= taken["thirteen.log.last_position"]


def test_a_call_without_a_traceparent_starts_a_trace_of_its_own(
    traced: ServerThread, exporter: InMemorySpanExporter
) -> None:
    seated_table(traced, "t1", {"ann": 1000, "bob": 1000})
    spans = exporter.get_finished_spans()
    [opened] = named(spans, "/thirteen.v1.TableService/OpenTable")
    assert opened.parent is None
    assert children(spans, opened, "thirteen.writer.commit")
