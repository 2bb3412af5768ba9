"""The metrics' own logic (issue 13), without a server: a call's status code, the bounded
labels, the rounds' counters from events, and the readings taken at scrape time."""

from __future__ import annotations

import asyncio
import threading
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest
from grpc.aio import AbortError
from prometheus_client import CollectorRegistry

from domain.round import Round
from service.caller import CALLER_FIELD, SWEEPER
from service.metrics import Metrics
from service.metrics.calls import CallMeter, code_of
from service.metrics.commits import Commits
from service.metrics.endpoint import EndpointError, split_address
from service.metrics.readings import Readings
from service.rpc.server import KNOWN_SERVICES

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
Code = grpc.StatusCode


class Context:
    """What ``code_of`` reads of a call's context."""

    def __init__(self, code: Code | None = None, remaining: float | None = None) -> None:
        self._code = code
        self._remaining = remaining

    def code(self) -> Code | None:
        return self._code

    def time_remaining(self) -> float | None:
        return self._remaining


# A call's status code -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("context", "error", "expected"),
    [
        (Context(), None, Code.OK),
        (Context(Code.NOT_FOUND), None, Code.NOT_FOUND),  # set without aborting
        (Context(Code.PERMISSION_DENIED), AbortError(), Code.PERMISSION_DENIED),
        (Context(), AbortError(), Code.UNKNOWN),
        (Context(remaining=0.0), asyncio.CancelledError(), Code.DEADLINE_EXCEEDED),
        # The client's deadline fires first: the server sees its cancel a moment before its own.
        (Context(remaining=0.006), asyncio.CancelledError(), Code.DEADLINE_EXCEEDED),
        (Context(remaining=0.006), GeneratorExit(), Code.DEADLINE_EXCEEDED),
        (Context(remaining=3.0), asyncio.CancelledError(), Code.CANCELLED),
        (Context(), asyncio.CancelledError(), Code.CANCELLED),
        (Context(), GeneratorExit(), Code.CANCELLED),
        (Context(), ValueError("a fault"), Code.UNKNOWN),
    ],
)
def test_a_call_ends_with_the_code_grpc_answers(
    context: Context, error: BaseException | None, expected: Code
) -> None:
    # Context is a fake with only the two methods code_of reads.
    assert code_of(context, error) == expected  # type: ignore[arg-type]


# Labels ---------------------------------------------------------------------------------------


def test_method_labels_come_only_from_the_services_the_server_declares() -> None:
    meter = CallMeter(CollectorRegistry(), KNOWN_SERVICES)
    assert meter.labels("/thirteen.v1.TableService/Deal") == ("thirteen.v1.TableService", "Deal")
    assert meter.labels("/grpc.health.v1.Health/Check") == ("grpc.health.v1.Health", "Check")
    assert meter.labels("/thirteen.v1.TableService/Nope") == ("unknown", "unknown")
    assert meter.labels("/" + "x" * 500) == ("unknown", "unknown")


def _call(meter: CallMeter, path: str, behaviour: Any, context: Context) -> Any:
    """Run one unary call of ``path`` through the meter, as grpc.aio would."""
    found: grpc.RpcMethodHandler[bytes, bytes] = grpc.unary_unary_rpc_method_handler(behaviour)

    async def continuation(details: Any) -> Any:
        return found

    async def run() -> Any:
        details: Any = type("Details", (), {"method": path})()
        handler: Any = await meter.intercept_service(continuation, details)
        return await handler.unary_unary(b"", context)

    return asyncio.run(run())


def test_each_call_is_counted_once_with_its_code_and_timed() -> None:
    registry = CollectorRegistry()
    meter = CallMeter(registry, KNOWN_SERVICES)
    path = "/thirteen.v1.TableService/Reveal"

    async def answer(request: bytes, context: Any) -> bytes:
        return b"ok"

    async def refuse(request: bytes, context: Any) -> bytes:
        context._code = Code.FAILED_PRECONDITION
        raise AbortError()

    assert _call(meter, path, answer, Context()) == b"ok"
    with pytest.raises(AbortError):
        _call(meter, path, refuse, Context())
    labels = {"service": "thirteen.v1.TableService", "method": "Reveal"}
    count = registry.get_sample_value
    assert count("thirteen_rpc_requests_total", {**labels, "code": "OK"}) == 1
    assert count("thirteen_rpc_requests_total", {**labels, "code": "FAILED_PRECONDITION"}) == 1
    assert count("thirteen_rpc_duration_seconds_count", labels) == 2


# The rounds' counters -------------------------------------------------------------------------


def _event(kind: type, *, by: str = "spiffe://thirteen.dev/dealer", **fields: Any) -> Any:
    event = kind(originator_id=uuid.uuid4(), originator_version=2, timestamp=T0, at=T0, **fields)
    object.__setattr__(event, CALLER_FIELD, by)  # as the writer records the caller
    return event


