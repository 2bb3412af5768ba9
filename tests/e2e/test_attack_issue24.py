"""Issue 24 attacked from outside, with real processes: what landed (``thirteen witness
--listen``, ``serve --witness-url``, ``serve --tiles``) against hostile witnesses and clients.
Each test failed on the code as it was found."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tests.e2e.helpers import seated_table, wait_until
from tests.e2e.test_transparency import PLAYERS, checkpoint, play_round
from tests.e2e.test_witness import Setup, cosigned_at, settled_head
from tests.e2e.test_witness_http import (
    HttpWitness,
    running,  # noqa: F401 (a fixture)
    setup,  # noqa: F401 (a fixture)
)


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
