"""OpenTelemetry tracing (issue 23). Into the SDK's in-memory exporter: the spans of one Reveal
made through a real server on both stores, and how they hang together: the call continuing the
caller's ``traceparent``, its wait in the writer's queue and its batch's commit as children of
the call, and the projection of its events in a trace of its own, linked to the call. Over
OTLP: a real ``thirteen serve`` sending its spans to a receiver in the test, turned on by the
flag or by the standard variable."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from service._generated.thirteen.v1 import table_pb2, table_pb2_grpc, wallet_pb2
from service.bootstrap import ServerOnThread
from service.opening import open_app
from service.routing.forwarding import OWNER
from service.routing.peers import Routing
from service.tracing import start_tracing
from tests.e2e.helpers import arrange_well, deal, seated_table, wait_until
from tests.support.cli import thirteen
from tests.support.clock import ManualClock
from tests.support.seed_key import ensure_seed_key
from tests.support.serve_process import SQLITE, ServeProcess
from tests.support.server import ServerThread
from tests.support.stores import store_environ

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


def times(span: ReadableSpan) -> tuple[int, int]:
    assert span.start_time is not None and span.end_time is not None
    return span.start_time, span.end_time


def number(span: ReadableSpan, attribute: str) -> int:
    found = (span.attributes or {}).get(attribute)
    assert isinstance(found, int), f"{span.name} has no number {attribute}"
    return found


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
    assert times(call)[0] <= times(queued)[0] <= times(queued)[1] <= times(commit)[0]
    assert times(commit)[1] <= times(call)[1]  # the call is answered once its batch is durable
    assert number(commit, "thirteen.batch.commands") == 1
    assert number(commit, "thirteen.events") >= 2  # the round's Revealed, the settlement
    last = number(commit, "thirteen.log.last_position")

    assert projection.parent is None  # a trace of its own: no caller waits for it
    assert projection.context.trace_id != call.context.trace_id
    assert times(projection)[0] >= times(call)[0]
    first_taken = number(projection, "thirteen.log.first_position")
    assert first_taken <= last <= number(projection, "thirteen.log.last_position")


def test_a_call_without_a_traceparent_starts_a_trace_of_its_own(
    traced: ServerThread, exporter: InMemorySpanExporter
) -> None:
    seated_table(traced, "t1", {"ann": 1000, "bob": 1000})
    spans = exporter.get_finished_spans()
    [opened] = named(spans, "/thirteen.v1.TableService/OpenTable")
    assert opened.parent is None
    assert children(spans, opened, "thirteen.writer.commit")


class Collector(trace_service_pb2_grpc.TraceServiceServicer):
    """An OTLP/gRPC receiver, as an OpenTelemetry Collector is to ``thirteen serve``: it keeps
    the spans it is sent."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.resources: list[dict[str, str]] = []

    def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: grpc.ServicerContext
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        for sent in request.resource_spans:
            attributes = sent.resource.attributes
            self.resources.append({a.key: a.value.string_value for a in attributes})
            for scope in sent.scope_spans:
                self.spans.extend(scope.spans)
        return trace_service_pb2.ExportTraceServiceResponse()


