"""Issue 24 attacked from outside, with real processes: what landed (``thirteen witness
--listen``, ``serve --witness-url``, ``serve --tiles``) against hostile witnesses and clients.
Each test failed on the code as it was found."""

from __future__ import annotations

import gzip
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from domain.tlog.tiles import decode_bundle
from tests.e2e.helpers import seated_table, wait_until
from tests.e2e.test_tiles import (
    caught_up,
    fetch,
    log_key,
    served,  # noqa: F401 (a fixture)
)
from tests.e2e.test_transparency import PLAYERS, SCRIPT, checkpoint, play_round
from tests.e2e.test_witness import Setup, cosigned_at, settled_head
from tests.e2e.test_witness_http import (
    HttpWitness,
    request,
    running,  # noqa: F401 (a fixture)
    setup,  # noqa: F401 (a fixture)
)
from tests.support.serve_process import ServeProcess
from tests.support.tiles_mirror import TilesMirror


class TricklingWitness:
    """A hostile witness: it accepts a connection, reads the request, then answers a status
    line and one byte of a header every half second, forever (each byte well within any
    per-read timeout)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.stopped = threading.Event()
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._trickle, args=(connection,), daemon=True).start()

    def _trickle(self, connection: socket.socket) -> None:
        with connection:
            try:
                connection.recv(65536)
                connection.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                while not self.stopped.wait(0.5):
                    connection.sendall(b"a")
            except OSError:
                return

    def stop(self) -> None:
        self.stopped.set()
        self.listener.close()


@pytest.fixture
def trickler() -> Iterator[TricklingWitness]:
    hostile = TricklingWitness()
    yield hostile
    hostile.stop()


def test_a_witness_that_trickles_its_answer_does_not_keep_the_others_from_cosigning(
    setup: Setup,  # noqa: F811
    running: list[HttpWitness],  # noqa: F811
    trickler: TricklingWitness,
) -> None:
    """One hostile witness answering a byte at a time held the log's one submitting thread for
    ever (each read came within the 10 s timeout), and no other witness was asked again: now a
    whole exchange with a witness has 10 s, and the honest witness cosigns."""
    honest = HttpWitness([setup.log_pub], setup.key, setup.state)
    running.append(honest)
    server = setup.serve("--witness-url", trickler.url, "--witness-url", honest.url)
    try:
        seated_table(server, "t1", PLAYERS)
        play_round(server, "t1")
        head = settled_head(server, setup.log_pub, 1)
        wait_until(lambda: trickler.connections >= 1, "the log to reach the trickling witness", 30)
        started = time.monotonic()
        wait_until(
            lambda: cosigned_at(checkpoint(server), setup.witness_pub),
            "the honest witness's cosignature despite the trickling one",
            60,
        )
        assert time.monotonic() - started < 60
        assert head.size >= 1
        wait_until(
            lambda: any(
                "witness_unreachable" in line and trickler.url in line for line in server.lines
            ),
            "the trickling witness's submission cut off and logged",
            30,
        )
    finally:
        server.stop()


def stderr_lines(process: subprocess.Popen[str]) -> tuple[list[str], threading.Thread]:
    """The lines ``process`` writes on stderr, as they come (a thread reads them), and that
    thread."""
    lines: list[str] = []

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return lines, reader


def _raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(data)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


def test_a_flood_of_malformed_requests_writes_no_traceback_and_no_line_each(
    setup: Setup,  # noqa: F811
    running: list[HttpWitness],  # noqa: F811
) -> None:
    """What is not HTTP (no Host header, a bad request line) made aiohttp print a traceback on
    the witness's stderr, among its JSON log lines, and every refused request was a log line
    of its own: a client sending garbage by the thousand filled the witness's log. Now such
    failures and refusals are counted and logged now and then, as the tiles and metrics
    endpoints do (issue 22)."""
    witness = HttpWitness([setup.log_pub], setup.key, setup.state)
    running.append(witness)
    before = len(witness.lines)
    for data in (
        b"NOT HTTP AT ALL\r\n\r\n",
        b"POST /add-checkpoint HTTP/1.1\r\nContent-Length: 1\r\n\r\nx",  # no Host
        b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    ):
        answer = _raw(witness.port, data)
        assert answer.startswith(b"HTTP/1.") and b" 4" in answer[:13], answer[:100]
    statuses = set()
    for number in range(400):
        body = b"old 0\n\nnot a checkpoint %d\n" % number if number % 2 else b"garbage"
        statuses.add(witness.post(body)[0])
    assert statuses == {400}
    time.sleep(1)  # what the witness wrote has been read
    written = witness.lines[before:]
    assert not any("Traceback" in line for line in written), "".join(written[:20])
    assert len(written) < 20, "".join(written[:20])
    assert any('"witness_refused"' in line and '"count"' in line for line in written), written


def test_a_polling_witness_is_refused_a_state_directory_an_http_witness_uses(
    setup: Setup,  # noqa: F811
    running: list[HttpWitness],  # noqa: F811
) -> None:
    """The HTTP witness locked only each log's directory under ``--state DIR/logs/``, not
    ``DIR`` itself: a polling witness (``--log``) of the same log, with the same key, ran on
    the same ``--state`` beside it, each with a record of its own, so the one witness key
    could cosign two forks of one size. Now one witness at a time uses a state directory,
    whichever way it witnesses (exit status 2)."""
    listening = HttpWitness([setup.log_pub], setup.key, setup.state)
    running.append(listening)
    with socket.socket() as probe:  # nothing listens there: the log is not reached anyway
        probe.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{probe.getsockname()[1]}"
    done = subprocess.run(
        [str(SCRIPT), "witness", "--log", dead, "--log-public-key", setup.log_pub]  # noqa: RUF005
        + ["--key", str(setup.key), "--state", str(setup.state), "--once"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "another witness is using the state directory" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    # And the other way round: a second HTTP witness on the same directory is refused too.
    second = subprocess.run(
        [str(SCRIPT), "witness", "--listen", "127.0.0.1:0", "--log-public-key", setup.log_pub]  # noqa: RUF005
        + ["--key", str(setup.key), "--state", str(setup.state)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert second.returncode == 2 and "another witness" in second.stderr, second.stderr


def test_a_witness_url_that_cannot_be_sent_is_refused_at_the_start(
    setup: Setup,  # noqa: F811
) -> None:
    """A ``--witness-url`` with a character an HTTP request line cannot carry (non-ASCII, a
    space) was accepted; every submission to it then failed with an error the submitter did
    not expect (``UnicodeEncodeError``), which ended each round of submissions before the
    witnesses listed after it were asked, and was logged every second for ever. Now it is bad
    input: exit status 2 and one line."""
    for url in (
        "http://127.0.0.1:1/t\u00e9moin",
        "http://127.0.0.1:1/a b",
        "http://t\u00e9moin.example/",
    ):
        done = subprocess.run(
            [str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--data", str(setup.tmp / "d")]  # noqa: RUF005
            + ["--log-key", str(setup.tmp / "log" / "log.key")]
            + ["--witness-key", setup.witness_pub, "--witness-url", url],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "THIRTEEN_STORE": "sqlite"},
        )
        assert done.returncode == 2, (url, done.stderr[-500:])
        assert "http(s)://HOST" in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize(
    "accepted", ["gzip;q=0", "identity, gzip;q=0", "gzip; q=0.000", "x-nogzip"]
)
def test_a_bundle_is_not_gzipped_for_a_client_that_refuses_gzip(
    served: tuple[ServeProcess, str],  # noqa: F811
    accepted: str,
) -> None:
    """``Accept-Encoding`` was read as "the text holds gzip": a client saying ``gzip;q=0`` (not
    acceptable, RFC 9110 12.5.3) got a gzip body it had refused. Now only a coding it accepts
    (``gzip``, ``x-gzip`` or ``*`` with a weight above 0) gets one."""
    process, base = served
    seated_table(process, "t1", {"ann": 5000, "bo": 5000})
    mirror = TilesMirror(base, log_key(process))
    size = caught_up(process, mirror).size
    status, headers, body = fetch(
        f"{base}/tile/entries/000.p/{size}", **{"Accept-Encoding": accepted}
    )
    assert status == 200 and "Content-Encoding" not in headers, (accepted, headers)
    assert decode_bundle(body) == mirror.entries[:size]
    for welcome in ("gzip", "deflate, gzip;q=0.5", "*", "x-gzip"):
        _, headers, body = fetch(
            f"{base}/tile/entries/000.p/{size}", **{"Accept-Encoding": welcome}
        )
        assert headers.get("Content-Encoding") == "gzip", (welcome, headers)
        assert decode_bundle(gzip.decompress(body)) == mirror.entries[:size]


def test_witness_urls_given_to_a_serve_whose_worker_signs_are_said_to_be_unused(
    setup: Setup,  # noqa: F811
) -> None:
    """``serve --background worker --witness-url URL`` started without a word, and nothing was
    ever submitted: with a worker, the worker signs, so only a ``thirteen worker
    --witness-url`` submits. An operator believed the log witnessed. Now serve says, in one
    log line at its start, that its witness URLs are not used and where they belong."""
    environ = {**os.environ, "THIRTEEN_STORE": "sqlite"}
    process = subprocess.Popen(
        [str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--data", str(setup.tmp / "d")]  # noqa: RUF005
        + ["--log-key", str(setup.tmp / "log" / "log.key"), "--background", "worker"]
        + ["--witness-key", setup.witness_pub, "--witness-url", "http://127.0.0.1:1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
    )
    lines, reader = stderr_lines(process)
    try:
        wait_until(lambda: any("serving gRPC on" in line for line in lines), "serve to start", 60)
    finally:
        process.terminate()
        process.wait(timeout=30)
        reader.join(timeout=10)
    said = [line for line in lines if "witness_urls_unused" in line]
    assert said and "thirteen worker" in said[0], "".join(lines[-10:])


def test_connections_held_open_by_the_hundred_leave_the_witness_answering_and_quiet(
    setup: Setup,  # noqa: F811
) -> None:
    """The witness took every connection it was offered: 150 connections holding half a
    request open used up the descriptors a witness with a limit of 160 has (1,024 is a common
    default), so the log's requests were never accepted, and asyncio wrote "socket.accept()
    out of system resource" with a traceback hundreds of thousands of times in seconds. Now
    past its limit the oldest connection is closed to make room (``witness_connections_
    dropped``, a line now and then): a new request is always answered."""
    command = (
        f"ulimit -n 160 && exec {SCRIPT} witness --listen 127.0.0.1:0 "
        f"--log-public-key '{setup.log_pub}' --key {setup.key} --state {setup.state}"
    )
    process = subprocess.Popen(
        ["bash", "-c", command], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    lines, _ = stderr_lines(process)
    held: list[socket.socket] = []
    try:
        said = wait_until(
            lambda: next((x for x in lines if "serving tlog-witness on http://" in x), None),
            "the witness to listen",
            60,
        )
        port = int(said.split("http://127.0.0.1:")[1].split()[0])
        for _ in range(300):
            connection = socket.create_connection(("127.0.0.1", port), timeout=10)
            connection.sendall(b"POST /add-checkpoint HTTP/1.1\r\nHost: x\r\n")
            held.append(connection)
        time.sleep(1)
        before = len(lines)
        started = time.monotonic()
        status, _, _ = request(port, "POST", "/add-checkpoint", b"old 0\n\nnot a checkpoint\n")
        assert status == 400 and time.monotonic() - started < 10
        time.sleep(2)
        assert len(lines) - before < 20, "".join(lines[-20:])
        assert not any("Traceback" in line or "out of system resource" in line for line in lines)
        assert any("witness_connections_dropped" in line for line in lines), lines[-5:]
    finally:
        for connection in held:
            connection.close()
        process.terminate()
        process.wait(timeout=30)


def test_half_requests_held_open_to_the_tiles_leave_the_store_files_to_open(
    tmp_path: Path,
) -> None:
    """The tiles endpoint kept up to 1,024 connections waiting for their request head,
    whatever the process's limit of open files: under a limit of 400, 460 half requests held
    open used up the files of the whole ``serve``, so the store could not open its own (the
    tiles' ``/checkpoint`` answered "the store did not answer") and asyncio wrote thousands of
    tracebacks ("Too many open files"). Now the endpoint keeps at most a quarter of the
    process's files waiting (the oldest is closed to make room), and the loop's errors are a
    line now and then."""
    data = tmp_path / "data"
    command = (
        f"ulimit -n 400 && exec {SCRIPT} serve --address 127.0.0.1:0 --data {data} "
        "--tiles 127.0.0.1:0 --metrics 127.0.0.1:0"
    )
    process = subprocess.Popen(
        ["bash", "-c", command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "THIRTEEN_STORE": "sqlite"},
    )
    lines, _ = stderr_lines(process)
    held: list[socket.socket] = []
    try:

        def address(banner: str) -> tuple[str, int] | None:
            found = next((x for x in lines if banner in x), None)
            if found is None:
                return None
            host, port = found.split(banner)[1].split("/")[0].strip().rsplit(":", 1)
            return host, int(port)

        tiles = wait_until(lambda: address("serving the log's tiles on http://"), "tiles", 60)
        metrics = wait_until(lambda: address("serving metrics on http://"), "metrics", 60)
        for _ in range(460):
            try:
                connection = socket.create_connection(tiles, timeout=5)
            except OSError:
                break  # refused or not accepted in time: the endpoint is full, as it should be
            connection.sendall(b"GET /checkpoint HTTP/1.1\r\n")
            held.append(connection)
        time.sleep(1)
        status, _, body = request(tiles[1], "GET", "/checkpoint")
        assert b"the store did not answer" not in body, (status, body)
        assert request(metrics[1], "GET", "/metrics")[0] == 200
        time.sleep(1)
        assert not any("Too many open files" in x or "Traceback" in x for x in lines), lines[-5:]
    finally:
        for connection in held:
            connection.close()
        process.terminate()
        process.wait(timeout=30)
