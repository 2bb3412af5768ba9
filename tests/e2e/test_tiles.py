"""The transparency log served as C2SP ``tlog-tiles`` by a real ``thirteen serve --tiles``
(issue 24), on SQLite and PostgreSQL: a mirror that reads nothing but the HTTP checkpoint and
tiles (``tests.support.tiles_mirror``) verifies every leaf and every checkpoint of a log written
by concurrent rounds while it polls; the checkpoint is the one ``GetCheckpoint`` serves, with
its cosignatures; hostile paths are refused with 4xx and no traceback."""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from domain.tlog.tiles import WIDTH, Tile, decode_bundle
from service._generated.thirteen.v1 import transparency_pb2
from service.transparency.keys import read_signer
from tests.e2e.helpers import (
    arrange_well,
    deal,
    hands_of,
    reveal,
    seated_table,
    showdowns,
    wait_until,
)
from tests.e2e.test_metrics import half_requests
from tests.support.serve_process import ServeProcess
from tests.support.tiles_mirror import IMMUTABLE, TilesMirror
from tests.support.tlog import Head, Witness

WITNESS = Witness("witness.test/tiles", bytes(range(32)))
TABLES = 4  # tables played at once, one client thread each
ROUNDS = 60  # rounds a table: about 2,900 events in all
BANNER = "thirteen: serving the log's tiles on "


@pytest.fixture
def served(store: dict[str, str], tmp_path: Path) -> Iterator[tuple[ServeProcess, str]]:
    process = ServeProcess(
        tmp_path / "data",
        "--tiles",
        "127.0.0.1:0",
        "--checkpoint-interval",
        "0.2",
        "--witness-key",
        WITNESS.vkey,
        environ=store,
    )
    try:
        line = wait_until(
            lambda: next((x for x in process.lines if x.startswith(BANNER)), None),
            "the tiles' address",
            30,
        )
        yield process, line[len(BANNER) :].strip().rstrip("/")
    finally:
        process.stop()


def log_key(process: ServeProcess) -> str:
    """The log's public key (all the mirror is given), from the key file the server signs with."""
    return read_signer(process.data / "log.key").verifier.vkey