@pytest.fixture
def collector() -> Iterator[tuple[Collector, str]]:
    received = Collector()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(  # type: ignore[no-untyped-call]  # untyped upstream
        received, server
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield received, f"http://127.0.0.1:{port}"
    server.stop(grace=None)


@pytest.mark.parametrize("configured", ["flag", "environment"])
def test_serve_sends_its_spans_over_otlp_where_the_flag_or_the_environment_says(
    collector: tuple[Collector, str], tmp_path: Path, configured: str
) -> None:
    received, endpoint = collector
    by_flag = configured == "flag"
    environ = {**SQLITE, **({} if by_flag else {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint})}
    flags = ("--otlp-endpoint", endpoint) if by_flag else ()
    served = ServeProcess(tmp_path / "data", *flags, environ=environ)
    try:
        served.wallets.Credit(
            wallet_pb2.CreditRequest(player_id="ann", amount=10, transfer_id="in-ann"),
            metadata=(("traceparent", TRACEPARENT),),
        )
    finally:
        served.stop()  # a graceful stop sends the spans not yet sent
    credit = [s for s in received.spans if s.name == "/thirteen.v1.WalletService/Credit"]
    assert [s.trace_id.hex() for s in credit] == [TRACE_ID], "".join(served.lines[-20:])
    assert credit[0].parent_span_id.hex() == PARENT_ID
    inside = {s.name for s in received.spans if s.parent_span_id == credit[0].span_id}
    assert inside == {"thirteen.writer.queue", "thirteen.writer.commit"}
    assert {r.get("service.name") for r in received.resources} == {"thirteen"}


def test_serve_refuses_an_otlp_endpoint_that_is_not_a_url(tmp_path: Path) -> None:
    done = thirteen(
        "serve",
        "--address",
        "127.0.0.1:0",
        "--data",
        str(tmp_path),
        "--otlp-endpoint",
        "127.0.0.1:4317",
    )
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert "http://HOST:PORT" in line
    assert not (tmp_path / "thirteen.sqlite").exists()


@pytest.mark.parametrize("forwarder", ["tracing", "not tracing"])
def test_a_call_a_replica_forwards_continues_the_callers_trace_at_the_tables_owner(
    tmp_path: Path, clock: ManualClock, forwarder: str
) -> None:
    """Two replicas on one PostgreSQL store: a call made to the replica that does not own the
    table is served by the owner, whose server span is a child of the forwarding replica's
    span, itself the caller's child; or, when the forwarding replica does not trace, a child of
    the caller's span, whose ``traceparent`` it passed on as it came."""
    exporter = InMemorySpanExporter()
    listed: list[str] = []
    routing = Routing(listed=lambda: listed)
    with store_environ("postgres", tmp_path) as environ:
        seed_key = tmp_path / "seed.key"
        ensure_seed_key(seed_key)
        replicas: list[ServerOnThread] = []
        try:
            for name in ("a", "b"):
                app = open_app(tmp_path / name, clock=clock, environ=environ, seed_key=seed_key)
                traces = name == "b" or forwarder == "tracing"
                tracing = start_tracing(None, exporter=exporter) if traces else None
                replicas.append(ServerOnThread(app, routing=routing, tracing=tracing))
                listed.append(f"127.0.0.1:{replicas[-1].running.port}")
            wait_until(
                lambda: all(len(r.running.peers.live()) == 2 for r in replicas if r.running.peers),
                "each replica to count the other live",
            )
            first = replicas[0].running.peers
            assert first is not None
            # A loaded machine can fail a health check, and the first replica then owns
            # every table for a moment and rightly serves the call itself: try tables until
            # one call was passed on (the owner's address in the answer's trailer).
            passed_on = False
            for table in (f"t{n}" for n in range(1000)):
                if first.owner(table) == first.me:
                    continue
                exporter.clear()
                with grpc.insecure_channel(listed[0]) as channel:
                    _, call = table_pb2_grpc.TableServiceStub(channel).OpenTable.with_call(
                        table_pb2.OpenTableRequest(table_id=table),
                        metadata=(("traceparent", TRACEPARENT),),
                    )
                if any(key == OWNER for key, _ in call.trailing_metadata() or ()):
                    passed_on = True
                    break
            assert passed_on, "no call was passed on to its table's owner"
        finally:
            for replica in replicas:
                replica.stop()
    spans = exporter.get_finished_spans()
    opened = named(spans, "/thirteen.v1.TableService/OpenTable")
    assert {format(s.context.trace_id, "032x") for s in opened} == {TRACE_ID}
    [at_owner] = [s for s in opened if children(spans, s, "thirteen.writer.commit")]
    assert at_owner.parent is not None
    if forwarder == "tracing":
        [forwarding] = [s for s in opened if s is not at_owner]
        assert forwarding.parent is not None
        assert format(forwarding.parent.span_id, "016x") == PARENT_ID
        assert at_owner.parent.span_id == forwarding.context.span_id
    else:
        assert opened == [at_owner]
        assert format(at_owner.parent.span_id, "016x") == PARENT_ID


def test_serve_asked_to_trace_without_the_opentelemetry_packages_says_what_to_install(
    tmp_path: Path,
) -> None:
    shadow = tmp_path / "without" / "opentelemetry"
    shadow.mkdir(parents=True)  # found first on the path: as if the package were not installed
    (shadow / "__init__.py").write_text("raise ImportError('absent', name='opentelemetry')\n")
    done = thirteen(
        "serve",
        "--address",
        "127.0.0.1:0",
        "--data",
        str(tmp_path / "data"),
        "--otlp-endpoint",
        "http://127.0.0.1:4317",
        env={"PYTHONPATH": str(shadow.parent)},
    )
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.endswith("pip install 'thirteen[otel]'")
    assert not (tmp_path / "data").exists()