def _player(player_id: str, foul: str | None = None, special: str | None = None) -> Any:
    return {"player_id": player_id, "foul_reason": foul, "special": special}


def test_the_rounds_counters_follow_the_events_of_each_commit() -> None:
    registry = CollectorRegistry()
    commits = Commits(registry)
    revealed = _event(
        Round.Revealed,
        server_seed="00",
        points={"A": 8, "B": -4, "C": -4},
        coins={"A": 80, "B": -40, "C": -40},
        result={
            "players": [_player("A", special="dragon"), _player("B"), _player("C")],
            "pairs": [],
        },
    )
    at_deadline = _event(
        Round.Revealed,
        by=SWEEPER.identity,
        server_seed="00",
        points={"A": 2, "B": -2},
        coins={"A": 20, "B": -20},
        result={"players": [_player("A"), _player("B", foul="missing")], "pairs": []},
    )
    escaped = _event(Round.PlayerEscaped, player_id="D", transfers={"D": -50, "E": 50})
    abandoned = _event(Round.Abandoned, server_seed="00")
    arranged = _event(
        Round.Arranged, player_id="A", front=[], middle=[], back=[], foul_reason="x"
    )  # a foul draft: a foul only if it is still one at the showdown (R4.3)

    commits.count([revealed, at_deadline, escaped, abandoned, arranged])

    value = registry.get_sample_value
    assert value("thirteen_rounds_revealed_total", {"trigger": "call"}) == 1
    assert value("thirteen_rounds_revealed_total", {"trigger": "deadline"}) == 1
    assert value("thirteen_rounds_abandoned_total") == 1
    assert value("thirteen_escapes_total") == 1
    assert value("thirteen_fouls_total") == 1
    assert value("thirteen_specials_declared_total", {"special": "dragon"}) == 1
    assert value("thirteen_specials_declared_total", {"special": "six_pairs"}) == 0
    assert value("thirteen_coins_settled_total") == 100  # R9: what the winners received


def test_a_round_revealed_before_results_were_recorded_counts_no_fouls_or_specials() -> None:
    registry = CollectorRegistry()
    commits = Commits(registry)
    old = _event(Round.Revealed, server_seed="00", points={}, coins={"A": 5, "B": -5}, result=None)
    commits.count([old])
    assert registry.get_sample_value("thirteen_fouls_total") == 0
    assert registry.get_sample_value("thirteen_coins_settled_total") == 5


def test_a_committed_batch_is_observed_once() -> None:
    registry = CollectorRegistry()
    commits = Commits(registry)
    commits.batch(3, 0.002)
    value = registry.get_sample_value
    assert value("thirteen_commit_batch_commands_sum") == 3
    assert value("thirteen_commit_batch_commands_bucket", {"le": "2.0"}) == 0
    assert value("thirteen_commit_batch_commands_bucket", {"le": "4.0"}) == 1
    assert value("thirteen_commit_duration_seconds_count") == 1


# Readings at scrape time ----------------------------------------------------------------------


class Event:
    def __init__(self, timestamp: datetime) -> None:
        self.timestamp = timestamp


class Log:
    def __init__(self, head: int, oldest: datetime | None) -> None:
        self.head = head
        self.oldest = oldest

    def max_position(self) -> int:
        return self.head

    def events_after(self, position: int, limit: int = 500) -> list[tuple[int, Any]]:
        if self.oldest is None or position >= self.head:
            return []
        return [(position + 1, Event(self.oldest))]


class Views:
    def __init__(self, position: int | Exception) -> None:
        self.at = position

    def position(self) -> int:
        if isinstance(self.at, Exception):
            raise self.at
        return self.at


class Projector:
    def __init__(self) -> None:
        self.failed_runs = {"event": 2, "database": 5}


class Hub:
    def streams(self, *, live: bool = False) -> int:
        return 3


class Tree:
    def __init__(self, size: int, checkpoint: int | None) -> None:
        self.size = size
        self.checkpoint = checkpoint

    def state(self) -> Any:
        return type("State", (), {"size": self.size})()

    def latest_checkpoint(self) -> Any:
        if self.checkpoint is None:
            return None
        return type("Checkpoint", (), {"size": self.checkpoint})()


def _read(readings: Readings) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(readings)
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in registry.collect()
        for s in family.samples
    }


def test_the_views_lag_by_the_events_after_their_position_and_the_oldest_ones_age() -> None:
    now = T0 + timedelta(seconds=90)
    readings = Readings(
        Log(head=10, oldest=T0), Views(7), Projector(), Hub(), Tree(10, 8), lambda: now.timestamp()
    )
    read = _read(readings)
    assert read["thirteen_projection_lag_events", ()] == 3
    assert read["thirteen_projection_lag_seconds", ()] == 90
    assert read["thirteen_projection_failures_total", (("cause", "database"),)] == 5
    assert read["thirteen_projection_failures_total", (("cause", "event"),)] == 2
    assert read["thirteen_watch_streams_open", ()] == 3
    assert read["thirteen_log_tree_size_leaves", ()] == 10
    assert read["thirteen_log_checkpoint_size_leaves", ()] == 8


