"""Prometheus metrics (issue 13) scraped over HTTP from a real server after real rounds, on both
stores: every figure is checked against what the test did through the API."""

from __future__ import annotations

import contextlib
import socket
import threading
import urllib.request
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import grpc
import pytest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from domain.rules.cards import Card
from domain.rules.specials import SPLIT_PATTERNS, Special, qualifies
from service import http_server as endpoint
from service._generated.thirteen.v1 import table_pb2, transparency_pb2, wallet_pb2
from service.metrics import Metrics
from tests.e2e.helpers import (
    PHASE,
    arrange,
    arrange_well,
    client_seed_for,
    credit,
    deal,
    foul_piles,
    get_round,
    good_piles,
    hands_of,
    refusal_of,
    reveal,
    seated_table,
    stand,
    wait_for_phase,
    wait_until,
    watch,
)
from tests.support.clock import ManualClock
from tests.support.server import ServerThread
from tests.support.stores import store_environ

TABLE = "thirteen.v1.TableService"
CHEAP = [s for s in Special if s not in SPLIT_PATTERNS]  # quick to check on many deals

Scraped = dict[str, dict[frozenset[tuple[str, str]], float]]


@pytest.fixture
def metered(store: dict[str, str], tmp_path: Path, clock: ManualClock) -> Iterator[ServerThread]:
    running = ServerThread(tmp_path / "data", store, clock, metrics=True)
    yield running
    running.stop()


def scrape(server: ServerThread) -> Scraped:
    """Every sample of the endpoint, by sample name and labels, parsed as Prometheus does."""
    with urllib.request.urlopen(server.metrics_url, timeout=10) as answer:
        assert answer.headers["Content-Type"].startswith("text/plain")
        text = answer.read().decode()
    samples: Scraped = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[frozenset(sample.labels.items())] = sample.value
    return samples


def value(scraped: Scraped, name: str, **labels: str) -> float | None:
    """A sample's value; None when the endpoint has no such series."""
    return scraped.get(name, {}).get(frozenset(labels.items()))


def number(scraped: Scraped, name: str, **labels: str) -> float:
    """A sample's value, of a series the endpoint must have."""
    found = value(scraped, name, **labels)
    assert found is not None, f"no series {name} {labels}"
    return found


def calls(scraped: Scraped, method: str, code: str, service: str = TABLE) -> float | None:
    return value(scraped, "thirteen_rpc_requests_total", service=service, method=method, code=code)


def settled(players: Iterable[table_pb2.PlayerResult]) -> int:
    """Coins the winners of a round received (R9)."""
    return sum(p.coins for p in players if p.coins > 0)


