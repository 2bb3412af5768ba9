"""WatchTable under clients that stop reading: a stream queues a bounded number of messages,
then ends with RESOURCE_EXHAUSTED and the position to resume after; nothing else waits on it.

The slow clients here use a channel with a 1 KiB HTTP/2 window (no BDP probing), so the
server's writes to them block after a message or two, as they would for any client that stops
reading once its window is full."""

from __future__ import annotations

import re
import threading
from typing import Any

import grpc

from service._generated.thirteen.v1 import table_pb2, table_pb2_grpc
from service.rpc.watch import WatchHub
from tests.e2e.helpers import (
    WAIT,
    balance,
    credit,
    events,
    of_type,
    open_table,
    read_until,
    sit,
    stand,
    wait_until,
    watch,
)
from tests.support.server import ServerThread

SMALL_WINDOW = [("grpc.http2.bdp_probe", 0), ("grpc.http2.lookahead_bytes", 1024)]


def hub_of(server: ServerThread) -> WatchHub:
    """The server's stream hub (the e2e server runs in this process)."""
    return server.running.hub


def slow_watch(server: ServerThread, table_id: str) -> tuple[grpc.Channel, Any]:
    channel = grpc.insecure_channel(server.address, options=SMALL_WINDOW)
    stub = table_pb2_grpc.TableServiceStub(channel)
    request = table_pb2.WatchTableRequest(table_id=table_id)
    return channel, stub.WatchTable(request, timeout=WAIT * 3)


def read_to_the_end(stream: Any) -> tuple[list[Any], grpc.RpcError]:
    seen: list[Any] = []
    try:
        for message in stream:
            seen.append(message)
    except grpc.RpcError as error:
        return seen, error
    raise AssertionError(f"the stream ended without a status after {len(seen)} messages")


def test_a_stream_whose_client_stops_reading_ends_with_resource_exhausted_and_resumes(
    server: ServerThread,
) -> None:
    """table.proto WatchTable: a client that leaves more than the stream's queue unread is cut
    off with RESOURCE_EXHAUSTED naming the position to resume after; resuming there gives
    exactly the rest. Meanwhile a reading stream on the same table misses nothing and unary
    calls are answered."""
    credit(server, "A", 1000, "start-A")
    credit(server, "Z", 1000, "start-Z")
    open_table(server, "t")
    hub = hub_of(server)
    channel, slow = slow_watch(server, "t")
    reader = watch(server, "t")
    try:
        first = read_until(slow, of_type("TableOpened"))
        read = read_until(reader, of_type("TableOpened"))
        wait_until(lambda: hub.streams(live=True) == 2, "both streams to catch up")
        done = of_type("PlayerSatDown", "Z")
        reading = threading.Thread(target=lambda: read.extend(read_until(reader, done)))
        reading.start()

        pairs = 0  # each sit and stand is two events of the table
        while hub.streams() == 2:
            assert pairs < hub.queue_limit, "the slow stream still open after 2 x its queue"
            sit(server, "t", "A")
            stand(server, "t", "A")
            pairs += 1
        assert balance(server, "A") == 1000  # unary calls answered while it is stuck
        sit(server, "t", "Z")
        reading.join(timeout=WAIT * 3)
        assert not reading.is_alive()

        seen, error = read_to_the_end(slow)
    finally:
        slow.cancel()
        reader.cancel()
        channel.close()
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, error.details()
    resume = re.search(r"resume with after=(\d+)", error.details() or "")
    assert resume, error.details()
    after = int(resume.group(1))
    assert seen and after >= seen[-1].position
    rest = events(server, "t", done, after=after)
    assert [m.position for m in first + seen + rest] == [m.position for m in read]
    assert first + seen + rest == read


def test_a_stream_that_stops_reading_while_catching_up_loses_nothing(server: ServerThread) -> None:
    """table.proto WatchTable: live events that overflow the queue of a stream still catching
    up from the store are not lost (the store holds them) and do not end the stream: once the
    client reads again it gets every event, in order, exactly once."""
    credit(server, "A", 1000, "start-A")
    credit(server, "Z", 1000, "start-Z")
    open_table(server, "t")
    for _ in range(20):  # a history longer than the slow client's window
        sit(server, "t", "A")
        stand(server, "t", "A")
    hub = hub_of(server)
    hub.queue_limit = 8  # streams opened from now on
    channel, slow = slow_watch(server, "t")
    try:
        wait_until(lambda: hub.streams() == 1, "the stream to open")
        for _ in range(2 * hub.queue_limit):  # live events past its queue while it is stuck
            sit(server, "t", "A")
            stand(server, "t", "A")
        assert hub.streams(live=True) == 0, "the slow stream caught up through a 1 KiB window"
        sit(server, "t", "Z")
        done = of_type("PlayerSatDown", "Z")
        got = read_until(slow, done)
    finally:
        slow.cancel()
        channel.close()
    assert got == events(server, "t", done)