def fetch(url: str, method: str = "GET", **headers: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def caught_up(process: ServeProcess, mirror: TilesMirror) -> Head:
    """The mirror's checkpoint once it holds every event the store holds."""

    def check() -> Head | None:
        if fetch(f"{mirror.base}/checkpoint")[0] != 200:
            return None  # none signed yet
        checkpoint = mirror.poll()
        return checkpoint if checkpoint.size == process.stored_events() else None

    return wait_until(check, "a checkpoint of every stored event", 60)


def play(process: ServeProcess, table: int, failures: list[BaseException]) -> None:
    try:
        players = {f"p{table}{seat}": 1_000_000 for seat in "abc"}
        seated_table(process, f"t{table}", players)
        showdowns(process, f"t{table}", ROUNDS)
    except BaseException as error:  # told to the test, which fails with it
        failures.append(error)


def test_a_tiles_only_mirror_verifies_every_leaf_and_checkpoint_of_a_log_written_under_load(
    served: tuple[ServeProcess, str],
) -> None:
    process, base = served
    mirror = TilesMirror(base, log_key(process))
    failures: list[BaseException] = []
    players = [
        threading.Thread(target=play, args=(process, table, failures)) for table in range(TABLES)
    ]
    for thread in players:
        thread.start()
    wait_until(lambda: fetch(f"{base}/checkpoint")[0] == 200, "a first checkpoint", 30)
    while any(thread.is_alive() for thread in players):
        mirror.poll()  # while the rounds are written
        time.sleep(0.5)
    for thread in players:
        thread.join()
    assert not failures, failures
    stored = caught_up(process, mirror).size

    print(
        f"{stored} events, {len(mirror.checkpoints)} checkpoints, {mirror.requests} requests, "
        f"{mirror.withheld} bundles withheld for a while, "
        f"largest entry {max(map(len, mirror.entries))} bytes"
    )
    sizes = [checkpoint.size for checkpoint in mirror.checkpoints]
    assert len(sizes) >= 4 and sizes == sorted(set(sizes)), sizes  # polled while it grew
    assert mirror.consistency_checked == len(sizes) - 1
    assert mirror.missing() == 0  # every round is over: every entry served, and checked
    assert len(mirror.entries) == len(mirror.leaves) == stored > 10 * WIDTH
    # Each entry is an event's canonical form (the bytes its chain link hashes), each event once.
    events = [json.loads(entry) for entry in mirror.entries]
    assert {tuple(sorted(event)) for event in events} == {("state", "stream", "topic", "version")}
    assert len({(e["stream"], e["version"]) for e in events}) == stored
    assert not any("chain" in e["state"] for e in events)
    # Served again from the cache, a full tile is the same bytes.
    assert mirror.fetched(Tile(0, 1).path)[0] == b"".join(mirror.tiles[(0, 1)])


def test_the_checkpoint_is_get_checkpoints_with_its_cosignatures(
    served: tuple[ServeProcess, str],
) -> None:
    process, base = served
    seated_table(process, "t1", {"ann": 5000, "bo": 5000})
    mirror = TilesMirror(base, log_key(process))
    checkpoint = caught_up(process, mirror)
    line = WITNESS.cosign(checkpoint.text, int(time.time()))
    served_text = fetch(f"{base}/checkpoint")[2].decode()
    request = transparency_pb2.AddCosignatureRequest(checkpoint_cosignature=served_text + line)
    process.transparency.AddCosignature(request)

    def cosigned() -> str | None:
        status, headers, body = fetch(f"{base}/checkpoint")
        assert status == 200 and headers["Cache-Control"] == "no-cache"
        assert headers["Content-Type"] == "text/plain; charset=utf-8"
        return body.decode() if line in body.decode() else None

    text = wait_until(cosigned, "the cosignature on /checkpoint", 10)
    grpc_text = process.transparency.GetCheckpoint(transparency_pb2.GetCheckpointRequest())
    assert text == grpc_text.checkpoint == served_text + line
    cosigned_head = mirror.poll()  # a cosigned checkpoint is still the log's
    assert (cosigned_head.size, cosigned_head.root) == (checkpoint.size, checkpoint.root)


def test_tiles_beyond_the_checkpoint_are_404_and_bundles_are_gzipped_on_request(
    served: tuple[ServeProcess, str],
) -> None:
    process, base = served
    seated_table(process, "t1", {"ann": 5000, "bo": 5000})
    mirror = TilesMirror(base, log_key(process))
    size = caught_up(process, mirror).size
    assert 0 < size < WIDTH
    status, headers, body = fetch(f"{base}/tile/0/000.p/{size}", method="HEAD")
    assert (status, headers["Cache-Control"], body) == (200, IMMUTABLE, b"")
    assert headers["Content-Length"] == str(32 * size)
    for beyond in (f"tile/0/000.p/{size + 1}", "tile/0/000", "tile/1/000.p/1", "tile/0/001.p/1"):
        assert fetch(f"{base}/{beyond}")[0] == 404, beyond
    status, headers, body = fetch(
        f"{base}/tile/entries/000.p/{size}", **{"Accept-Encoding": "gzip"}
    )
    assert (status, headers["Content-Encoding"], headers["Vary"]) == (
        200,
        "gzip",
        "Accept-Encoding",
    )
    assert decode_bundle(gzip.decompress(body)) == mirror.entries[:size]
    assert fetch(f"{base}/tile/entries/000.p/{size}")[2] == gzip.decompress(body)


def test_r10_4_a_bundle_holding_a_round_in_progress_is_withheld_until_the_round_is_over(
    served: tuple[ServeProcess, str],
) -> None:
    """R10.4, R12.1: a deal's event holds every hand; the bundle that holds it is not served
    while the round is in progress (its leaf hashes are), and is once it is over."""
    process, base = served
    seated_table(process, "t1", {"ann": 5000, "bo": 5000})
    dealt = deal(process, "t1")
    mirror = TilesMirror(base, log_key(process))
    size = caught_up(process, mirror).size
    status, _, body = fetch(f"{base}/tile/entries/000.p/{size}")
    assert status == 404 and b"withheld" in body and dealt.round_id.encode() not in body
    assert fetch(f"{base}/tile/0/000.p/{size}")[0] == 200
    # The mirror may have polled a checkpoint from before the deal (the seating only), whose
    # bundle it holds: what it lacks is the newest entries, the deal's among them.
    assert 0 < mirror.missing() <= size and mirror.withheld >= 1
    hands = [card for hand in hands_of(dealt).values() for card in hand]
    arrange_well(process, dealt)
    reveal(process, dealt.round_id)
    caught_up(process, mirror)
    assert mirror.missing() == 0
    dealt_event = next(
        json.loads(e)
        for e in mirror.entries
        if json.loads(e)["version"] == 1 and json.loads(e)["topic"].endswith("Round.Dealt")
    )
    assert sorted(c for hand in dealt_event["state"]["hands"].values() for c in hand) == sorted(
        hands
    )


def test_idle_connections_and_a_flood_of_tile_requests_leave_tiles_and_grpc_answered(
    served: tuple[ServeProcess, str],
) -> None:
    """200 connections holding half a request open, and four clients asking for uncached
    partial bundles and tiles as fast as they can: every other request is still answered, and
    rounds are still played over gRPC meanwhile (the tiles are read on threads of their own)."""
    process, base = served
    seated_table(process, "t1", {"ann": 500_000, "bo": 500_000})
    showdowns(process, "t1", 3)
    mirror = TilesMirror(base, log_key(process))
    size = caught_up(process, mirror).size
    idle = half_requests(base.removeprefix("http://"), 200)
    stop = threading.Event()
    answered: list[int] = []

    def flood(kind: str) -> None:
        width = 0
        while not stop.is_set():
            width = width % (size - 1) + 1  # a new width each time: nothing cached for long
            answered.append(fetch(f"{base}/tile/{kind}/000.p/{width}")[0])

    flooding = [threading.Thread(target=flood, args=(k,)) for k in ("entries", "0") * 2]
    for thread in flooding:
        thread.start()
    try:
        started = time.monotonic()
        showdowns(process, "t1", 5)
        played = time.monotonic() - started
        assert mirror.poll().size >= size
    finally:
        stop.set()
        for thread in flooding:
            thread.join()
        for connection in idle:
            connection.close()
    print(f"5 rounds in {played:.2f} s beside {len(answered)} tile and bundle requests")
    assert played < 30, played
    assert len(answered) > 50 and set(answered) == {200}, set(answered)


HOSTILE = [
    "/tile/0/x999/x999/x999/x999/x999/x999/999",  # far beyond any tree
    "/tile/0/x009/x223/x372/x036/x854/x775/807",  # the largest index a tile may have
    "/tile/0/../../../etc/passwd",
    "/tile/0/%2e%2e/000",
    "/tile/0/abc",
    "/tile/zero/000",
    "/tile/0/000.p/0",
    "/tile/0/000.p/256",
    "/tile/0/000.p/-1",
    "/tile/entries/000.p/0",
    "/tile/64/000",
    "/tile/0/" + "x000/" * 2000 + "000",
    "/checkpoint/../tile/0/000",
    "/",
    "/favicon.ico",
]


def raw(base: str, request: bytes) -> bytes:
    host, port = base.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


def test_hostile_requests_are_refused_with_4xx_and_the_endpoint_serves_on(
    served: tuple[ServeProcess, str],
) -> None:
    process, base = served
    seated_table(process, "t1", {"ann": 5000, "bo": 5000})
    wait_until(lambda: fetch(f"{base}/checkpoint")[0] == 200, "a first checkpoint", 30)
    for path in HOSTILE:
        answer = raw(base, f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        status = int(answer.split(b" ", 2)[1])
        assert 400 <= status < 500, (path, answer[:200])
    for method in ("POST", "PUT", "DELETE"):
        answer = raw(base, f"{method} /checkpoint HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 405 ") and b"Allow: GET, HEAD" in answer
    assert raw(base, b"NOT HTTP AT ALL\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    assert fetch(f"{base}/checkpoint")[0] == 200
    assert not any("Traceback" in line for line in process.lines)