def test_a_scrape_after_a_few_rounds_counts_each_round_call_and_commit_once(
    metered: ServerThread, clock: ManualClock
) -> None:
    server = metered
    # Round 1: A declares a special (R5.4), the others arrange; revealed by a call.
    seated_table(server, "t1", {"A": 1000, "B": 1000, "C": 1000})
    seed = client_seed_for(server, "t1", "r1", 3, lambda hands: _cheap_special(hands[0]))
    first = deal(server, "t1", client_seed=seed, request_id="r1")
    declared = arrange(server, first.round_id, "A", special="any").special
    arrange_well(server, first, ["B", "C"])
    coins = settled(reveal(server, first.round_id).players)
    # Round 2: C's arrangement is a foul (R4.3), so a reveal before the deadline is refused
    # (R10.3) and the sweeper reveals it at the deadline, C foul.
    second = deal(server, "t1", request_id="r2")
    arrange_well(server, second, ["A", "B"])
    assert arrange(server, second.round_id, "C", foul_piles(hands_of(second)["C"])).foul
    refused = refusal_of(server.tables.Reveal, table_pb2.RevealRequest(round_id=second.round_id))
    assert refused.code == grpc.StatusCode.FAILED_PRECONDITION
    clock.advance(61)
    coins += settled(
        wait_for_phase(server, second.round_id, PHASE.ROUND_PHASE_REVEALED).result.players
    )
    # Round 3: at a table of two, D escapes (R11), which abandons the round (R11.3).
    seated_table(server, "t2", {"D": 1000, "E": 1000})
    third = deal(server, "t2", request_id="r3")
    assert stand(server, "t2", "D").escaped
    assert get_round(server, third.round_id).phase == PHASE.ROUND_PHASE_ABANDONED
    # Refused before any servicer: a malformed amount, and a method nobody serves.
    bad = wallet_pb2.CreditRequest(player_id="A", amount=0, transfer_id="zero")
    assert refusal_of(server.wallets.Credit, bad).code == grpc.StatusCode.INVALID_ARGUMENT
    nobody: grpc.UnaryUnaryMultiCallable[bytes, bytes]
    nobody = server.channel.unary_unary(f"/{TABLE}/NoSuchMethod")
    with pytest.raises(grpc.RpcError) as unknown:
        nobody(b"")
    assert unknown.value.code() == grpc.StatusCode.UNIMPLEMENTED

    scraped = scrape(server)
    assert value(scraped, "thirteen_rounds_dealt_total") == 3
    assert value(scraped, "thirteen_rounds_revealed_total", trigger="call") == 1
    assert value(scraped, "thirteen_rounds_revealed_total", trigger="deadline") == 1
    assert value(scraped, "thirteen_rounds_abandoned_total") == 1
    assert value(scraped, "thirteen_fouls_total") == 1
    assert value(scraped, "thirteen_escapes_total") == 1
    specials = {
        dict(k)["special"]: v for k, v in scraped["thirteen_specials_declared_total"].items()
    }
    assert specials == {s.id: (1 if s.id == declared else 0) for s in Special}
    assert coins > 0
    assert value(scraped, "thirteen_coins_settled_total") == coins

    assert calls(scraped, "Deal", "OK") == 3
    assert calls(scraped, "Arrange", "OK") == 6
    assert calls(scraped, "Reveal", "OK") == 1
    assert calls(scraped, "Reveal", "FAILED_PRECONDITION") == 1
    assert calls(scraped, "StandUp", "OK") == 1
    assert calls(scraped, "Credit", "INVALID_ARGUMENT", "thirteen.v1.WalletService") == 1
    assert calls(scraped, "unknown", "UNIMPLEMENTED", "unknown") == 1
    latency = "thirteen_rpc_duration_seconds_count"
    assert value(scraped, latency, service=TABLE, method="Reveal") == 2
    assert value(scraped, latency, service=TABLE, method="Deal") == 3
    assert (
        value(
            scraped, "thirteen_rpc_duration_seconds_bucket", service=TABLE, method="Deal", le="+Inf"
        )
        == 3
    )

    # One batch per command here: the test sends one command at a time.
    batches = server.app.writer.batches
    assert value(scraped, "thirteen_commit_batch_commands_count") == batches
    assert value(scraped, "thirteen_commit_batch_commands_sum") == batches
    assert value(scraped, "thirteen_commit_duration_seconds_count") == batches


def test_the_log_and_the_views_are_reported_as_they_catch_up(metered: ServerThread) -> None:
    server = metered
    seated_table(server, "t", {"A": 500, "B": 500})
    dealt = deal(server, "t", request_id="r")
    arrange_well(server, dealt)
    reveal(server, dealt.round_id)

    def caught_up() -> Scraped | None:
        scraped = scrape(server)
        events = value(scraped, "thirteen_events_committed_total")
        sizes = [
            value(scraped, "thirteen_log_tree_size_leaves"),
            value(scraped, "thirteen_log_checkpoint_size_leaves"),
        ]
        lagging = value(scraped, "thirteen_projection_lag_events")
        return scraped if sizes == [events, events] and lagging == 0 else None

    scraped = wait_until(caught_up, "the log and the views to take in every event")
    note = server.transparency.GetCheckpoint(transparency_pb2.GetCheckpointRequest()).checkpoint
    size = int(note.split("\n")[1])  # origin, tree size, root (C2SP tlog-checkpoint)
    assert value(scraped, "thirteen_log_checkpoint_size_leaves") == size
    assert value(scraped, "thirteen_projection_lag_seconds") == 0
    assert value(scraped, "thirteen_projection_failures_total", cause="event") == 0
    assert value(scraped, "thirteen_projection_failures_total", cause="database") == 0


def test_projection_lag_counts_the_events_the_views_have_not_taken_in(
    metered: ServerThread,
) -> None:
    server = metered
    credit(server, "A", 100, "first")
    wait_until(lambda: value(scrape(server), "thirteen_projection_lag_events") == 0, "the views")
    server.running.projector.stop()  # the views stop here
    before = number(scrape(server), "thirteen_events_committed_total")
    credit(server, "A", 100, "second")
    scraped = scrape(server)
    stored = number(scraped, "thirteen_events_committed_total") - before
    assert stored > 0
    assert value(scraped, "thirteen_projection_lag_events") == stored
    assert 0 < number(scraped, "thirteen_projection_lag_seconds") < 60


