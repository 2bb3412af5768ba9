"""The dispute console (``thirteen console``) attacked from outside: raw HTTP with paths no
browser would send, requests left unfinished, a service that goes away and comes back on its
port, rounds in progress seen through consoles with a reader's and an auditor's certificate,
and ids at the limits. The real console process, a real server, real sockets."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TypedDict
from urllib.parse import urlsplit

import grpc
import pytest

from service._generated.thirteen.v1 import results_pb2, table_pb2
from service.security.policy import Policy
from service.web.markup import link
from tests.e2e.helpers import (
    arrange_well,
    credit,
    deal,
    hands_of,
    open_table,
    reveal,
    seated_table,
    sit,
    stand,
    wait_until,
)
from tests.e2e.test_console import HEADERS
from tests.support.certs import Authority
from tests.support.clock import ManualClock
from tests.support.console import SCRIPT, Console
from tests.support.seed_key import ensure_seed_key
from tests.support.server import ServerThread

SQLITE = {"THIRTEEN_STORE": "sqlite"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerThread, Console]]:
    server = ServerThread(tmp_path_factory.mktemp("attack-console") / "data", SQLITE, ManualClock())
    seated_table(server, "t", {"ann": 5000, "bo": 5000})
    dealt = deal(server, "t")
    arrange_well(server, dealt)
    reveal(server, dealt.round_id)
    console = Console(server.address)
    yield server, console
    console.stop()
    server.stop()


def recall_of(server: ServerThread, player: str) -> list[results_pb2.PlayerRound]:
    reply = server.results.ListPlayerRounds(results_pb2.ListPlayerRoundsRequest(player_id=player))
    return list(reply.rounds)


def raw(console: Console, request: bytes, timeout: float = 30) -> bytes:
    """What the console answers to ``request`` sent as is on a socket of its own."""
    where = urlsplit(console.base)
    with socket.create_connection((where.hostname, where.port), timeout=timeout) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def hrefs(answer: bytes) -> list[str]:
    return [h.decode() for h in re.findall(rb'href="([^"]*)"', answer)]


# --- links never leave the console --------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [b"/\\evil.example/x", b"/players/\\\\evil.example", b"/\\/evil.example", b"/%5C%5Cevil"],
)
def test_no_path_a_client_sends_makes_a_link_that_leaves_the_console(
    served: tuple[ServerThread, Console], path: bytes
) -> None:
    """The language switch links to the page itself. A browser reads a backslash in a link as
    a slash (WHATWG URL), so ``/\\evil.example`` would be ``//evil.example``: another site."""
    _, console = served
    answer = raw(
        console, b"GET " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    assert answer.startswith(b"HTTP/1.1 404")
    found = hrefs(answer)
    assert found
    for href in found:
        assert href.startswith("/") and not href.startswith("//"), href
        assert "\\" not in href, href


# --- requests aiohttp answers itself ------------------------------------------------------


def _head(answer: bytes) -> tuple[str, dict[str, str]]:
    status, *lines = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    return status, dict(line.split(": ", 1) for line in lines)


@pytest.mark.parametrize(
    ("request_", "reason"),
    [
        (b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", b"Missing 'Host' header"),
        (
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            b"Duplicate 'Host' header",
        ),
        (
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: " + b"a" * 9000 + b"\r\n\r\n",
            b"Got more than 8190 bytes",
        ),
        (b"G@T / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", b"Invalid method"),
    ],
)
def test_aiohttp_s_own_400s_carry_the_security_headers_and_name_no_version(
    served: tuple[ServerThread, Console], request_: bytes, reason: bytes
) -> None:
    """A request aiohttp cannot parse never reaches the console's routes, middleware or
    signals: it answers 400 itself. Those answers carry the console's headers too, and a
    ``Server`` that names neither Python's nor aiohttp's version; and the console's stderr
    gets structured lines for them, not aiohttp's tracebacks."""
    _, console = served

    def unparsed() -> list[dict[str, object]]:
        return [
            line
            for line in console.lines("console_request")
            if (line["method"], line["status"]) == ("UNKNOWN", 400)
        ]

    before = len(unparsed())
    answer = raw(console, request_)
    status, headers = _head(answer)
    assert status.split()[1] == "400" and reason in answer, answer[:600]
    for name, value in HEADERS.items():
        assert headers.get(name) == value, (name, headers)
    assert "aiohttp" not in answer.decode("latin-1") and "Python/" not in headers["Server"]
    wait_until(lambda: len(unparsed()) > before, "the access log line of the 400")
    assert "Traceback" not in console.log
    assert all(line.startswith("{") for line in console.errors), console.log  # JSON lines only


def test_hostile_paths_and_headers_reach_the_access_log_clipped_and_escaped(
    served: tuple[ServerThread, Console],
) -> None:
    _, console = served
    answer = raw(
        console,
        b"GET /players/x%1B%5B2J%E2%80%AE HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"X-Forwarded-User: \xe2\x80\xaemallory\\\r\nConnection: close\r\n\r\n",
    )
    assert answer.startswith(b"HTTP/1.1 400")  # an id with a control character in it
    (line,) = wait_until(
        lambda: [
            line
            for line in console.lines("console_request")
            if "mallory" in line.get("forwarded_user", "")
        ],
        "the access log line",
    )
    assert line["path"] == "/players/x\\x1b[2J\\u202e"  # no terminal control, no bidi
    assert line["forwarded_user"] == "\\u202emallory\\\\"
    assert "\x1b" not in console.log and "\u202e" not in console.log


# --- requests left unfinished -------------------------------------------------------------


def test_a_request_left_unfinished_is_closed_and_the_console_keeps_serving(
    served: tuple[ServerThread, Console],
) -> None:
    """Slowloris: connections that never finish their request are closed by the console
    (aiohttp's default would hold them an hour, long enough to use up its file descriptors and
    lock staff out), and it answers others meanwhile."""
    _, console = served
    where = urlsplit(console.base)
    hanging = []
    for _ in range(50):
        sock = socket.create_connection((where.hostname, where.port), timeout=60)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        hanging.append(sock)
    try:
        assert console.get("/players/ann").status == 200
        for sock in hanging:
            assert sock.recv(1) == b""  # closed by the console, not by our 60 s timeout
    finally:
        for sock in hanging:
            sock.close()


# --- the service goes away and comes back ----------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Serve:
    """``thirteen serve`` on a fixed address, so that it can come back where it was."""

    def __init__(self, address: str, data: Path) -> None:
        ensure_seed_key(data / "seed.key")
        self.process = subprocess.Popen(
            [str(SCRIPT), "serve", "--address", address, "--data", str(data)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **SQLITE},
        )
        assert self.process.stderr is not None
        for line in self.process.stderr:
            if "serving gRPC on" in line:
                return
        raise AssertionError(f"thirteen serve exited with {self.process.wait()}")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def test_the_first_page_after_the_service_is_back_answers(tmp_path: Path) -> None:
    """While the service is down every page is 503; the first page asked once it is back
    answers, rather than 503 until gRPC's reconnect backoff (grown to minutes by then) lets the
    console's channel try again."""
    address = f"127.0.0.1:{_free_port()}"
    service = Serve(address, tmp_path / "data")
    console = Console(address)
    try:
        assert console.get("/players/nobody").status == 404  # the service answered
        service.stop()
        for _ in range(40):  # ~12 s of failed attempts: the backoff grows past 10 s
            assert console.get("/players/nobody").status == 503
            time.sleep(0.3)
        service = Serve(address, tmp_path / "data")
        page = console.get("/players/nobody")
        assert page.status == 404, page.text
    finally:
        service.stop()
        console.stop()


# --- rounds in progress, through the roles a console may hold ---------------------------------

SPIFFE = "spiffe://thirteen.dev/"
ROLES = ("admin", "auditor", "reader")


class TlsWorld(TypedDict):
    server: ServerThread
    consoles: dict[str, Console]  # by role: auditor, reader
    over: table_pb2.DealResponse  # a round revealed
    playing: table_pb2.DealResponse  # a round in progress


@pytest.fixture(scope="module")
def tls_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsWorld]:
    directory = tmp_path_factory.mktemp("attack-console-tls")
    ca = Authority(directory / "certs")
    issued = {role: ca.issue(role, uri=SPIFFE + role, cn=role) for role in ROLES}
    key, cert = ca.issue("server", server=True).pair()
    trust = ca.ca.read_bytes()
    server = ServerThread(
        directory / "data",
        SQLITE,
        ManualClock(),
        credentials=grpc.ssl_server_credentials(
            [(key, cert)], root_certificates=trust, require_client_auth=True
        ),
        policy=Policy.parse(
            "[identities]\n" + "".join(f'"{SPIFFE}{r}" = ["{r}"]\n' for r in ROLES)
        ),
        channel_credentials=grpc.ssl_channel_credentials(trust, *issued["admin"].pair()),
    )
    seated_table(server, "t", {"ann": 5000, "bo": 5000, "cy": 5000})
    over = deal(server, "t")
    arrange_well(server, over)
    reveal(server, over.round_id)
    playing = deal(server, "t")
    arrange_well(server, playing, ["ann"])
    stand(server, "t", "cy")  # an escape: cy is out, the round goes on
    consoles = {
        role: Console(
            server.address,
            "--ca",
            str(ca.ca),
            "--cert",
            str(issued[role].cert),
            "--key",
            str(issued[role].key),
        )
        for role in ("auditor", "reader")
    }
    yield {"server": server, "consoles": consoles, "over": over, "playing": playing}
    for console in consoles.values():
        console.stop()
    server.stop()


def _cards_of(dealt: object) -> list[str]:
    from domain.rules.cards import parse_cards

    return [c.symbol() for hand in hands_of(dealt).values() for c in parse_cards(hand)]


@pytest.mark.parametrize("role", ["auditor", "reader"])
def test_r10_4_no_console_shows_a_hand_of_a_round_in_progress(
    tls_world: TlsWorld, role: str
) -> None:
    """The round page is 403 (auditor: a round in progress is refused alike with one that does
    not exist, AIP-211; reader: no round page at all); neither the round page, its export, nor
    any player's recall shows a card of it, not even the escapee's (R11: out of the round,
    which is still played)."""
    status = 403
    console = tls_world["consoles"][role]
    playing = tls_world["playing"]
    for path in (
        link("/rounds", playing.round_id),
        link("/rounds", playing.round_id, "export.json"),
    ):
        page = console.get(path)
        assert page.status == status, page.text
        assert 'class="card' not in page.text
    for player in ("ann", "bo", "cy"):
        page = console.get(link("/players", player))
        assert page.status == 200, page.text
        assert f'href="{link("/rounds", playing.round_id)}"' not in page.text
        recalled = re.findall(r'<tr class="recall">.*?</tr>', page.text, re.S)
        assert len(recalled) == 1 and tls_world["over"].round_id in recalled[0]
    for symbol in _cards_of(playing):
        for player in ("ann", "bo", "cy"):
            row = re.findall(
                r'<tr class="recall">.*?</tr>', console.get(link("/players", player)).text, re.S
            )
            assert all(f'title="{symbol}"' not in r or tls_world["over"].round_id in r for r in row)


# --- ids at the limits --------------------------------------------------------------------------

WIDEST = "\U0001f600" * 127 + "/"  # 128 characters, a slash among them


def test_a_128_character_id_outside_the_bmp_pages_through_the_console(tmp_path: Path) -> None:
    """The longest id whose every character is percent-encoded to 12 bytes and escaped to 12
    in a page token: the next-page links stay under the console's and aiohttp's limits."""
    server = ServerThread(tmp_path / "data", SQLITE, ManualClock())
    console = Console(server.address)
    try:
        for k, player in enumerate((WIDEST, "bo")):
            credit(server, player, 10**6, f"start-{k}")
        open_table(server, "wide")
        for player in (WIDEST, "bo"):
            sit(server, "wide", player)
        played = []
        for _ in range(12):
            dealt = deal(server, "wide")
            arrange_well(server, dealt)
            reveal(server, dealt.round_id)
            played.append(dealt.round_id)
        seen, path = [], link("/players", WIDEST)
        while path:
            page = console.get(path)
            assert page.status == 200, page.text[:500]
            seen += re.findall(
                r'<tr class="recall"><td>[^<]*</td><td><a href="/rounds/([^"]+)"', page.text
            )
            following = re.search(r'<a href="([^"]+)" class="next">', page.text)
            path = following.group(1).replace("&amp;", "&") if following else ""
        assert seen == played[::-1]
    finally:
        console.stop()
        server.stop()


# --- the download's header ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("?id=x%0D%0ASet-Cookie:%20a=b&part=export.json", 400),
        ("?id=x%22%3B%20filename%3Devil.sh&part=export.json", 404),
        ("?id=..%2F..%2Fetc%2Fpasswd&part=export.json", 404),
    ],
)
def test_a_hostile_id_never_reaches_the_download_s_headers(
    served: tuple[ServerThread, Console], query: str, status: int
) -> None:
    _, console = served
    page = console.get("/rounds/" + query)
    assert page.status == status, page.text
    assert page.headers["Content-Disposition"] is None
    assert page.headers["Set-Cookie"] is None
    assert page.headers["Content-Type"].startswith("text/html")


def test_the_download_is_named_after_the_round_alone(served: tuple[ServerThread, Console]) -> None:
    server, console = served
    (round_id,) = [r.round_id for r in recall_of(server, "ann")]
    for path in (
        link("/rounds", round_id, "export.json"),
        f"/rounds/?id={round_id}&part=export.json",
    ):
        page = console.get(path)
        assert page.status == 200
        assert (
            page.headers["Content-Disposition"] == f'attachment; filename="round-{round_id}.json"'
        )
        assert page.headers["Cache-Control"] == "no-store"  # it holds every hand