def test_views_up_to_date_lag_nothing_and_a_log_without_checkpoints_reports_none() -> None:
    read = _read(Readings(Log(head=4, oldest=T0), Views(4), Projector(), Hub(), Tree(4, None)))
    assert read["thirteen_projection_lag_events", ()] == 0
    assert read["thirteen_projection_lag_seconds", ()] == 0
    assert ("thirteen_log_checkpoint_size_leaves", ()) not in read


def test_a_reading_the_store_cannot_answer_is_left_out_and_the_others_are_answered() -> None:
    readings = Readings(Log(head=4, oldest=T0), Views(OSError("gone")), Projector(), Hub(), None)
    read = _read(readings)
    assert ("thirteen_projection_lag_events", ()) not in read
    assert read["thirteen_watch_streams_open", ()] == 3
    assert not any(name.startswith("thirteen_log_") for name, _ in read)  # no transparency log


class Waiting(Views):
    """Views whose position is read only once ``answer`` is set (a store that hangs)."""

    def __init__(self) -> None:
        super().__init__(4)
        self.answer = threading.Event()

    def position(self) -> int:
        self.answer.wait()
        return super().position()


class Counting(Views):
    """Views that note the thread each read of their position ran on."""

    def __init__(self) -> None:
        super().__init__(4)
        self.threads: list[int] = []

    def position(self) -> int:
        self.threads.append(threading.get_ident())
        return super().position()


def test_the_store_is_read_on_one_thread_of_its_own_whichever_thread_scrapes() -> None:
    """The views keep a connection per thread that reads them, as long as they are open: a
    scrape on a thread of its own must not open one more each time."""
    views = Counting()
    readings = Readings(Log(head=4, oldest=T0), views, Projector(), Hub(), None)
    scrapers = [threading.Thread(target=_read, args=(readings,)) for _ in range(3)]
    for scraper in scrapers:
        scraper.start()
    for scraper in scrapers:
        scraper.join()
    _read(readings)
    readings.close()
    assert len(views.threads) == 4
    assert len(set(views.threads)) == 1
    assert views.threads[0] not in {threading.get_ident(), *(s.ident for s in scrapers)}


def test_a_store_reading_that_does_not_answer_in_time_is_left_out_of_the_scrape() -> None:
    views = Waiting()
    readings = Readings(Log(head=4, oldest=T0), views, Projector(), Hub(), None, timeout=0.01)
    try:
        read = _read(readings)
        assert ("thirteen_projection_lag_events", ()) not in read
        assert read["thirteen_watch_streams_open", ()] == 3  # the others are answered
    finally:
        views.answer.set()  # the store answers at last: the next scrape has the lag again
    readings.timeout = 30
    assert _read(readings)["thirteen_projection_lag_events", ()] == 0
    readings.close()


def test_closed_readings_read_the_store_no_more() -> None:
    views = Counting()
    readings = Readings(Log(head=4, oldest=T0), views, Projector(), Hub(), None)
    readings.close()
    read = _read(readings)
    assert ("thirteen_projection_lag_events", ()) not in read
    assert views.threads == []


class App:
    """What ``Metrics.attach`` hooks into: the commit listeners and the writer's hook."""

    def __init__(self) -> None:
        self.listeners: list[Any] = [print]
        self.writer = type("Writer", (), {"on_commit": None})()


def test_closed_metrics_stop_counting_the_commits_of_an_application_that_lives_on() -> None:
    app = App()
    metrics = Metrics()
    parts: Any = {"views": Views(0), "projector": Projector(), "hub": Hub()}
    # App is a fake with only the listeners and writer that attach hooks into.
    metrics.attach(app, transparency=None, **parts)  # type: ignore[arg-type]
    assert app.listeners == [print, metrics.commits.committed]
    assert app.writer.on_commit == metrics.commits.batch
    metrics.close()
    assert app.listeners == [print]
    assert app.writer.on_commit is None
    metrics.close()  # again: nothing


# The endpoint's address -----------------------------------------------------------------------


@pytest.mark.parametrize("address", ["9464", ":9464", "host:", "host:port", "host:70000", "[::1]"])
def test_an_address_that_is_not_host_and_port_is_refused(address: str) -> None:
    with pytest.raises(EndpointError, match="HOST:PORT"):
        split_address(address)


def test_an_ipv6_host_is_given_in_brackets() -> None:
    assert split_address("[::1]:9464") == ("::1", 9464)
    assert split_address("0.0.0.0:0") == ("0.0.0.0", 0)


def test_a_server_s_metrics_listen_on_an_ephemeral_port_until_closed() -> None:
    metrics = Metrics()
    address = metrics.listen("127.0.0.1:0")
    assert address.startswith("127.0.0.1:") and not address.endswith(":0")
    assert metrics.address == address
    metrics.close()
    metrics.close()  # again: nothing