def test_open_streams_are_gauged_and_counted_when_they_end(metered: ServerThread) -> None:
    server = metered
    seated_table(server, "t", {"A": 500, "B": 500})
    stream = watch(server, "t")
    next(stream)  # the server is streaming
    assert value(scrape(server), "thirteen_watch_streams_open") == 1
    stream.cancel()

    def ended() -> Scraped | None:
        scraped = scrape(server)
        return scraped if calls(scraped, "WatchTable", "CANCELLED") == 1 else None

    scraped = wait_until(ended, "the cancelled stream to be counted")
    assert value(scraped, "thirteen_watch_streams_open") == 0
    assert (
        value(scraped, "thirteen_rpc_duration_seconds_count", service=TABLE, method="WatchTable")
        is None
    )


def test_the_endpoint_closes_with_the_server(
    store: dict[str, str], tmp_path: Path, clock: ManualClock
) -> None:
    server = ServerThread(tmp_path / "data", store, clock, metrics=True)
    assert value(scrape(server), "thirteen_watch_streams_open") == 0
    server.stop()
    with pytest.raises(OSError):
        urllib.request.urlopen(server.metrics_url, timeout=5)


def test_two_servers_in_one_process_keep_their_figures_apart(
    store: dict[str, str], tmp_path: Path, clock: ManualClock
) -> None:
    one = ServerThread(tmp_path / "one", store, clock, metrics=True)
    other = ServerThread(tmp_path / "two", {"THIRTEEN_STORE": "sqlite"}, clock, metrics=True)
    try:
        credit(one, "A", 100, "only-here")
        assert calls(scrape(one), "Credit", "OK", "thirteen.v1.WalletService") == 1
        assert calls(scrape(other), "Credit", "OK", "thirteen.v1.WalletService") is None
    finally:
        one.stop()
        other.stop()


def _cheap_special(hand: Sequence[Card]) -> bool:
    return any(qualifies(s, hand) for s in CHEAP)


def test_r5_4_a_special_hand_arranged_in_piles_counts_no_special(metered: ServerThread) -> None:
    """Undeclared, a special hand is played normally (R5.4): no special is counted."""
    server = metered
    seated_table(server, "t", {"A": 500, "B": 500})
    seed = client_seed_for(server, "t", "r", 2, lambda hands: _cheap_special(hands[0]))
    dealt = deal(server, "t", client_seed=seed, request_id="r")
    arrange(server, dealt.round_id, "A", good_piles(hands_of(dealt)["A"]))
    arrange_well(server, dealt, ["B"])
    reveal(server, dealt.round_id)
    specials = scrape(server)["thirteen_specials_declared_total"]
    assert set(specials.values()) == {0}


def test_postgresql_replicas_each_count_what_they_commit_and_together_each_round_once(
    tmp_path: Path,
) -> None:
    """Each replica's follower sees every replica's events; only the committing one counts."""
    with store_environ("postgres", tmp_path) as environ:
        clock = ManualClock()
        replicas = [ServerThread(tmp_path / "data", environ, clock, metrics=True) for _ in "ab"]
        try:
            seated_table(replicas[0], "t", {"A": 1000, "B": 1000})
            for n in range(3):  # dealt and arranged on one replica, revealed on the other
                dealer, revealer = replicas[n % 2], replicas[(n + 1) % 2]
                dealt = deal(dealer, "t", request_id=f"r{n}")
                arrange_well(dealer, dealt)
                reveal(revealer, dealt.round_id)

            def agreed() -> list[Scraped] | None:
                scraped = [scrape(replica) for replica in replicas]
                events = sum(value(s, "thirteen_events_committed_total") or 0 for s in scraped)
                trees = {value(s, "thirteen_log_tree_size_leaves") for s in scraped}
                lags = {value(s, "thirteen_projection_lag_events") for s in scraped}
                return scraped if trees == {events} and lags == {0} else None

            scraped = wait_until(agreed, "both replicas to report the whole shared log")
            dealt_by = [value(s, "thirteen_rounds_dealt_total") for s in scraped]
            revealed_by = [
                value(s, "thirteen_rounds_revealed_total", trigger="call") for s in scraped
            ]
            assert dealt_by == [2, 1]
            assert revealed_by == [1, 2]
        finally:
            for replica in replicas:
                replica.stop()


# The endpoint against clients that do not behave --------------------------------------------


class Trickle:
    """A client that sends its request a byte at a time, every ``pause`` seconds, until told to
    stop or cut off; ``cut`` is set when the endpoint ended the connection."""

    def __init__(self, address: str, pause: float = 0.05) -> None:
        host, port = address.rsplit(":", 1)
        self.socket = socket.create_connection((host, int(port)), timeout=30)
        self.stop = threading.Event()
        self.cut = threading.Event()
        self.pause = pause
        self.thread = threading.Thread(target=self._send, daemon=True)
        self.thread.start()

    def _send(self) -> None:
        request = b"GET /metrics HTTP/1.1\r\nX-Slow: " + b"a" * 100_000
        for byte in request:
            if self.stop.wait(self.pause):
                return
            try:
                self.socket.send(bytes([byte]))
            except OSError:  # reset or broken pipe: the endpoint closed it
                self.cut.set()
                return

    def ended_by_the_endpoint(self) -> bool:
        """Whether the endpoint closes the connection before the client stops (30 s at most)."""
        try:
            return self.socket.recv(1024) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        self.socket.close()


def test_a_client_that_trickles_its_request_stalls_no_other_scrape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(endpoint, "DEADLINE", 600.0)  # the slow client is not cut off here
    monkeypatch.setattr(endpoint, "HEADER_TIMEOUT", 600.0)
    metrics = Metrics()
    address = metrics.listen("127.0.0.1:0")
    slow = Trickle(address)
    try:
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=30) as answer:
            assert answer.status == 200
        assert slow.thread.is_alive() and not slow.cut.is_set()  # still sending meanwhile
    finally:
        slow.close()
        metrics.close()


def test_a_connection_is_cut_off_at_its_header_timeout_however_it_trickles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(endpoint, "HEADER_TIMEOUT", 0.2)
    metrics = Metrics()
    slow = Trickle(metrics.listen("127.0.0.1:0"))
    try:
        assert slow.ended_by_the_endpoint()
    finally:
        slow.close()
        metrics.close()


def half_requests(address: str, count: int) -> list[socket.socket]:
    """``count`` connections that each send the start of a request and then nothing more."""
    host, port = address.rsplit(":", 1)
    held = []
    for _ in range(count):
        connection = socket.create_connection((host, int(port)), timeout=30)
        connection.sendall(b"GET /metrics HTTP/1.1\r\nHost: prometheus\r\n")  # no blank line
        held.append(connection)
    return held


def scraped_ok(address: str) -> bool:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=30) as answer:
        return bool(answer.status == 200) and b"thirteen_" in answer.read()


def test_200_idle_half_requests_held_open_stall_no_scrape(metered: ServerThread) -> None:
    """Issue 22, finding 2: clients that hold connections open with half a request do not use
    up the endpoint; every scrape beside them is answered."""
    address = metered.metrics_url.split("/")[2]
    idle = half_requests(address, 200)
    try:
        assert all(scraped_ok(address) for _ in range(20))
    finally:
        for connection in idle:
            connection.close()


def test_past_the_cap_of_waiting_connections_the_oldest_is_closed_not_the_new_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(endpoint, "MAX_WAITING", 10)
    metrics = Metrics()
    metrics.registry.register(_Constant())
    address = metrics.listen("127.0.0.1:0")
    oldest = half_requests(address, 10)
    newer = half_requests(address, 10)
    try:
        assert scraped_ok(address)
        for connection in oldest:  # each made room for a newer one
            with contextlib.suppress(ConnectionResetError):
                assert connection.recv(1024) == b""
        newest = newer[-1]
        newest.setblocking(False)
        with pytest.raises(BlockingIOError):  # still open, waiting for the rest of its request
            newest.recv(1024)
    finally:
        for connection in oldest + newer:
            connection.close()
        metrics.close()


class _Constant:
    """One sample, so that a scrape of a bare registry has something of ours."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily("thirteen_test", "a constant", value=1)


def test_a_stream_its_deadline_ends_is_counted_deadline_exceeded_not_cancelled(
    metered: ServerThread,
) -> None:
    """What ``code_of`` reads of a real call's context when grpc ends it at its deadline."""
    server = metered
    seated_table(server, "t", {"A": 500, "B": 500})
    stream = watch(server, "t", timeout=1.0)
    next(stream)  # the server is streaming; nothing more comes before the deadline
    with pytest.raises(grpc.RpcError) as ended:
        for _ in stream:
            pass
    assert ended.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED

    def counted() -> Scraped | None:
        scraped = scrape(server)
        return scraped if calls(scraped, "WatchTable", "DEADLINE_EXCEEDED") == 1 else None

    scraped = wait_until(counted, "the stream its deadline ended to be counted")
    assert calls(scraped, "WatchTable", "CANCELLED") is None
    assert value(scraped, "thirteen_watch_streams_open") == 0
